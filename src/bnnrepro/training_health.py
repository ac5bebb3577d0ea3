"""Whether a run trained, beyond the non-finite losses that stop a job (`methods.protocol.DivergedError`).

Three checks on a finished run, recorded in its metrics.json under `health` and shown in the report:
- an error where divergence is certain: the last epoch's training loss is larger in magnitude than the loss at
  initialisation (the first training step's) by `DIVERGED_GROWTH` or more (a finite network at lr 1e6 ends at 1e22);
- an error where a reported metric is not a number (NaN or infinite: a test row holding a missing value gives a NaN
  test RMSE while training goes well), so that such a run is never "ok";
- a warning where the run may simply be short or hard: a classifier whose last test accuracy is within
  `CHANCE_MARGIN` of chance (one over the number of classes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

DIVERGED_GROWTH = 100.0
"""Two orders of magnitude: the factor by which the last epoch's mean loss must exceed the initial loss (in
magnitude, and at least 1 so that losses near 0 do not count) for the run to have diverged."""

CHANCE_MARGIN = 0.02
HEALTHY = {"status": "ok", "flags": []}


def training_health(
    initial_loss: float,
    last_loss: float,
    accuracy: float | None,
    num_classes: int,
    reported: Mapping[str, float] | None = None,
) -> dict:
    """{'status': 'ok' | 'warning' | 'error', 'flags': [what was found, in words]}; `accuracy` is the last test
    accuracy of a classifier (None for regression); `reported` the metrics the run reports."""
    errors, warnings = [], []
    if not math.isfinite(last_loss) or abs(last_loss) >= DIVERGED_GROWTH * max(abs(initial_loss), 1.0):
        errors.append(f"diverged: the training loss went from {initial_loss:.3g} at initialisation to {last_loss:.3g}")
    numbers = {name: value for name, value in (reported or {}).items() if isinstance(value, int | float)}
    if not_numbers := [name for name, value in numbers.items() if not math.isfinite(value)]:
        errors.append(
            f"not a number: {', '.join(not_numbers)} (a missing or infinite value in the data? the prepare step "
            "refuses them in tables; look at the rows of the split)"
        )
    if accuracy is not None and num_classes > 1 and accuracy <= 1 / num_classes + CHANCE_MARGIN:
        warnings.append(f"at chance: test accuracy {accuracy:.3f} with {num_classes} classes")
    status = "error" if errors else "warning" if warnings else "ok"
    return {"status": status, "flags": errors + warnings}


def health_text(health: dict) -> str:
    """'ok', or the status and its flags in one line (the tidy metrics' `health` column)."""
    return health["status"] if not health["flags"] else f"{health['status']}: {'; '.join(health['flags'])}"

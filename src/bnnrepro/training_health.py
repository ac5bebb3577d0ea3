"""Whether a run trained, beyond the non-finite losses that stop a job (`methods.protocol.DivergedError`).

Two checks on a finished run, recorded in its metrics.json under `health` and shown in the report:
- an error where divergence is certain: the last epoch's training loss is larger in magnitude than the loss at
  initialisation (the first training step's) by `DIVERGED_GROWTH` or more (a finite network at lr 1e6 ends at 1e22);
- a warning where the run may simply be short or hard: a classifier whose last test accuracy is within
  `CHANCE_MARGIN` of chance (one over the number of classes).
"""

from __future__ import annotations

import math

DIVERGED_GROWTH = 100.0
"""Two orders of magnitude: the factor by which the last epoch's mean loss must exceed the initial loss (in
magnitude, and at least 1 so that losses near 0 do not count) for the run to have diverged."""

CHANCE_MARGIN = 0.02
HEALTHY = {"status": "ok", "flags": []}


def training_health(initial_loss: float, last_loss: float, accuracy: float | None, num_classes: int) -> dict:
    """{'status': 'ok' | 'warning' | 'error', 'flags': [what was found, in words]}; `accuracy` is the last test
    accuracy of a classifier (None for regression)."""
    errors, warnings = [], []
    if not math.isfinite(last_loss) or abs(last_loss) >= DIVERGED_GROWTH * max(abs(initial_loss), 1.0):
        errors.append(f"diverged: the training loss went from {initial_loss:.3g} at initialisation to {last_loss:.3g}")
    if accuracy is not None and num_classes > 1 and accuracy <= 1 / num_classes + CHANCE_MARGIN:
        warnings.append(f"at chance: test accuracy {accuracy:.3f} with {num_classes} classes")
    status = "error" if errors else "warning" if warnings else "ok"
    return {"status": status, "flags": errors + warnings}


def health_text(health: dict) -> str:
    """'ok', or the status and its flags in one line (the tidy metrics' `health` column)."""
    return health["status"] if not health["flags"] else f"{health['status']}: {'; '.join(health['flags'])}"

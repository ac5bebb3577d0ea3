"""What the report says of a study's runs: those that carry no data, and those whose training was flagged
(`bnnrepro.training_health`). An artifact is reproduced only when every run of its study carries data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bnnrepro.aggregate import RUN_FACTS
from bnnrepro.pipeline.studies import Study

LISTED_RUNS = 3  # runs named in a line; the rest are counted


def study_run_checks(study: Study, scale: str, metrics_file: Path) -> dict[str, str]:
    """{'missing': ..., 'flags': ...}, each a line for the report, or absent where there is nothing to say.

    A run carries data when the study's tidy metrics hold at least one finite value of it besides its training time
    and network size (`RUN_FACTS`).
    """
    table = pd.read_csv(metrics_file) if metrics_file.exists() else pd.DataFrame(columns=["run", "metric", "value"])
    finite = np.isfinite(pd.to_numeric(table["value"], errors="coerce").astype(float))
    measured = set(table.loc[finite & ~table["metric"].isin(RUN_FACTS), "run"])
    runs = [run.id for run in study.runs(scale)]
    checks = {}
    missing = [run for run in runs if run not in measured]
    if missing:
        checks["missing"] = f"{_count(missing, len(runs))} carry no data ({metrics_file}): {_listed(missing)}"
    health = table.drop_duplicates("run").set_index("run")["health"] if "health" in table else pd.Series()
    lines = []
    for status in ("error", "warning"):
        flagged = [f"{run} ({text.split(': ', 1)[1]})" for run, text in health.items() if text.startswith(status)]
        if flagged:
            lines.append(f"{status}: {_count(flagged, len(runs))}: {_listed(flagged)}.")
    if lines:
        checks["flags"] = " ".join(lines)
    return checks


def _count(runs: list[str], total: int) -> str:
    return f"{len(runs)} of {total} runs"


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED_RUNS
    return "; ".join(items[:LISTED_RUNS]) + (f"; and {more} more" if more > 0 else "")

"""What the report says of a study's runs: those that carry no data, and those whose training was flagged
(`bnnrepro.training_health`). An artifact is reproduced only when every run of its study carries data."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bnnrepro.studies import Study

LISTED_RUNS = 3  # runs named in a line; the rest are counted


def study_run_checks(study: Study, scale: str, metrics_file: Path) -> dict[str, str]:
    """{'missing': ..., 'flags': ...}, each a line for the report, or absent where there is nothing to say.

    A run carries data when the study's tidy metrics hold at least one finite value of it besides its training time.
    """
    table = pd.read_csv(metrics_file) if metrics_file.exists() else pd.DataFrame(columns=["run", "metric", "value"])
    measured = table[(table["metric"] != "train_seconds") & table["value"].map(_is_finite)]
    runs = [run.id for run in study.runs(scale)]
    checks = {}
    missing = [run for run in runs if run not in set(measured["run"])]
    if missing:
        checks["missing"] = f"{_count(missing, len(runs))} carry no data ({metrics_file}): {_listed(missing)}"
    if "health" in table:
        health = table.drop_duplicates("run").set_index("run")["health"]
        for status in ("error", "warning"):
            flagged = [f"{run} ({text.split(': ', 1)[1]})" for run, text in health.items() if text.startswith(status)]
            if flagged:
                checks.setdefault("flags", "")
                checks["flags"] += f"{status}: {_count(flagged, len(runs))}: {_listed(flagged)}. "
    if "flags" in checks:
        checks["flags"] = checks["flags"].strip()
    return checks


def _is_finite(value: object) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _count(runs: list[str], total: int) -> str:
    return f"{len(runs)} of {total} runs"


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED_RUNS
    return "; ".join(items[:LISTED_RUNS]) + (f"; and {more} more" if more > 0 else "")

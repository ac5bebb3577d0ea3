"""Training health: divergence beyond NaN is an error, a classifier at chance a warning; the report names the runs
that carry no data (and does not call their artifacts reproduced) and the flagged ones."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from bnnrepro.pipeline.studies import load_study
from bnnrepro.report import files as report_files
from bnnrepro.report.run_checks import study_run_checks
from bnnrepro.report.typst_report import render_artifact
from bnnrepro.training_health import health_text, training_health


@pytest.mark.parametrize(
    ("initial", "last", "accuracy", "classes", "status"),
    [
        (0.69, 0.05, 0.99, 2, "ok"),
        (0.69, 2.6e22, 0.99, 2, "error"),  # grew by 22 orders of magnitude
        (0.69, math.nan, None, 2, "error"),
        (0.69, 60.0, 0.9, 2, "ok"),  # under 100 x max(|0.69|, 1)
        (0.69, 100.0, 0.9, 2, "error"),
        (-3.0, -400.0, None, 0, "error"),  # in magnitude: a regression NLL running off to -inf diverged too
        (-3.0, -5.0, None, 0, "ok"),
        (2.3, 2.3, 0.11, 10, "warning"),  # at chance (0.1 + 0.02)
        (2.3, 1.0, 0.13, 10, "ok"),
    ],
)
def test_training_health(initial: float, last: float, accuracy: float | None, classes: int, status: str) -> None:
    health = training_health(initial, last, accuracy, classes)
    assert health["status"] == status
    assert bool(health["flags"]) == (status != "ok")


def test_a_reported_metric_that_is_not_a_number_is_an_error() -> None:
    """A test row with a missing value gives a NaN test RMSE while the training loss is fine: never "ok"."""
    fine = {"test_rmse": 0.4, "test_nll": 1.2, "selected_epoch": 40}
    assert training_health(0.9, 0.3, None, 0, reported=fine)["status"] == "ok"  # the control
    health = training_health(0.9, 0.3, None, 0, reported=fine | {"test_rmse": math.nan, "last_test_nll": math.inf})
    assert health["status"] == "error"
    assert health["flags"] == [health["flags"][0]] and "test_rmse, last_test_nll" in health["flags"][0]


def test_health_text_is_one_line_with_the_flags() -> None:
    assert health_text(training_health(0.7, 0.1, 0.9, 2)) == "ok"
    assert health_text(training_health(0.7, 1e9, 0.5, 2)).startswith("error: diverged: the training loss went from")


def tidy(runs: list[str], values: dict[str, float], health: dict[str, str]) -> pd.DataFrame:
    rows = []
    for run in runs:
        rows.append(
            {"run": run, "health": health.get(run, "ok"), "metric": "test_accuracy", "value": values.get(run, 0.9)}
        )
        rows.append({"run": run, "health": health.get(run, "ok"), "metric": "train_seconds", "value": 1.0})
    return pd.DataFrame(rows)


def test_runs_without_data_make_an_artifact_not_reproduced_and_flags_are_listed(tmp_path: Path) -> None:
    study = load_study("udn_spirals")
    runs = [run.id for run in study.runs("smoke")]
    table = tidy(runs, {runs[0]: math.nan}, {runs[1]: "error: diverged: the training loss went from 0.7 to 1e+13"})
    metrics = tmp_path / "metrics.csv"
    table.to_csv(metrics, index=False)
    checks = study_run_checks(study, "smoke", metrics)
    assert checks["missing"] == f"1 of {len(runs)} runs carry no data ({metrics}): {runs[0]}"
    assert (
        checks["flags"]
        == f"error: 1 of {len(runs)} runs: {runs[1]} (diverged: the training loss went from 0.7 to 1e+13)."
    )

    table[table["run"] != runs[2]].to_csv(metrics, index=False)  # a run absent from the table carries no data either
    assert runs[2] in study_run_checks(study, "smoke", metrics)["missing"]
    table.assign(health="ok", value=0.5).to_csv(metrics, index=False)
    assert study_run_checks(study, "smoke", metrics) == {}


def test_the_report_shows_what_is_missing_and_the_flags(tmp_path: Path) -> None:
    artifact = {
        "id": "udn/fig3a", "paper": "udn", "title": "t", "status": "not yet reproduced",
        "missing": "1 of 10 runs carry no data (results/smoke/udn_spirals/metrics.csv): udn/spirals/...",
        "flags": "warning: 1 of 10 runs: finite_3/... (at chance: test accuracy 0.5 with 2 classes).",
        "files": report_files.artifact_files("figure", "udn_fig3a"),
    }  # fmt: skip
    text = render_artifact(artifact, tmp_path)
    assert '("Missing:", "1 of 10 runs carry no data' in text and '("Run checks:", "warning: 1 of 10 runs' in text

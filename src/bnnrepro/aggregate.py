"""One study's runs as a tidy table: `python -m bnnrepro.aggregate STUDY SCALE OUT.csv`.

Columns: study, run, method, dataset, hparams, seed, standin, health (`bnnrepro.training_health`: ok, or a
warning or an error with what was found), one column per hyperparameter (by its short name, e.g. `omega`, `lr`),
metric, value. One row per run and metric.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from bnnrepro import layout
from bnnrepro.files import RUN_RESULT, UnreadableFileError, read_json, write_atomic
from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.pipeline.studies import Run, load_study
from bnnrepro.run_identity import result_problem
from bnnrepro.training_health import HEALTHY, health_text

RUN_FACTS = ("train_seconds", "parameters", "hidden_layers")
"""The tidy table's values that describe a run rather than measure its predictions: its training seconds and the
size of its network (a run's metrics.json `architecture`, bnnrepro.methods.architecture)."""


def tidy_metrics(study_name: str, scale: str, root: Path = Path(), runs: list[Run] | None = None) -> pd.DataFrame:
    """The tidy table of the study's runs at `scale` in the project `root` (of `runs` only, where given: a part of
    the grid)."""
    study = load_study(study_name)
    rows = []
    for run in study.runs(scale) if runs is None else runs:
        result = read_json(root / run.file(layout.RUN_METRICS), RUN_RESULT)
        if problem := result_problem(result, run.folder, root / run.file(layout.RUN_CONFIG)):
            raise UnreadableFileError(root / run.file(layout.RUN_METRICS), f"{RUN_RESULT} of this run", problem)
        base = {
            "study": study.name, "run": run.id, "method": run.method, "dataset": run.dataset,
            "hparams": run.hparam_slug, "seed": run.seed, "standin": result["standin"],
            "health": health_text(result.get("health", HEALTHY)),
            **{key.rsplit(".", 1)[-1]: value for key, value in run.hparams},
        }  # fmt: skip
        # a job with its own training loop (active learning) records no architecture
        values = {**result["metrics"], "train_seconds": result["train_seconds"], **result.get("architecture", {})}
        rows += [{**base, "metric": metric, "value": value} for metric, value in values.items()]
    return pd.DataFrame(rows)


def main() -> None:
    study_name, scale, out = sys.argv[1:]
    table = tidy_metrics(study_name, scale)
    write_atomic(Path(out), lambda tmp: table.to_csv(tmp, index=False))


if __name__ == "__main__":
    freeze_imported_objects()
    main()

"""What a draw function receives: the study's metrics, its data files and the scale."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from bnnrepro.files import RUN_RESULT, read_json, read_npz, read_yaml
from bnnrepro.layout import RUN_METRICS, parse_run_path
from bnnrepro.pipeline.studies import available_studies, load_study


@dataclass
class ArtifactContext:
    study: str
    scale: str
    metrics_file: Path | None = None
    data_files: list[Path] = field(default_factory=list)
    run_files: list[Path] = field(default_factory=list)

    def _by_run(self) -> dict[str, Path]:
        """Each run file keyed by its run's id ('sdebnn/sdebnn_toy/lr=0.001/seed=0'); the files of the runs of the
        study's `sensitivity_*` grids left out, as in `metrics` (`python -m bnnrepro.fidelity collect` hands over
        every kept run's files)."""
        left_out = self._sensitivity_runs
        by_run = {parse_run_path(path).run_id: path for path in self.run_files}
        return {run_id: path for run_id, path in by_run.items() if run_id not in left_out}

    def uses_standin(self) -> bool:
        """Whether any run behind this artifact trained on a stand-in dataset (its metrics.json says so)."""
        if self.metrics_file is not None:
            return bool(self.metrics["standin"].any())
        results = {parse_run_path(path).sibling(RUN_METRICS) for path in self._by_run().values()}
        return any(read_json(result, RUN_RESULT)["standin"] for result in results)

    def run_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """The arrays of each run's .npz file (an evaluation), keyed by run id."""
        return {run_id: read_npz(path, what="evaluation") for run_id, path in self._by_run().items()}

    def run_configs(self) -> dict[str, dict]:
        """The resolved training config of each run (its config.yaml), keyed by run id."""
        return {run_id: read_yaml(path) for run_id, path in self._by_run().items()}

    def run_results(self) -> dict[str, dict]:
        """The training result of each run (its metrics.json: metrics, evaluation history, per-epoch timing)."""
        return {run_id: read_json(path, RUN_RESULT) for run_id, path in self._by_run().items()}

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """The study's tidy metrics: one row per (run, metric), hyperparameters as columns; the runs of its
        `sensitivity_*` grids left out (they look into a finding, they are not the paper's)."""
        if self.metrics_file is None:
            raise ValueError(f"study {self.study}: this artifact did not declare uses='metrics'")
        metrics = pd.read_csv(self.metrics_file)
        return metrics[~metrics["run"].isin(self._sensitivity_runs)] if "run" in metrics else metrics

    @cached_property
    def _sensitivity_runs(self) -> set[str]:
        """The ids of the runs only the study's `sensitivity_*` grids have at this scale (none for a study that is not
        configured): an artifact of the paper leaves them out. Computed once per context (it loads the study)."""
        if self.study not in available_studies():
            return set()
        study = load_study(self.study)
        paper_runs = {run.id for run in study.runs(self.scale, sensitivity=False)}
        return {run.id for run in study.runs(self.scale)} - paper_runs

    def metric(self, name: str) -> pd.DataFrame:
        """Rows of one metric, with its value in column `value`."""
        return self.metrics[self.metrics["metric"] == name]

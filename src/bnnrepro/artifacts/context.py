"""What a draw function receives: the study's metrics, its data files and the scale."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from bnnrepro.files import RUN_RESULT, read_json, read_npz, read_yaml
from bnnrepro.layout import RUN_METRICS, parse_run_path


@dataclass
class ArtifactContext:
    study: str
    scale: str
    metrics_file: Path | None = None
    data_files: list[Path] = field(default_factory=list)
    run_files: list[Path] = field(default_factory=list)

    def _by_run(self) -> dict[str, Path]:
        """Each run file keyed by its run's id ('sdebnn/sdebnn_toy/lr=0.001/seed=0')."""
        return {parse_run_path(path).run: path for path in self.run_files}

    def uses_standin(self) -> bool:
        """Whether any run behind this artifact trained on a stand-in dataset (its metrics.json says so)."""
        if self.metrics_file is not None:
            return bool(self.metrics["standin"].any())
        results = {parse_run_path(path).sibling(RUN_METRICS) for path in self.run_files}
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
        """The study's tidy metrics: one row per (run, metric), hyperparameters as columns."""
        if self.metrics_file is None:
            raise ValueError(f"study {self.study}: this artifact did not declare uses='metrics'")
        return pd.read_csv(self.metrics_file)

    def metric(self, name: str) -> pd.DataFrame:
        """Rows of one metric, with its value in column `value`."""
        return self.metrics[self.metrics["metric"] == name]

"""What a draw function receives: the study's metrics, its data files and the scale."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd


@dataclass
class ArtifactContext:
    study: str
    scale: str
    metrics_file: Path | None = None
    data_files: list[Path] = field(default_factory=list)

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """The study's tidy metrics: one row per (run, metric), hyperparameters as columns."""
        if self.metrics_file is None:
            raise ValueError(f"study {self.study}: this artifact did not declare uses='metrics'")
        return pd.read_csv(self.metrics_file)

    def metric(self, name: str) -> pd.DataFrame:
        """Rows of one metric, with its value in column `value`."""
        return self.metrics[self.metrics["metric"] == name]

"""The in-memory form of a dataset that training jobs read: train/validation/test splits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bnnrepro.files import read_npz, write_atomic

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class DataSpec:
    """What a model needs to know about the data: task, input size and label space."""

    task: str  # "classification" or "regression"
    num_features: int  # the size of an input's first axis: features of a vector, channels of an image
    num_classes: int  # 0 for regression
    input_shape: tuple[int, ...] = ()  # the shape of one input, e.g. (1, 28, 28); () when not known


@dataclass(frozen=True)
class Splits:
    """Arrays of one dataset instance, keyed x_train, y_train, x_val, y_val, x_test, y_test."""

    arrays: dict[str, np.ndarray]

    def x(self, split: str) -> np.ndarray:
        return self.arrays[f"x_{split}"]

    def y(self, split: str) -> np.ndarray:
        return self.arrays[f"y_{split}"]

    def target_standardisation(self) -> tuple[float, float]:
        """(mean, std) of the standardisation y = (y_original - mean) / std that the loader applied to the targets
        (the UCI loader's y_mean and y_std); (0.0, 1.0) for targets in their original units."""
        if "y_std" not in self.arrays:
            return 0.0, 1.0
        return float(self.arrays["y_mean"]), float(self.arrays["y_std"])

    def spec(self, task: str) -> DataSpec:
        """The DataSpec for `task`; a classification set's classes are its `class_names` where it names them (a class
        the training rows lack still counts), else the training labels' largest value plus one."""
        num_classes = 0
        if task == "classification":
            names = self.arrays.get("class_names")
            num_classes = len(names) if names is not None else int(self.y("train").max()) + 1
        return DataSpec(task, self.x("train").shape[1], num_classes, tuple(self.x("train").shape[1:]))

    def save(self, path: Path) -> None:
        """Write atomically as .npz (no pickled objects)."""
        write_atomic(path, lambda tmp: np.savez(tmp, **self.arrays))

    @classmethod
    def load(cls, path: Path) -> Splits:
        arrays = read_npz(path, what="prepared dataset")
        missing = {f"{a}_{s}" for a in "xy" for s in SPLITS} - set(arrays)
        if missing:
            raise ValueError(f"{path}: not a dataset file, missing arrays {sorted(missing)}")
        return cls(arrays)

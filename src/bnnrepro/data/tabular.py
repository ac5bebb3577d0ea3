"""Tabular data: rows of features and one target, split and standardised by one rule.

Any table (a CSV download, a dataset a package ships) is prepared once into an .npz with `x` [N, D] and `y` [N]: the
target's values for a regression table, class indices for a classification table, which also holds the classes'
names (`class_names`, the registry entry's `task` and `class_labels`). `load` cuts split K (`dataset.split`) as the
UDN paper's UCI protocol does (App. B.4: a permutation of all rows seeded by K, then train/validation/test by the
config's fractions, 80/10/10 by default) and standardises the inputs with the training rows' mean and std, and a
regression target too. The UCI loader (bnnrepro.data.uci) shares both steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bnnrepro.data.registry import Download, PackagedDataset, resolve
from bnnrepro.data.spec import SPLITS, Splits
from bnnrepro.files import read_npz, write_atomic

SplitRows = tuple[np.ndarray, np.ndarray, np.ndarray]


def seeded_split(num_rows: int, split: int, train_fraction: float, val_fraction: float) -> SplitRows:
    """(train, val, test) rows: numpy's legacy RandomState(split) shuffle of all rows (the UDN authors' code,
    `ANazaret/unbounded-depth-neural-networks` `experiments/load_data.py`), the first floor(train_fraction N) for
    training, the next round(val_fraction N) for validation, the rest for test."""
    if not (train_fraction > 0 and val_fraction >= 0 and train_fraction + val_fraction < 1):
        raise ValueError(
            f"train_fraction={train_fraction}, val_fraction={val_fraction}: both must be >= 0 (train > 0) and sum "
            "to less than 1, leaving rows for the test split"
        )
    order = np.arange(num_rows)
    np.random.RandomState(split).shuffle(order)
    num_train, num_val = int(train_fraction * num_rows), int(round(val_fraction * num_rows))
    return order[:num_train], order[num_train : num_train + num_val], order[num_train + num_val :]


def standardised_splits(x: np.ndarray, y: np.ndarray, rows: SplitRows, standardize: bool) -> Splits:
    """x_/y_ train/val/test (float32, y as [n, 1]) with inputs and target standardised by the training rows' mean
    and std (a constant column keeps std 1), and `y_mean`, `y_std` to map predictions back to the original units."""
    train = rows[0]
    x, y = x.astype(np.float64), y.astype(np.float64)
    x_mean, x_std, y_mean, y_std = x[train].mean(0), x[train].std(0), y[train].mean(), y[train].std()
    if not standardize:
        x_mean, x_std, y_mean, y_std = np.zeros_like(x_mean), np.ones_like(x_std), 0.0, 1.0
    x_std = np.where(x_std < 1e-10, 1.0, x_std)
    y_std = y_std if y_std >= 1e-10 else 1.0
    arrays = {"y_mean": np.array(y_mean), "y_std": np.array(y_std)}
    for split, split_rows in zip(("train", "val", "test"), rows, strict=True):
        arrays[f"x_{split}"] = ((x[split_rows] - x_mean) / x_std).astype(np.float32)
        arrays[f"y_{split}"] = ((y[split_rows] - y_mean) / y_std).astype(np.float32)[:, None]
    return Splits(arrays)


def classified_splits(x: np.ndarray, y: np.ndarray, rows: SplitRows, standardize: bool) -> Splits:
    """x_ train/val/test standardised as `standardised_splits` does, y_ the class indices (int64 [n])."""
    inputs = standardised_splits(x, np.zeros(len(y)), rows, standardize).arrays
    arrays = {key: value for key, value in inputs.items() if key.startswith("x_")}
    for split, split_rows in zip(SPLITS, rows, strict=True):
        arrays[f"y_{split}"] = y[split_rows].astype(np.int64)
    return Splits(arrays)


def write_table(out: Path, x: np.ndarray, y: np.ndarray, class_names: list[str] | None = None) -> None:
    """The prepared table: x [N, D] float64 and y [N], the target's values (float64) or, with `class_names`, class
    indices (int64) into them."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64 if class_names is None else np.int64)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError(f"a table needs x [N, D] and y [N]; got x {x.shape}, y {y.shape}")
    classes = {} if class_names is None else {"class_names": np.array(class_names, dtype=str)}
    write_atomic(out, lambda tmp: np.savez(tmp, x=x, y=y, **classes))


def prepare_packaged(entry: PackagedDataset, out: Path) -> None:
    """Call the entry's `source(**options)` and write its (x, y), or its .data and .target, as a table, checked
    first (bnnrepro.data.table_checks); a classification table's target as classes (`class_indices`), named by the
    entry's class_labels, else by the source's target_names where it has them."""
    # imported here: the checks import pandas, which a training job that loads a table (`load`) does not need
    from bnnrepro.data.table_checks import class_indices, numeric_arrays

    data = resolve(entry.source)(**entry.options)
    x, y = data if isinstance(data, tuple) else (data.data, data.target)
    classes = entry.task == "classification"
    x, y = numeric_arrays(x, y, entry.name, entry.source, classes)
    if not classes:
        write_table(out, x, y)
        return
    names = getattr(data, "target_names", None)
    where = f"dataset {entry.name!r} ({entry.source})"
    indices, class_names = class_indices(y, entry.class_labels, where, None if names is None else list(map(str, names)))
    write_table(out, x, indices, class_names)


def load(path: Path, config: Mapping) -> Splits:
    """Split `config['split']` of a prepared table, with config keys train_fraction, val_fraction, standardize; a
    classification table's splits keep its `class_names`."""
    arrays = read_npz(path, what="prepared dataset")
    if missing := {"x", "y"} - set(arrays):
        raise ValueError(f"{path}: not a prepared table, missing arrays {sorted(missing)}")
    x, y = arrays["x"], arrays["y"]
    rows = seeded_split(len(y), int(config["split"]), float(config["train_fraction"]), float(config["val_fraction"]))
    if "class_names" not in arrays:
        return standardised_splits(x, y, rows, bool(config["standardize"]))
    splits = classified_splits(x, y, rows, bool(config["standardize"]))
    return Splits({**splits.arrays, "class_names": arrays["class_names"]})


def standin_table(rows: int, features: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An offline stand-in's (x, y): correlated Gaussian features and a smooth nonlinear target plus noise."""
    x = rng.normal(size=(rows, features)) @ rng.normal(size=(features, features)) / np.sqrt(features)
    weights = rng.normal(size=features)
    y = np.sin(x @ weights) + 0.5 * (x[:, 0] ** 2) + 0.1 * rng.normal(size=rows)
    return x, y


def standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Offline stand-in of a tabular download, of the registry entry's `standin_shape` (rows, features); for a
    classification table, its target cut at its quantiles into as many classes as class_labels declares (two where
    it declares none), named as declared."""
    if entry.standin_shape is None:
        raise ValueError(f"dataset {entry.name!r}: give standin_shape: [rows, features] in config/datasets.yaml")
    x, y = standin_table(*entry.standin_shape, np.random.default_rng(seed))
    if entry.task != "classification":
        write_table(out, x, y)
        return
    from bnnrepro.data.table_checks import declared_names  # pandas, as in prepare_packaged

    names = declared_names(entry.class_labels or ["0", "1"])
    cuts = np.quantile(y, np.linspace(0, 1, len(names) + 1)[1:-1])
    write_table(out, x, np.searchsorted(cuts, y), names)

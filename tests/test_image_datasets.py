"""Image datasets through the real path: small files in the exact published formats (IDX gzip, CIFAR
binary batches in tar.gz, CIFAR-10-C .npy arrays in a tar, SVHN .mat) are served from a loopback
mirror, fetched and verified, prepared and loaded; and the stand-ins have the real shapes."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bnnrepro.data import formats, images
from bnnrepro.data.fetch import fetch
from bnnrepro.data.registry import dataset, resolve
from tests.conftest import served_download
from tests.format_writers import write_cifar_batch, write_idx, write_svhn_mat

RNG = np.random.default_rng(0)


def file_bytes(write, *args) -> bytes:
    """The bytes a format writer produces."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file"
        write(path, *args)
        return path.read_bytes()


def tar_bytes(members: dict[str, bytes], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def serve(registry_root, mirror, name: str, files: dict[str, bytes], prepare: str) -> None:
    """Serve `files` as download `name` whose prepare step is images.<prepare> and loader images.load."""
    entry = served_download(mirror[1], name, files, f"bnnrepro.data.images:{prepare}", "bnnrepro.data.images:load")
    registry_root({name: entry})


def fetch_prepare_load(name: str, mirror, tmp_path: Path, config: dict):
    raw, prepared = tmp_path / "raw" / name, tmp_path / f"{name}.npz"
    fetch(name, raw, mirror[0])
    entry = dataset(name)
    resolve(entry.prepare)(raw, prepared)
    return resolve(entry.loader)(prepared, config), prepared


def test_mnist_format(registry_root, mirror, tmp_path: Path) -> None:
    x_train, y_train = RNG.integers(0, 256, (30, 28, 28), dtype=np.uint8), RNG.integers(0, 10, 30, dtype=np.uint8)
    x_test, y_test = RNG.integers(0, 256, (7, 28, 28), dtype=np.uint8), RNG.integers(0, 10, 7, dtype=np.uint8)
    files = {
        "train-images-idx3-ubyte.gz": file_bytes(write_idx, x_train),
        "train-labels-idx1-ubyte.gz": file_bytes(write_idx, y_train),
        "t10k-images-idx3-ubyte.gz": file_bytes(write_idx, x_test),
        "t10k-labels-idx1-ubyte.gz": file_bytes(write_idx, y_test),
    }
    serve(registry_root, mirror, "mnist", files, "prepare_idx")
    splits, _ = fetch_prepare_load("mnist", mirror, tmp_path, {"val_fraction": 0.2, "mean": None, "std": None})
    assert splits.x("train").shape == (24, 28, 28) and splits.x("val").shape == (6, 28, 28)
    np.testing.assert_allclose(splits.x("test"), x_test / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(splits.y("test"), y_test)
    together = np.concatenate([splits.y("train"), splits.y("val")])
    np.testing.assert_array_equal(np.sort(together), np.sort(y_train))


def test_cifar10_binary_format(registry_root, mirror, tmp_path: Path) -> None:
    images_by_batch = [RNG.integers(0, 256, (4, 32, 32, 3), dtype=np.uint8) for _ in range(6)]
    labels_by_batch = [RNG.integers(0, 10, 4) for _ in range(6)]
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    members = {f"cifar-10-batches-bin/{n}": file_bytes(write_cifar_batch, x, y)
               for n, x, y in zip(names, images_by_batch, labels_by_batch, strict=True)}  # fmt: skip
    archive = {"cifar-10-binary.tar.gz": tar_bytes(members, "w:gz")}
    serve(registry_root, mirror, "cifar10", archive, "prepare_cifar10")
    mean, std = [0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]
    splits, prepared = fetch_prepare_load("cifar10", mirror, tmp_path, {"val_fraction": 0.0, "mean": mean, "std": std})
    with np.load(prepared) as data:
        np.testing.assert_array_equal(data["x_train"], np.concatenate(images_by_batch[:5]))
        np.testing.assert_array_equal(data["y_test"], labels_by_batch[5])
    expected = (images_by_batch[5] / 255.0 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(splits.x("test"), expected, rtol=1e-5, atol=1e-5)
    pair = images.load(prepared, {"val_fraction": 0.0, "classes": [1, 4]})
    keep = np.isin(labels_by_batch[5], [1, 4])
    np.testing.assert_array_equal(pair.y("test"), labels_by_batch[5][keep])
    assert (
        set(pair.y("train")) <= {1, 4}
        and len(pair.y("train")) == np.isin(np.concatenate(labels_by_batch[:5]), [1, 4]).sum()
    )
    with pytest.raises(ValueError, match=r"no images of class\(es\) \[10\].*set dataset.classes"):
        images.load(prepared, {"val_fraction": 0.0, "classes": [4, 10]})


def test_cifar100_binary_format(registry_root, mirror, tmp_path: Path) -> None:
    x, fine, coarse = (
        RNG.integers(0, 256, (5, 32, 32, 3), dtype=np.uint8),
        RNG.integers(0, 100, 5),
        RNG.integers(0, 20, 5),
    )
    batch = file_bytes(write_cifar_batch, x, fine, coarse)
    members = {"cifar-100-binary/train.bin": batch, "cifar-100-binary/test.bin": batch}
    archive = {"cifar-100-binary.tar.gz": tar_bytes(members, "w:gz")}
    serve(registry_root, mirror, "cifar100", archive, "prepare_cifar100")
    splits, _ = fetch_prepare_load("cifar100", mirror, tmp_path, {"val_fraction": 0.0})
    np.testing.assert_array_equal(splits.y("test"), fine)


def test_cifar10c_format_and_severity(registry_root, mirror, tmp_path: Path) -> None:
    arrays = {c: RNG.integers(0, 256, (10, 32, 32, 3), dtype=np.uint8) for c in formats.CIFAR10C_CORRUPTIONS}
    labels = np.repeat(RNG.integers(0, 10, 2), 5).astype(np.uint8)
    members = {f"CIFAR-10-C/{c}.npy": npy_bytes(a) for c, a in arrays.items()} | {
        "CIFAR-10-C/labels.npy": npy_bytes(labels)
    }
    archive = {"CIFAR-10-C.tar": tar_bytes(members, "w")}
    serve(registry_root, mirror, "cifar10c", archive, "prepare_cifar10c")
    config = {"corruption": "fog", "severity": 3, "mean": None, "std": None}
    splits, _ = fetch_prepare_load("cifar10c", mirror, tmp_path, config)
    np.testing.assert_allclose(splits.x("test"), arrays["fog"][4:6] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(splits.y("test"), labels[4:6])


def test_svhn_mat_format(registry_root, mirror, tmp_path: Path) -> None:
    x, y = RNG.integers(0, 256, (6, 32, 32, 3), dtype=np.uint8), np.array([0, 1, 2, 9, 0, 5])
    files = {"test_32x32.mat": file_bytes(write_svhn_mat, x, y)}
    serve(registry_root, mirror, "svhn", files, "prepare_svhn")
    splits, _ = fetch_prepare_load("svhn", mirror, tmp_path, {"val_fraction": 0.0})
    np.testing.assert_array_equal(splits.y("test"), y)
    assert splits.x("train").shape == (0, 32, 32, 3)


def test_an_archive_without_its_members_is_named(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/cifar-10-binary.tar.gz").write_bytes(tar_bytes({"other.bin": b"x"}, "w:gz"))
    with pytest.raises(ValueError, match="members .*data_batch_1.bin.* are missing"):
        images.prepare_cifar10(tmp_path / "raw", tmp_path / "out.npz")


@pytest.mark.parametrize(
    ("name", "shape", "classes"),
    [("mnist", (28, 28), 10), ("fashion_mnist", (28, 28), 10), ("cifar10", (32, 32, 3), 10),
     ("cifar100", (32, 32, 3), 100), ("svhn", (32, 32, 3), 10)],
)  # fmt: skip
def test_standins_have_the_real_shapes_and_label_spaces(tmp_path: Path, name: str, shape: tuple, classes: int) -> None:
    entry = dataset(name)
    resolve(entry.standin)(entry, tmp_path / "standin.npz")
    with np.load(tmp_path / "standin.npz") as data:
        assert data["x_test"].shape[1:] == shape and data["x_test"].dtype == np.uint8
        assert set(np.unique(data["y_test"])) <= set(range(classes)) and len(np.unique(data["y_test"])) > classes // 2

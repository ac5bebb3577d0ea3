"""Writers of the published image-dataset formats (IDX, CIFAR binary batches, SVHN's MATLAB v5), the inverses of
bnnrepro.data.formats' readers: the tests build small files in the exact formats with them."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from scipy import io as sio

from bnnrepro.data.formats import CIFAR_PIXELS, CIFAR_SIDE, IDX_DTYPES
from bnnrepro.files import write_atomic


def write_idx(path: Path, array: np.ndarray, gzip: bool = True) -> None:
    """Write `array` as an IDX file (gzip-compressed, with a zero timestamp, if `gzip`)."""
    codes = {np.dtype(v): k for k, v in IDX_DTYPES.items()}
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in codes:
        raise ValueError(f"IDX has no type code for {array.dtype}; use one of {sorted(map(str, codes))}")
    if not 1 <= array.ndim <= 255:
        raise ValueError(f"IDX needs 1..255 dimensions, got {array.ndim}")
    header = bytes([0, 0, codes[native], array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    raw = header + array.astype(native.newbyteorder(">")).tobytes()
    _write_bytes(Path(path), _gzip_compress(raw) if gzip else raw)


def _gzip_compress(raw: bytes) -> bytes:  # outside write_idx, whose `gzip` argument hides the module
    return gzip.compress(raw, mtime=0)


def write_cifar_batch(path: Path, images: np.ndarray, labels: np.ndarray, coarse: np.ndarray | None = None) -> None:
    """Write a CIFAR binary batch: [label] + R, G, B planes per record; with `coarse`, CIFAR-100's [coarse, fine]."""
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != (CIFAR_SIDE, CIFAR_SIDE, 3):
        raise ValueError(f"images should be uint8 [N, 32, 32, 3], got {images.dtype} {list(images.shape)}")
    label_columns = [labels] if coarse is None else [coarse, labels]
    label_bytes = np.stack([_byte_labels(column, len(images)) for column in label_columns], axis=1)
    pixels = images.transpose(0, 3, 1, 2).reshape(len(images), CIFAR_PIXELS)
    _write_bytes(Path(path), np.concatenate([label_bytes, pixels], axis=1).tobytes())


def _byte_labels(labels: np.ndarray, n: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (n,) or labels.min(initial=0) < 0 or labels.max(initial=0) > 255:
        raise ValueError(f"expected {n} labels in 0..255, got shape {list(labels.shape)}")
    return labels.astype(np.uint8)


def write_svhn_mat(path: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """Write SVHN's MATLAB v5 layout: `X` uint8 [32, 32, 3, N], `y` uint8 [N, 1] with the digit 0 stored as 10."""
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != (32, 32, 3):
        raise ValueError(f"images should be uint8 [N, 32, 32, 3], got {images.dtype} {list(images.shape)}")
    labels = np.asarray(labels)
    if labels.shape != (len(images),) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise ValueError(f"expected {len(images)} digit labels in 0..9, got shape {list(labels.shape)}")
    y = np.where(labels == 0, 10, labels).astype(np.uint8).reshape(-1, 1)
    x = np.ascontiguousarray(images.transpose(1, 2, 3, 0))
    write_atomic(Path(path), lambda tmp: sio.savemat(tmp, {"X": x, "y": y}, format="5"))


def _write_bytes(path: Path, data: bytes) -> None:
    write_atomic(path, lambda tmp: tmp.write_bytes(data))

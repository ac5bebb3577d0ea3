"""Readers of the on-disk formats in which the image datasets are published.

Nothing here unpickles: IDX and CIFAR are raw bytes, CIFAR-10-C is read with `allow_pickle=False`,
and SVHN's MATLAB v5 files are parsed by `scipy.io.loadmat`, which builds plain arrays.
Every reader checks sizes against its header or record layout and raises `ValueError` naming the file.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
from scipy import io as sio

# IDX type codes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT"); data are big-endian
IDX_DTYPES = {0x08: "u1", 0x09: "i1", 0x0B: "i2", 0x0C: "i4", 0x0D: "f4", 0x0E: "f8"}
GZIP_MAGIC = b"\x1f\x8b"

CIFAR_SIDE = 32
CIFAR_PIXELS = 3 * CIFAR_SIDE * CIFAR_SIDE  # 3072 bytes: the R plane, then G, then B, each 32x32 row-major

# Hendrycks & Dietterich (2019), CIFAR-10-C (https://zenodo.org/records/2535967): one <name>.npy per corruption
CIFAR10C_CORRUPTIONS = (
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "glass_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "frost",
    "fog",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
    "speckle_noise",
    "gaussian_blur",
    "spatter",
    "saturate",
)
CIFAR10C_SEVERITIES = 5


# --- readers ---


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (MNIST, Fashion-MNIST), gzip-compressed or not, as a native-endian array.

    Layout (http://yann.lecun.com/exdb/mnist/): magic = 0x00 0x00 <type code> <ndim>,
    then ndim big-endian uint32 sizes, then the data, big-endian, row-major.
    """
    path = Path(path)
    raw = _maybe_gunzip(path, path.read_bytes())
    if len(raw) < 4 or raw[:2] != b"\x00\x00":
        raise ValueError(f"{path}: not an IDX file (magic number {raw[:4].hex() or 'missing'})")
    code, ndim = raw[2], raw[3]
    if code not in IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX type code 0x{code:02x}; known: {sorted(map(hex, IDX_DTYPES))}")
    if ndim == 0:
        raise ValueError(f"{path}: IDX header declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes, {ndim} dimensions need {header})")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(">" + IDX_DTYPES[code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(
            f"{path}: IDX payload is {len(raw) - header} bytes, header {shape} of {dtype} needs {expected}"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _maybe_gunzip(path: Path, raw: bytes) -> bytes:
    """`raw` decompressed if it starts with the gzip magic bytes 1f 8b (RFC 1952), else unchanged."""
    if not raw.startswith(GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"{path}: corrupt or truncated gzip data ({error})") from error


def read_cifar_batches(paths: list[Path], label_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR binary version (https://www.cs.toronto.edu/~kriz/cifar.html): images [N, 32, 32, 3] uint8, labels int64.

    Each record is `label_bytes` label bytes, then 3072 pixel bytes (R, G, B planes of 32x32, row-major).
    CIFAR-10 (`data_batch_*.bin`, `test_batch.bin`): 1 label byte in 0..9. CIFAR-100 (`train.bin`, `test.bin`):
    2 label bytes, coarse (0..19) then fine (0..99); the fine label is returned.
    """
    if label_bytes not in (1, 2):
        raise ValueError(f"label_bytes must be 1 (CIFAR-10) or 2 (CIFAR-100), got {label_bytes}")
    parts = [_read_cifar_file(Path(p), label_bytes) for p in paths]
    if not parts:
        raise ValueError("no CIFAR batch files given")
    images, labels = zip(*parts, strict=True)
    return np.concatenate(images), np.concatenate(labels)


def _read_cifar_file(path: Path, label_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.fromfile(path, dtype=np.uint8)
    record = label_bytes + CIFAR_PIXELS
    if raw.size == 0 or raw.size % record:
        raise ValueError(
            f"{path}: {raw.size} bytes is not a whole number of {record}-byte records "
            f"({label_bytes} label byte(s) + {CIFAR_PIXELS} pixels); wrong file or label_bytes, or truncated"
        )
    records = raw.reshape(-1, record)
    labels = records[:, label_bytes - 1].astype(np.int64)
    num_classes = 10 if label_bytes == 1 else 100
    if labels.max() >= num_classes or (label_bytes == 2 and records[:, 0].max() >= 20):
        raise ValueError(f"{path}: labels out of range for {'CIFAR-10' if label_bytes == 1 else 'CIFAR-100'}")
    images = records[:, label_bytes:].reshape(-1, 3, CIFAR_SIDE, CIFAR_SIDE).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def read_cifar10c(folder: Path, corruption: str) -> np.ndarray:
    """CIFAR-10-C `<corruption>.npy` (Hendrycks & Dietterich 2019): uint8 [5 n, 32, 32, 3], severities 1..5 stacked."""
    if corruption not in CIFAR10C_CORRUPTIONS:
        raise ValueError(f"unknown CIFAR-10-C corruption {corruption!r}; known: {', '.join(CIFAR10C_CORRUPTIONS)}")
    path = Path(folder) / f"{corruption}.npy"
    images = _load_npy(path)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[1:] != (CIFAR_SIDE, CIFAR_SIDE, 3):
        raise ValueError(f"{path}: expected uint8 [N, 32, 32, 3], got {images.dtype} {list(images.shape)}")
    _check_severity_stack(path, len(images))
    return images


def read_cifar10c_labels(folder: Path) -> np.ndarray:
    """CIFAR-10-C `labels.npy`: the test labels 0..9 repeated for the 5 severities, as int64 [5 n]."""
    path = Path(folder) / "labels.npy"
    labels = _load_npy(path)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(f"{path}: expected 1-D integer labels, got {labels.dtype} {list(labels.shape)}")
    _check_severity_stack(path, len(labels))
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"{path}: labels out of range 0..9")
    return labels.astype(np.int64)


def cifar10c_severity(images: np.ndarray, severity: int) -> np.ndarray:
    """Rows of one severity (1..5) of a CIFAR-10-C array: [(severity - 1) n, severity n), n = len / 5."""
    if severity not in range(1, CIFAR10C_SEVERITIES + 1):
        raise ValueError(f"severity must be 1..{CIFAR10C_SEVERITIES}, got {severity}")
    if len(images) % CIFAR10C_SEVERITIES:
        raise ValueError(f"{len(images)} rows are not {CIFAR10C_SEVERITIES} equal severity blocks")
    n = len(images) // CIFAR10C_SEVERITIES
    return images[(severity - 1) * n : severity * n]


def _load_npy(path: Path) -> np.ndarray:
    """A .npy array; object arrays (which would need unpickling) are refused."""
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as error:
        raise ValueError(f"{path}: cannot load without unpickling or not a .npy file ({error})") from error
    if not isinstance(array, np.ndarray):  # an .npz archive
        array.close()
        raise ValueError(f"{path}: expected a .npy array, found an .npz archive")
    return array


def _check_severity_stack(path: Path, rows: int) -> None:
    if rows == 0 or rows % CIFAR10C_SEVERITIES:
        raise ValueError(f"{path}: {rows} rows are not {CIFAR10C_SEVERITIES} equal severity blocks")


def read_svhn_mat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """SVHN cropped digits (http://ufldl.stanford.edu/housenumbers/, `test_32x32.mat`, MATLAB v5).

    The file holds `X` uint8 [32, 32, 3, N] and `y` [N, 1] in 1..10, 10 standing for the digit 0.
    Returns images [N, 32, 32, 3] uint8 and labels int64 in 0..9.
    """
    path = Path(path)
    try:
        mat = sio.loadmat(path, variable_names=["X", "y"])
    except (ValueError, OSError, EOFError, sio.matlab.MatReadError, NotImplementedError) as error:
        raise ValueError(f"{path}: not a readable MATLAB v5 file ({error})") from error
    if "X" not in mat or "y" not in mat:
        raise ValueError(f"{path}: missing variable(s) {sorted({'X', 'y'} - set(mat))}")
    x, y = mat["X"], mat["y"]
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (32, 32, 3):
        raise ValueError(f"{path}: X should be uint8 [32, 32, 3, N], got {x.dtype} {list(x.shape)}")
    labels = np.asarray(y).reshape(-1).astype(np.int64)
    if labels.shape != (x.shape[3],) or labels.min(initial=1) < 1 or labels.max(initial=10) > 10:
        raise ValueError(f"{path}: y should hold {x.shape[3]} labels in 1..10, got {y.dtype} {list(y.shape)}")
    return np.ascontiguousarray(x.transpose(3, 0, 1, 2)), labels % 10

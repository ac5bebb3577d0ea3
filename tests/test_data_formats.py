"""Readers and writers of the published dataset formats (IDX, CIFAR binary, CIFAR-10-C .npy, SVHN .mat)."""

import gzip
import pickle

import numpy as np
import pytest
from scipy import io as sio

from bnnrepro.data.formats import (
    CIFAR10C_CORRUPTIONS,
    cifar10c_severity,
    read_cifar10c,
    read_cifar10c_labels,
    read_cifar_batches,
    read_idx,
    read_svhn_mat,
)
from tests.format_writers import write_cifar_batch, write_idx, write_svhn_mat


@pytest.fixture(autouse=True)
def no_unpickling(monkeypatch):
    """Any unpickling during a test fails it (numpy's object-array path goes through pickle.load)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a reader tried to unpickle")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)


def random_images(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)


# --- IDX ---


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((5, 28, 28), np.uint8), ((7,), np.uint8), ((3, 4), np.int8), ((6,), np.int16), ((2, 3), np.int32)]
    + [((4, 2, 3), np.float32), ((5,), np.float64)],
)
def test_idx_round_trip(tmp_path, compress, shape, dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    array = (rng.integers(info.min, info.max, shape, endpoint=True) if info else rng.normal(size=shape)).astype(dtype)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    write_idx(path, array, gzip=compress)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == compress
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative and back.shape == shape
    np.testing.assert_array_equal(back, array)


def test_idx_header_is_mnists(tmp_path):
    """MNIST's documented magic numbers: 2051 (0x0803) for images, 2049 (0x0801) for labels; sizes big-endian."""
    write_idx(tmp_path / "images", np.zeros((3, 28, 28), np.uint8), gzip=False)
    write_idx(tmp_path / "labels", np.zeros(3, np.uint8), gzip=False)
    images, labels = (tmp_path / "images").read_bytes(), (tmp_path / "labels").read_bytes()
    assert int.from_bytes(images[:4], "big") == 2051 and int.from_bytes(labels[:4], "big") == 2049
    assert images[4:16] == bytes.fromhex("00000003 0000001c 0000001c") and len(images) == 16 + 3 * 28 * 28
    assert labels[4:8] == bytes.fromhex("00000003") and len(labels) == 8 + 3


def test_idx_reads_hand_made_files(tmp_path):
    """Bytes written by hand, not by write_idx: big-endian data of each type."""
    cases = {
        "00000801 00000003 010203": np.array([1, 2, 3], np.uint8),
        "00000b01 00000002 0100 fffe": np.array([256, -2], np.int16),
        "00000d02 00000001 00000001 3fc00000": np.array([[1.5]], np.float32),
    }
    for i, (hex_bytes, expected) in enumerate(cases.items()):
        path = tmp_path / f"case{i}"
        path.write_bytes(bytes.fromhex(hex_bytes))
        np.testing.assert_array_equal(read_idx(path), expected)
        (tmp_path / f"case{i}.gz").write_bytes(gzip.compress(bytes.fromhex(hex_bytes)))
        np.testing.assert_array_equal(read_idx(tmp_path / f"case{i}.gz"), expected)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (bytes.fromhex("00000803 00000002 0000001c 0000001c") + bytes(2 * 784 - 1), "payload"),  # one byte short
        (bytes.fromhex("00000801 00000002 010203"), "payload"),  # one byte too many
        (bytes.fromhex("00000803 00000002"), "header"),  # sizes missing
        (bytes.fromhex("01000801 00000001 01"), "magic"),
        (bytes.fromhex("00000a01 00000001 01"), "type code"),
        (b"\x00\x00", "magic"),
        (b"", "magic"),
    ],
)
def test_idx_corrupt_files_raise_naming_the_file(tmp_path, content, message):
    for path, data in ((tmp_path / "t10k-labels-idx1-ubyte", content), (tmp_path / "x.gz", gzip.compress(content))):
        path.write_bytes(data)
        with pytest.raises(ValueError, match=message) as error:
            read_idx(path)
        assert str(path) in str(error.value)


def test_idx_truncated_gzip_raises_naming_the_file(tmp_path):
    path = tmp_path / "train-images-idx3-ubyte.gz"
    write_idx(path, random_images(2)[..., 0])
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match="gzip") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_write_idx_refuses_types_without_a_code(tmp_path):
    with pytest.raises(ValueError, match="type code"):
        write_idx(tmp_path / "labels", np.arange(3, dtype=np.int64))


# --- CIFAR binary ---


def test_cifar10_pixel_placement(tmp_path):
    """Record i: 1 label byte, then the R, G, B planes, each 32x32 row-major."""
    images, labels = random_images(4), np.array([3, 0, 9, 7])
    path = tmp_path / "data_batch_1.bin"
    write_cifar_batch(path, images, labels)
    raw = path.read_bytes()
    assert len(raw) == 4 * 3073
    rng = np.random.default_rng(2)
    for i, r, c, k in zip(*(rng.integers(0, m, 200) for m in (4, 32, 32, 3)), strict=True):
        assert raw[i * 3073 + 1 + k * 1024 + r * 32 + c] == images[i, r, c, k]
    assert [raw[i * 3073] for i in range(4)] == labels.tolist()
    read_images, read_labels = read_cifar_batches([path], label_bytes=1)
    assert read_images.dtype == np.uint8 and read_images.shape == (4, 32, 32, 3)
    assert read_labels.dtype == np.int64
    np.testing.assert_array_equal(read_images, images)
    np.testing.assert_array_equal(read_labels, labels)


def test_cifar10_reads_a_hand_made_record(tmp_path):
    planes = np.zeros((3, 32, 32), np.uint8)
    planes[0, 1, 2], planes[1, 30, 0], planes[2, 0, 31] = 11, 22, 33  # R at (1, 2), G at (30, 0), B at (0, 31)
    path = tmp_path / "test_batch.bin"
    path.write_bytes(bytes([6]) + planes.tobytes())
    images, labels = read_cifar_batches([path], label_bytes=1)
    assert labels.tolist() == [6]
    assert images[0, 1, 2, 0] == 11 and images[0, 30, 0, 1] == 22 and images[0, 0, 31, 2] == 33
    assert int(images.astype(int).sum()) == 66


def test_cifar10_batches_concatenate_in_order(tmp_path):
    paths = [tmp_path / f"data_batch_{i}.bin" for i in (1, 2, 3)]
    parts = [(random_images(n, seed=n), np.arange(n) % 10) for n in (2, 3, 1)]
    for path, (images, labels) in zip(paths, parts, strict=True):
        write_cifar_batch(path, images, labels)
    images, labels = read_cifar_batches(paths, label_bytes=1)
    np.testing.assert_array_equal(images, np.concatenate([p[0] for p in parts]))
    np.testing.assert_array_equal(labels, np.concatenate([p[1] for p in parts]))


def test_cifar100_coarse_then_fine(tmp_path):
    images, fine, coarse = random_images(5), np.array([99, 0, 42, 17, 63]), np.array([19, 0, 5, 3, 12])
    path = tmp_path / "train.bin"
    write_cifar_batch(path, images, fine, coarse=coarse)
    raw = path.read_bytes()
    assert len(raw) == 5 * 3074
    assert [raw[i * 3074] for i in range(5)] == coarse.tolist()
    assert [raw[i * 3074 + 1] for i in range(5)] == fine.tolist()
    for i, r, c, k in ((0, 0, 0, 0), (4, 31, 31, 2), (2, 5, 17, 1)):
        assert raw[i * 3074 + 2 + k * 1024 + r * 32 + c] == images[i, r, c, k]
    read_images, labels = read_cifar_batches([path], label_bytes=2)
    np.testing.assert_array_equal(read_images, images)
    np.testing.assert_array_equal(labels, fine)


def test_cifar_wrong_sizes_raise_naming_the_file(tmp_path):
    path = tmp_path / "data_batch_5.bin"
    write_cifar_batch(path, random_images(3), np.array([1, 2, 3]))
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="3073-byte records") as error:
        read_cifar_batches([path], label_bytes=1)
    assert str(path) in str(error.value)
    # a CIFAR-100 file read as CIFAR-10, and an empty file
    hundred = tmp_path / "test.bin"
    write_cifar_batch(hundred, random_images(2), np.array([50, 60]), coarse=np.array([1, 2]))
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    for bad in (hundred, empty):
        with pytest.raises(ValueError, match=str(bad)):
            read_cifar_batches([bad], label_bytes=1)


def test_cifar_labels_out_of_range_raise(tmp_path):
    path = tmp_path / "data_batch_1.bin"
    write_cifar_batch(path, random_images(2), np.array([3, 10]))
    with pytest.raises(ValueError, match="out of range"):
        read_cifar_batches([path], label_bytes=1)
    write_cifar_batch(path, random_images(2), np.array([3, 4]), coarse=np.array([0, 20]))
    with pytest.raises(ValueError, match="out of range"):
        read_cifar_batches([path], label_bytes=2)


def test_cifar_label_bytes_and_paths_are_checked(tmp_path):
    with pytest.raises(ValueError, match="label_bytes"):
        read_cifar_batches([tmp_path / "x.bin"], label_bytes=3)
    with pytest.raises(ValueError, match="no CIFAR batch"):
        read_cifar_batches([], label_bytes=1)


# --- CIFAR-10-C ---


def test_cifar10c_corruption_names():
    assert len(CIFAR10C_CORRUPTIONS) == len(set(CIFAR10C_CORRUPTIONS)) == 19
    assert set(CIFAR10C_CORRUPTIONS) == {
        *("gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"),
        *("defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur"),
        *("snow", "frost", "fog", "spatter", "brightness", "contrast", "saturate"),
        *("elastic_transform", "pixelate", "jpeg_compression"),
    }


def test_cifar10c_round_trip_and_severity_slices(tmp_path):
    n = 3
    images = np.repeat(np.arange(1, 6, dtype=np.uint8), n)[:, None, None, None] * np.ones((1, 32, 32, 3), np.uint8)
    labels = np.tile(np.array([4, 0, 9], dtype=np.uint8), 5)  # the real labels.npy holds uint8
    np.save(tmp_path / "fog.npy", images)
    np.save(tmp_path / "labels.npy", labels)
    read = read_cifar10c(tmp_path, "fog")
    np.testing.assert_array_equal(read, images)
    read_labels = read_cifar10c_labels(tmp_path)
    assert read_labels.dtype == np.int64 and read_labels.tolist() == labels.tolist()
    for severity in range(1, 6):
        block = cifar10c_severity(read, severity)
        assert block.shape == (n, 32, 32, 3) and np.all(block == severity)
        assert cifar10c_severity(read_labels, severity).tolist() == [4, 0, 9]
    for severity in (0, 6):
        with pytest.raises(ValueError, match="severity"):
            cifar10c_severity(read, severity)
    with pytest.raises(ValueError, match="severity blocks"):
        cifar10c_severity(read[:-1], 1)


def test_cifar10c_bad_files_raise_naming_the_file(tmp_path):
    with pytest.raises(ValueError, match="unknown CIFAR-10-C corruption"):
        read_cifar10c(tmp_path, "rain")
    for array in (
        np.zeros((10, 32, 32, 3), np.float32),
        np.zeros((10, 32, 32), np.uint8),
        np.zeros((7, 32, 32, 3), np.uint8),
    ):
        np.save(tmp_path / "snow.npy", array)
        with pytest.raises(ValueError, match=str(tmp_path / "snow.npy")):
            read_cifar10c(tmp_path, "snow")
    np.save(tmp_path / "labels.npy", np.full(10, 10))
    with pytest.raises(ValueError, match="out of range"):
        read_cifar10c_labels(tmp_path)
    with open(tmp_path / "frost.npy", "wb") as archive:
        np.savez(archive, frost=np.zeros((5, 32, 32, 3), np.uint8))
    with pytest.raises(ValueError, match="npz"):
        read_cifar10c(tmp_path, "frost")


def test_object_arrays_are_refused_not_unpickled(tmp_path):
    objects = np.empty(5, dtype=object)
    objects[:] = [{"label": i} for i in range(5)]
    np.save(tmp_path / "labels.npy", objects, allow_pickle=True)
    np.save(tmp_path / "contrast.npy", objects, allow_pickle=True)
    with pytest.raises(ValueError, match="unpickling") as error:
        read_cifar10c_labels(tmp_path)
    assert str(tmp_path / "labels.npy") in str(error.value)
    with pytest.raises(ValueError, match="unpickling"):
        read_cifar10c(tmp_path, "contrast")


# --- SVHN ---


def test_svhn_round_trip_axis_order_and_label_10(tmp_path):
    images, labels = random_images(6), np.array([0, 1, 9, 0, 5, 3])
    path = tmp_path / "test_32x32.mat"
    write_svhn_mat(path, images, labels)
    mat = sio.loadmat(path)
    assert mat["X"].shape == (32, 32, 3, 6) and mat["X"].dtype == np.uint8
    np.testing.assert_array_equal(mat["X"][:, :, :, 4], images[4])
    assert mat["y"].shape == (6, 1) and mat["y"][:, 0].tolist() == [10, 1, 9, 10, 5, 3]
    read_images, read_labels = read_svhn_mat(path)
    assert read_images.shape == (6, 32, 32, 3) and read_images.dtype == np.uint8
    assert read_labels.dtype == np.int64
    np.testing.assert_array_equal(read_images, images)
    np.testing.assert_array_equal(read_labels, labels)


def test_svhn_reads_a_file_written_independently(tmp_path):
    """X [32, 32, 3, N] with one marked pixel, y as doubles (as MATLAB stores numbers by default)."""
    x = np.zeros((32, 32, 3, 2), np.uint8)
    x[3, 7, 2, 1] = 200  # row 3, column 7, blue, image 1
    path = tmp_path / "svhn.mat"
    sio.savemat(path, {"X": x, "y": np.array([[10.0], [4.0]])})
    images, labels = read_svhn_mat(path)
    assert images[1, 3, 7, 2] == 200 and int(images.astype(int).sum()) == 200
    assert labels.tolist() == [0, 4]


def test_svhn_bad_files_raise_naming_the_file(tmp_path):
    path = tmp_path / "test_32x32.mat"
    x = np.zeros((32, 32, 3, 2), np.uint8)
    for content, message in (
        ({"X": x, "y": np.array([[0], [3]])}, "1..10"),
        ({"X": x, "y": np.array([[11], [3]])}, "1..10"),
        ({"X": x, "y": np.array([[1], [2], [3]])}, "labels"),
        ({"X": x.astype(np.float64), "y": np.array([[1], [2]])}, "uint8"),
        ({"y": np.array([[1], [2]])}, "missing"),
    ):
        sio.savemat(path, content)
        with pytest.raises(ValueError, match=message) as error:
            read_svhn_mat(path)
        assert str(path) in str(error.value)
    write_svhn_mat(path, random_images(4), np.arange(4))
    for data in (path.read_bytes()[:300], b"not a MATLAB file at all" * 10):
        path.write_bytes(data)
        with pytest.raises(ValueError, match=str(path)):
            read_svhn_mat(path)

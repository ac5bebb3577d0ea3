"""Offline stand-ins for MNIST/Fashion-MNIST, CIFAR-10/100, SVHN and CIFAR-10-C."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from bnnrepro.data import corruptions
from bnnrepro.data.corruptions import cifar10c_like, corrupt
from bnnrepro.data.formats import (
    CIFAR10C_CORRUPTIONS,
    cifar10c_severity,
    read_cifar10c,
    read_cifar10c_labels,
    read_cifar_batches,
    read_idx,
    read_svhn_mat,
)
from bnnrepro.data.standins import cifar_like, fashion_like, mnist_like, svhn_like
from tests.format_writers import write_cifar_batch, write_idx, write_svhn_mat


@pytest.fixture(scope="module")
def clean():
    return cifar_like(16, 0, 10, seed=5)["x_train"]


def check_split(x, y, n, image_shape, num_classes):
    assert x.shape == (n, *image_shape) and x.dtype == np.uint8
    assert y.shape == (n,) and y.dtype == np.int64
    counts = np.bincount(y, minlength=num_classes)
    assert len(counts) == num_classes and counts.max() - counts.min() <= 1  # balanced (up to one)


def check_28x28_standin(make) -> np.ndarray:
    """make(53, 31, seed=0) has balanced 28x28 train and test splits, and make(3000, 0, seed=1) 3000 distinct
    images (more than load_digits has); returns the first one's training images as floats."""
    data = make(53, 31, seed=0)
    assert set(data) == {"x_train", "y_train", "x_test", "y_test"}
    check_split(data["x_train"], data["y_train"], 53, (28, 28), 10)
    check_split(data["x_test"], data["y_test"], 31, (28, 28), 10)
    many = make(3000, 0, seed=1)
    assert len(np.unique(many["x_train"].reshape(3000, -1), axis=0)) == 3000
    return data["x_train"].astype(float)


def test_mnist_like_shapes_labels_and_balance():
    x = check_28x28_standin(mnist_like)
    # digits on a dark background (MNIST's layout): the border is nearly black, the centre is not
    assert x[:, :2].mean() < 10 and x[:, 10:18, 10:18].mean() > 40


def test_fashion_like_shapes_labels_and_balance():
    x = check_28x28_standin(fashion_like)
    # garments filling much of a dark canvas (about half the pixels lit, a digit lights a quarter)
    assert x[:, 10:18, 10:18].mean() > 100 and 0.4 < (x > 64).mean() < 0.65


@pytest.mark.parametrize("num_classes", [10, 100])
def test_cifar_like_shapes_labels_and_balance(num_classes):
    data = cifar_like(230, 120, num_classes, seed=0)
    assert set(data) == {"x_train", "y_train", "x_test", "y_test"}
    check_split(data["x_train"], data["y_train"], 230, (32, 32, 3), num_classes)
    check_split(data["x_test"], data["y_test"], 120, (32, 32, 3), num_classes)
    assert data["x_train"].std() > 20  # not flat images


def test_svhn_like_test_split_only():
    data = svhn_like(47, seed=0)
    assert set(data) == {"x_test", "y_test"}
    check_split(data["x_test"], data["y_test"], 47, (32, 32, 3), 10)


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: mnist_like(20, 10, seed),
        lambda seed: fashion_like(20, 10, seed),
        lambda seed: cifar_like(20, 10, 10, seed),
        lambda seed: svhn_like(20, seed),
    ],
    ids=["mnist_like", "fashion_like", "cifar_like", "svhn_like"],
)
def test_deterministic_per_seed(make):
    a, b, other = make(3), make(3), make(4)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert any(not np.array_equal(a[key], other[key]) for key in a if key.startswith("x_"))


def pooled(x, factor):
    """Flattened pixels after factor x factor average pooling (keeps the logistic regression fast)."""
    n, h, w = x.shape[:3]
    return x.reshape(n, h // factor, factor, w // factor, factor, -1).mean(axis=(2, 4)).reshape(n, -1) / 255


@pytest.mark.parametrize(
    ("name", "data", "factor", "chance", "least"),
    [
        ("mnist_like", lambda: mnist_like(400, 400, seed=0), 2, 0.1, 0.5),
        ("fashion_like", lambda: fashion_like(400, 400, seed=0), 2, 0.1, 0.5),
        ("cifar_like", lambda: cifar_like(400, 400, 10, seed=0), 4, 0.1, 0.3),
    ],
)
def test_standins_are_learnable(name, data, factor, chance, least):
    """A linear classifier on (pooled) pixels of a few hundred images beats chance clearly."""
    data = data()
    model = LogisticRegression(max_iter=300).fit(pooled(data["x_train"], factor), data["y_train"])
    accuracy = model.score(pooled(data["x_test"], factor), data["y_test"])
    assert accuracy > least > 2 * chance, f"{name}: accuracy {accuracy:.2f}"


def test_cifar_like_is_not_trivial():
    """Colour alone does not give the class: the mean colour of an image predicts it only partly."""
    data = cifar_like(500, 500, 10, seed=1)
    mean_colour = {split: data[f"x_{split}"].reshape(500, -1, 3).mean(axis=1) / 255 for split in ("train", "test")}
    model = LogisticRegression(max_iter=500).fit(mean_colour["train"], data["y_train"])
    assert model.score(mean_colour["test"], data["y_test"]) < 0.6


def test_fashion_like_is_learnable_but_not_trivial():
    """Like the real set, the garments are told apart well but not perfectly by a linear classifier (the tops
    look alike): measured 0.90-0.93 on seeds 0-5, real Fashion-MNIST gives about 0.84."""
    data = fashion_like(2000, 1000, seed=0)
    model = LogisticRegression(max_iter=300).fit(pooled(data["x_train"], 4), data["y_train"])
    accuracy = model.score(pooled(data["x_test"], 4), data["y_test"])
    assert 0.75 < accuracy < 0.98, f"accuracy {accuracy:.3f}"


def test_fashion_like_is_not_mnist_like():
    """The Fashion-MNIST stand-in is not digits: MNIST's stand-in is its out-of-distribution set (repulsive
    ensembles' Table 1), so a linear classifier must tell the two apart (measured 0.977-0.986 on seeds 0-7)."""
    fashion, digits = fashion_like(600, 400, seed=0), mnist_like(600, 400, seed=0)
    x = {split: np.concatenate([fashion[f"x_{split}"], digits[f"x_{split}"]]) for split in ("train", "test")}
    y = {split: np.repeat([0, 1], [len(fashion[f"y_{split}"]), len(digits[f"y_{split}"])]) for split in x}
    model = LogisticRegression(max_iter=300).fit(pooled(x["train"], 2), y["train"])
    accuracy = model.score(pooled(x["test"], 2), y["test"])
    assert accuracy > 0.95, f"accuracy {accuracy:.3f}"


# --- corruptions ---


def test_corruption_names_are_cifar10cs():
    assert tuple(corruptions.CORRUPTIONS) == CIFAR10C_CORRUPTIONS


@pytest.mark.parametrize("corruption", CIFAR10C_CORRUPTIONS)
def test_corruption_strength_increases_with_severity(clean, corruption):
    outputs = [corrupt(clean, corruption, severity, seed=1) for severity in range(1, 6)]
    for out in outputs:
        assert out.shape == clean.shape and out.dtype == np.uint8
    change = [np.abs(out.astype(float) - clean).mean() for out in outputs]
    assert change[0] > 0.5, f"{corruption}: severity 1 barely changes the image ({change[0]:.2f})"
    assert np.all(np.diff(change) > 0), f"{corruption}: mean |change| by severity {np.round(change, 2)}"


@pytest.mark.parametrize("corruption", ["shot_noise", "glass_blur", "motion_blur", "snow", "spatter"])
def test_corruption_deterministic_per_seed(clean, corruption):
    np.testing.assert_array_equal(corrupt(clean, corruption, 3, seed=2), corrupt(clean, corruption, 3, seed=2))
    assert not np.array_equal(corrupt(clean, corruption, 3, seed=2), corrupt(clean, corruption, 3, seed=3))


def test_corrupt_checks_its_arguments(clean):
    with pytest.raises(ValueError, match="unknown corruption"):
        corrupt(clean, "rain", 1, seed=0)
    for severity in (0, 6):
        with pytest.raises(ValueError, match="severity"):
            corrupt(clean, "fog", severity, seed=0)
    with pytest.raises(ValueError, match="uint8"):
        corrupt(clean.astype(np.float32), "fog", 1, seed=0)


def test_cifar10c_like_stacks_severities_like_the_real_files(clean, tmp_path):
    labels = np.arange(len(clean)) % 10
    data = cifar10c_like(clean, labels, seed=0)
    assert set(data) == {*CIFAR10C_CORRUPTIONS, "labels"}
    assert data["labels"].dtype == np.int64 and data["labels"].tolist() == np.tile(labels, 5).tolist()
    for name in CIFAR10C_CORRUPTIONS:
        assert data[name].shape == (5 * len(clean), 32, 32, 3) and data[name].dtype == np.uint8
        change = [np.abs(cifar10c_severity(data[name], s).astype(float) - clean).mean() for s in (1, 5)]
        assert change[0] < change[1], name
    # written as the real folder is (one .npy per corruption), it reads back with the CIFAR-10-C readers
    for key, array in data.items():
        np.save(tmp_path / f"{key}.npy", array)
    np.testing.assert_array_equal(read_cifar10c(tmp_path, "zoom_blur"), data["zoom_blur"])
    np.testing.assert_array_equal(read_cifar10c_labels(tmp_path), data["labels"])


def test_standins_round_trip_through_the_published_formats(tmp_path):
    digits = mnist_like(12, 0, seed=0)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", digits["x_train"])
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", digits["y_train"].astype(np.uint8))
    np.testing.assert_array_equal(read_idx(tmp_path / "train-images-idx3-ubyte.gz"), digits["x_train"])
    np.testing.assert_array_equal(read_idx(tmp_path / "train-labels-idx1-ubyte.gz"), digits["y_train"])
    cifar = cifar_like(12, 0, 10, seed=0)
    write_cifar_batch(tmp_path / "data_batch_1.bin", cifar["x_train"], cifar["y_train"])
    images, labels = read_cifar_batches([tmp_path / "data_batch_1.bin"], label_bytes=1)
    np.testing.assert_array_equal(images, cifar["x_train"])
    np.testing.assert_array_equal(labels, cifar["y_train"])
    svhn = svhn_like(12, seed=0)
    write_svhn_mat(tmp_path / "test_32x32.mat", svhn["x_test"], svhn["y_test"])
    images, labels = read_svhn_mat(tmp_path / "test_32x32.mat")
    np.testing.assert_array_equal(images, svhn["x_test"])
    np.testing.assert_array_equal(labels, svhn["y_test"])

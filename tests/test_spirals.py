"""The spiral datasets D(omega) (UDN App. B.1, eqs. 15-18)."""

import numpy as np
import pytest
from scipy import stats

from bnnrepro.data.spirals import generate, sample_spiral

NOISE = 0.02


def splits(omega=4.0, seed=0, n=1024):
    return generate(omega, seed, n, n, n, NOISE)


def test_deterministic_for_a_seed():
    a, b = splits(seed=3), splits(seed=3)
    assert set(a.arrays) == {f"{v}_{s}" for v in "xy" for s in ("train", "val", "test")}
    for key in a.arrays:
        np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
    x1, y1 = sample_spiral(5.0, 100, NOISE, np.random.default_rng(7))
    x2, y2 = sample_spiral(5.0, 100, NOISE, np.random.default_rng(7))
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)


def test_differs_across_seeds_and_omegas():
    base = splits(omega=4.0, seed=0)
    for other in (splits(omega=4.0, seed=1), splits(omega=6.0, seed=0), splits(omega=4.001, seed=0)):
        assert not np.allclose(base.x("train"), other.x("train"))
    # each omega gets its own draw of (u, branch, noise), not the same draw bent differently:
    # with a shared draw the radii |x| ~ u and the labels would coincide across omegas
    other = splits(omega=6.0, seed=0)
    assert np.mean(base.y("train") == other.y("train")) < 0.6
    assert (
        np.mean(np.abs(np.linalg.norm(base.x("train"), axis=1) - np.linalg.norm(other.x("train"), axis=1)) < 0.05) < 0.5
    )
    # nor does seed s + 1 reuse seed s's validation sample (as the authors' code,
    # `ANazaret/unbounded-depth-neural-networks` `experiments/load_data.py`, does)
    assert not np.allclose(base.x("val"), splits(omega=4.0, seed=1).x("train"))


def test_shapes_and_types():
    data = splits()
    for split in ("train", "val", "test"):
        x, y = data.x(split), data.y(split)
        assert x.shape == (1024, 2) and x.dtype == np.float32
        assert y.shape == (1024,) and y.dtype == np.int64
        assert set(np.unique(y).tolist()) == {0, 1}
    assert data.spec("classification").num_features == 2
    assert data.spec("classification").num_classes == 2


def test_splits_are_different_samples():
    data = splits()
    xs = [data.x(s) for s in ("train", "val", "test")]
    for i in range(3):
        for j in range(i + 1, 3):
            assert not np.allclose(xs[i], xs[j])
            # no point is shared between splits
            assert not set(map(tuple, xs[i].tolist())) & set(map(tuple, xs[j].tolist()))


@pytest.mark.parametrize("omega", [0.0, 10.0, 30.0])
def test_labels_balanced(omega):
    _, y = sample_spiral(omega, 4000, NOISE, np.random.default_rng(11))
    assert abs(y.mean() - 0.5) < 0.05


def test_omega_zero_is_a_noisy_segment_on_the_x_axis():
    x, y = sample_spiral(0.0, 4000, NOISE, np.random.default_rng(0))
    x = x.astype(np.float64)
    # x2 is pure noise N(0, 0.02^2)
    assert abs(x[:, 1].mean()) < 4 * NOISE / np.sqrt(4000)
    assert x[:, 1].std() == pytest.approx(NOISE, rel=0.05)
    assert stats.kstest(x[:, 1] / NOISE, "norm").pvalue > 1e-3
    # x1 = y u + noise: the sign gives the branch (label 1 for y = +1), away from the origin
    far = np.abs(x[:, 0]) > 5 * NOISE
    np.testing.assert_array_equal((x[far, 0] > 0).astype(np.int64), y[far])
    # u = sqrt(t): P(u <= r) = r^2, so |x1| (up to noise) has cdf r^2 on [0, 1]
    ks = stats.kstest(np.clip(np.abs(x[:, 0]), 0, 1), lambda r: np.clip(r, 0, 1) ** 2)
    assert ks.statistic < 0.03


@pytest.mark.parametrize("omega", [0.0, 4.0, 17.0, 30.0])
def test_points_near_their_branch_of_the_spiral(omega):
    x, y = sample_spiral(omega, 600, NOISE, np.random.default_rng(1))
    x = x.astype(np.float64)
    assert np.all(np.linalg.norm(x, axis=1) <= 1 + 5 * NOISE)
    # distance to the noiseless curve of the point's own branch, y u [cos(omega u pi/2), sin(omega u pi/2)]
    u = np.linspace(0, 1, 6001)  # spacing along the curve <= 24 / 6000 at omega = 30
    angle = omega * u * np.pi / 2
    curve = np.stack([u * np.cos(angle), u * np.sin(angle)], axis=1)
    branch = np.where(y == 1, 1.0, -1.0)[:, None, None]
    distance = np.linalg.norm(x[:, None, :] - branch * curve[None, :, :], axis=2).min(axis=1)
    # at most the noise norm, Rayleigh(0.02): P(> 0.1) = exp(-12.5) ~ 4e-6, median 0.02 sqrt(2 ln 2) = 0.0235
    assert distance.max() < 0.1
    assert np.median(distance) < 0.0235 * 1.15
    # the other branch is far for most points (the labels are not swapped)
    other = np.linalg.norm(x[:, None, :] + branch * curve[None, :, :], axis=2).min(axis=1)
    assert np.mean(other > distance) > 0.6

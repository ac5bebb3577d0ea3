"""Synthetic data generators: toy regressions, 2D classification, sampling targets, Lotka-Volterra and Lorenz."""

import time
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.integrate import solve_ivp

from bnnrepro.data import classification_2d, dynamics, sampling_targets, toy_regression
from bnnrepro.data.spec import SPLITS, Splits

GENERATORS = {
    "sdebnn_toy": toy_regression.generate_sdebnn_toy,
    "repulsive_toy": toy_regression.generate_repulsive_toy,
    "classification_2d": classification_2d.generate,
    "gaussian": sampling_targets.generate_gaussian,
    "funnel": sampling_targets.generate_funnel,
    "lotka_volterra": dynamics.generate_lotka_volterra,
    "lorenz": dynamics.generate_lorenz,
}
KEYS = {f"{v}_{s}" for v in "xy" for s in SPLITS}


@pytest.fixture(scope="module")
def paper_size():
    """Every generator at its default (paper) size, seeds 0 and 1."""
    return {name: (gen(seed=0), gen(seed=0), gen(seed=1)) for name, gen in GENERATORS.items()}


@pytest.mark.parametrize("name", GENERATORS)
def test_deterministic_per_seed_and_different_across_seeds(paper_size, name):
    a, b, other = paper_size[name]
    assert set(a.arrays) == KEYS
    for key in KEYS:
        np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
    assert not np.array_equal(a.x("train"), other.x("train")) or not np.array_equal(a.y("train"), other.y("train"))


@pytest.mark.parametrize("name", GENERATORS)
def test_saved_file_round_trips(paper_size, name, tmp_path):
    data = paper_size[name][0]
    data.save(tmp_path / "d.npz")
    loaded = Splits.load(tmp_path / "d.npz")
    for key in KEYS:
        np.testing.assert_array_equal(loaded.arrays[key], data.arrays[key])
        assert loaded.arrays[key].dtype == data.arrays[key].dtype


def test_shapes_and_dtypes(paper_size):
    def shapes(name):
        data = paper_size[name][0]
        for key, array in data.arrays.items():
            assert array.dtype == (np.int64 if name == "classification_2d" and key[0] == "y" else np.float32), key
        return {key: data.arrays[key].shape for key in sorted(KEYS)}

    assert shapes("sdebnn_toy") == {
        "x_train": (40, 1), "y_train": (40, 1), "x_val": (0, 1), "y_val": (0, 1), "x_test": (200, 1), "y_test": (200, 1)
    }  # fmt: skip
    assert shapes("repulsive_toy") == {
        "x_train": (90, 1), "y_train": (90, 1), "x_val": (100, 1), "y_val": (100, 1), "x_test": (100, 1),
        "y_test": (100, 1),
    }  # fmt: skip
    assert shapes("classification_2d") == {
        "x_train": (200, 2), "y_train": (200,), "x_val": (0, 2), "y_val": (0,), "x_test": (100, 2), "y_test": (100,)
    }  # fmt: skip
    assert shapes("gaussian") == {
        "x_train": (100, 2), "y_train": (100, 0), "x_val": (0, 2), "y_val": (0, 0), "x_test": (4000, 2),
        "y_test": (4000, 0),
    }  # fmt: skip
    assert shapes("funnel") == {
        "x_train": (500, 2), "y_train": (500, 0), "x_val": (0, 2), "y_val": (0, 0), "x_test": (1000, 2),
        "y_test": (1000, 0),
    }  # fmt: skip
    assert shapes("lotka_volterra") == {
        "x_train": (10, 50, 3), "y_train": (10, 50, 2), "x_val": (0, 50, 3), "y_val": (0, 50, 2),
        "x_test": (10, 50, 3), "y_test": (10, 50, 2),
    }  # fmt: skip
    assert shapes("lorenz") == {
        "x_train": (20, 24, 4), "y_train": (20, 24, 3), "x_val": (0, 24, 4), "y_val": (0, 24, 3),
        "x_test": (20, 24, 4), "y_test": (20, 24, 3),
    }  # fmt: skip


# --- toy regressions -------------------------------------------------------------------------------------------


def test_sdebnn_toy_matches_the_cos_formula_without_noise():
    data = toy_regression.generate_sdebnn_toy(seed=0, noise_std=0.0)
    x, y = data.x("train")[:, 0].astype(np.float64), data.y("train")[:, 0]
    raw = 4 * x + 4  # inputs were rescaled by (x - 4) / 4
    np.testing.assert_allclose(raw, np.r_[np.linspace(0, 2, 20), np.linspace(6, 8, 20)], atol=1e-6)
    np.testing.assert_allclose(y, np.cos(raw), atol=1e-6)
    # a few points by hand: cos(0) = 1 at x = -1, cos(2) at x = -0.5, cos(6) at x = 0.5, cos(8) at x = 1
    np.testing.assert_allclose(x[[0, 19, 20, 39]], [-1, -0.5, 0.5, 1], atol=1e-7)
    np.testing.assert_allclose(y[[0, 19, 20, 39]], np.cos([0.0, 2.0, 6.0, 8.0]), atol=1e-6)
    # the test grid: noise-free cos on raw [-2, 10], i.e. [-1.5, 1.5]
    xt, yt = data.x("test")[:, 0].astype(np.float64), data.y("test")[:, 0]
    np.testing.assert_allclose(xt[[0, -1]], [-1.5, 1.5])
    assert np.all(np.diff(xt) > 0)
    np.testing.assert_allclose(yt, np.cos(4 * xt + 4), atol=1e-6)


def test_sdebnn_toy_noise_and_validation_fraction():
    data = toy_regression.generate_sdebnn_toy(seed=3, n_train=20000)
    residual = data.y("train")[:, 0] - toy_regression.sdebnn_true_function(data.x("train")[:, 0].astype(np.float64))
    assert abs(residual.mean()) < 4 * 0.1 / np.sqrt(20000)
    assert residual.std() == pytest.approx(0.1, rel=0.03)
    held = toy_regression.generate_sdebnn_toy(seed=3, val_fraction=0.1)
    assert len(held.x("val")) == 4 and len(held.x("train")) == 36
    full = toy_regression.generate_sdebnn_toy(seed=3)
    together = np.sort(np.r_[held.x("train")[:, 0], held.x("val")[:, 0]])
    np.testing.assert_array_equal(together, np.sort(full.x("train")[:, 0]))


def test_repulsive_toy_matches_x_sin_x_without_noise():
    data = toy_regression.generate_repulsive_toy(seed=0, noise_std=0.0)
    x, y = data.x("train")[:, 0].astype(np.float64), data.y("train")[:, 0]
    np.testing.assert_allclose(y, x * np.sin(x), atol=1e-5)
    assert np.all((x[:45] >= 1.5) & (x[:45] <= 2.5)) and np.all((x[45:] >= 4.5) & (x[45:] <= 6.0))
    xt, yt = data.x("test")[:, 0], data.y("test")[:, 0]
    np.testing.assert_allclose(xt[[0, -1]], [0.0, 7.0])
    np.testing.assert_allclose(yt[[0, -1]], [0.0, 7 * np.sin(7.0)], atol=1e-5)
    np.testing.assert_allclose(yt, xt.astype(np.float64) * np.sin(xt.astype(np.float64)), atol=1e-5)
    xv, yv = data.x("val")[:, 0].astype(np.float64), data.y("val")[:, 0]
    np.testing.assert_allclose(xv[[0, -1]], [2.0, 6.0])
    np.testing.assert_allclose(yv, xv * np.sin(xv), atol=1e-5)
    assert toy_regression.generate_repulsive_toy(seed=0, n_val=0).x("val").shape == (0, 1)


def test_repulsive_toy_noise_and_cluster_distribution():
    data = toy_regression.generate_repulsive_toy(seed=5, n_train=20000)
    x = data.x("train")[:, 0].astype(np.float64)
    residual = data.y("train")[:, 0] - x * np.sin(x)
    assert residual.std() == pytest.approx(0.25, rel=0.03)
    assert abs(residual.mean()) < 4 * 0.25 / np.sqrt(20000)
    assert stats.kstest(x[:10000], stats.uniform(1.5, 1.0).cdf).pvalue > 1e-3
    assert stats.kstest(x[10000:], stats.uniform(4.5, 1.5).cdf).pvalue > 1e-3


# --- 2D classification ---------------------------------------------------------------------------------------------


def test_classification_blobs_on_a_circle():
    means = classification_2d.class_means()
    np.testing.assert_allclose(means[0], [0.0, 5.0], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(means, axis=1), 5.0)
    data = classification_2d.generate(seed=2, n_train_per_class=20000)
    x, y = data.x("train").astype(np.float64), data.y("train")
    assert np.array_equal(np.bincount(y), [20000] * 5)
    for k in range(5):
        points = x[y == k]
        np.testing.assert_allclose(points.mean(0), means[k], atol=4 / np.sqrt(20000))
        np.testing.assert_allclose(np.cov(points.T), np.eye(2), atol=0.04)
    # every test point is nearest its own class mean far more often than not (classes overlap little)
    test_x, test_y = data.x("test"), data.y("test")
    nearest = np.argmin(np.linalg.norm(test_x[:, None, :] - means[None], axis=2), axis=1)
    assert np.mean(nearest == test_y) > 0.9


def test_classification_grid_and_ood():
    grid = classification_2d.input_grid()
    assert grid.shape == (90000, 2) and grid.dtype == np.float32
    np.testing.assert_allclose([grid.min(), grid.max()], [-20.0, 20.0])
    ood = classification_2d.sample_ood(np.random.default_rng(0), n_center=20000, n_ring=20000)
    center, ring = ood[:20000].astype(np.float64), ood[20000:].astype(np.float64)
    np.testing.assert_allclose(np.cov(center.T), 0.4 * np.eye(2), atol=0.02)
    r = np.linalg.norm(ring, axis=1)
    assert r.min() >= 11 - 1e-4 and r.max() <= 30 + 1e-4
    # uniform in area: r^2 uniform on [121, 900]
    assert stats.kstest(r**2, stats.uniform(121, 900 - 121).cdf).pvalue > 1e-3


# --- sampling targets ----------------------------------------------------------------------------------------------


def test_gaussian_log_density_against_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5, 2)) * 3
    ours = sampling_targets.gaussian_log_density(torch.as_tensor(x)).numpy()
    target = stats.multivariate_normal(sampling_targets.GAUSSIAN_MEAN, sampling_targets.GAUSSIAN_COV)
    np.testing.assert_allclose(ours, target.logpdf(x), rtol=1e-10)
    # other parameters and dimension, float32 input
    a = rng.normal(size=(3, 3))
    mean, cov = rng.normal(size=3), a @ a.T + 0.5 * np.eye(3)
    y = rng.normal(size=(50, 3))
    ours = sampling_targets.gaussian_log_density(torch.as_tensor(y, dtype=torch.float32), mean, cov).numpy()
    np.testing.assert_allclose(ours, stats.multivariate_normal(mean, cov).logpdf(y), rtol=1e-4, atol=1e-4)


def test_gaussian_score_is_minus_precision_times_offset():
    x = torch.tensor([[0.3, -1.2], [2.0, 4.0]], dtype=torch.float64, requires_grad=True)
    sampling_targets.gaussian_log_density(x).sum().backward()
    precision = np.linalg.inv(np.array(sampling_targets.GAUSSIAN_COV))
    expected = -(x.detach().numpy() - np.array(sampling_targets.GAUSSIAN_MEAN)) @ precision
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-10)


def test_funnel_log_density_against_scipy():
    rng = np.random.default_rng(1)
    v = rng.normal(0, 3, size=200)
    xs = rng.normal(size=(200, 2)) * np.exp(v / 2)[:, None]
    points = np.c_[xs[:, :1], v]
    expected = stats.norm.logpdf(v, 0, 3) + stats.norm.logpdf(points[:, 0], 0, np.exp(v / 2))
    ours = sampling_targets.funnel_log_density(torch.as_tensor(points)).numpy()
    np.testing.assert_allclose(ours, expected, rtol=1e-10)
    # in 3 dimensions: two x's given the last coordinate v
    points3 = np.c_[xs, v]
    expected3 = stats.norm.logpdf(v, 0, 3) + stats.norm.logpdf(xs, 0, np.exp(v / 2)[:, None]).sum(1)
    np.testing.assert_allclose(sampling_targets.funnel_log_density(torch.as_tensor(points3)).numpy(), expected3)


def test_gaussian_samples_have_the_target_moments():
    n = 200_000
    samples = sampling_targets.sample_gaussian(n, np.random.default_rng(4))
    mean, cov = np.array(sampling_targets.GAUSSIAN_MEAN), np.array(sampling_targets.GAUSSIAN_COV)
    assert np.all(np.abs(samples.mean(0) - mean) < 4 * np.sqrt(np.diag(cov) / n))
    np.testing.assert_allclose(np.cov(samples.T), cov, atol=0.03)
    # the data file's reference samples and initial particles
    data = sampling_targets.generate_gaussian(seed=0, n_particles=50_000, n_reference=50_000)
    np.testing.assert_allclose(data.x("test").mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(data.x("test").T), cov, atol=0.1)
    np.testing.assert_allclose(data.x("train").mean(0), [-1.0, 5.0], atol=0.02)
    np.testing.assert_allclose(np.cov(data.x("train").T), 0.5 * np.eye(2), atol=0.02)


def test_funnel_samples_have_the_stated_marginals():
    n = 200_000
    samples = sampling_targets.sample_funnel(n, np.random.default_rng(5))
    x, v = samples[:, 0], samples[:, 1]
    # v ~ N(0, 3^2)
    assert abs(v.mean()) < 4 * 3 / np.sqrt(n)
    assert v.var() == pytest.approx(9.0, rel=0.02)
    assert abs(stats.skew(v)) < 0.03 and abs(stats.kurtosis(v)) < 0.05
    # x | v ~ N(0, e^v): x e^{-v/2} is standard normal and independent of v
    z = x * np.exp(-v / 2)
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert z.var() == pytest.approx(1.0, rel=0.02)
    assert abs(np.corrcoef(z, v)[0, 1]) < 0.01 and abs(np.corrcoef(z**2, v)[0, 1]) < 0.01
    # conditional variance in bins of v: E[x^2 | v] = e^v
    for lo in (-3.0, 0.0, 3.0):
        in_bin = (v > lo) & (v < lo + 0.2)
        assert np.mean(x[in_bin] ** 2) / np.mean(np.exp(v[in_bin])) == pytest.approx(1.0, rel=0.1)
    data = sampling_targets.generate_funnel(seed=0, n_particles=50_000)
    assert data.x("train").std(0) == pytest.approx([5.0, 5.0], rel=0.02)


# --- Lotka-Volterra ------------------------------------------------------------------------------------------------


def test_drifts_are_the_thesis_equations():
    # Lotka-Volterra, theta = (2, 1, 4, 1): (2x - xy, -4y + xy)
    np.testing.assert_allclose(dynamics.lotka_volterra_drift(3.0, 0.5), (2 * 3 - 1.5, -4 * 0.5 + 1.5))
    # Lorenz, sigma = 10, rho = 28, beta = 8/3: (10(y - x), x(28 - z) - y, xy - 8z/3)
    np.testing.assert_allclose(dynamics.lorenz_drift(1.0, 2.0, 3.0), (10.0, 23.0, 2.0 - 8.0))
    assert dynamics.LORENZ_X0 == (1.0, 1.0, 28.0) and dynamics.LV_DIFFUSION == (0.2, 0.3)


def solve_lotka_volterra_ode(
    t: np.ndarray, x0: Sequence[float] = dynamics.LV_X0, theta: Sequence[float] = dynamics.LV_THETA, rtol: float = 1e-10
) -> np.ndarray:
    """Noise-free Lotka-Volterra solved to tolerance (scipy, DOP853) at times t; states [len(t), 2]."""
    sol = solve_ivp(
        lambda _, s: dynamics.lotka_volterra_drift(s[0], s[1], theta),
        (float(t[0]), float(t[-1])),
        np.asarray(x0, dtype=np.float64),
        method="DOP853",
        t_eval=t,
        rtol=rtol,
        atol=rtol,
    )
    return sol.y.T


def lotka_volterra_invariant(states: np.ndarray, theta: Sequence[float] = dynamics.LV_THETA) -> np.ndarray:
    """V = t4 x - t3 ln x + t2 y - t1 ln y, constant along every noise-free orbit."""
    t1, t2, t3, t4 = theta
    x, y = states[..., 0], states[..., 1]
    return t4 * x - t3 * np.log(x) + t2 * y - t1 * np.log(y)


def test_lotka_volterra_invariant_is_conserved_by_the_ode():
    t = np.linspace(0, 10, 1001)
    for x0 in [(5.0, 2.0), (1.0, 1.0), (8.0, 0.5)]:
        states = solve_lotka_volterra_ode(t, x0)
        invariant = lotka_volterra_invariant(states)
        assert np.ptp(invariant) < 1e-7
        assert np.ptp(states[:, 0]) > 0.5  # it does move
    # the noise-free EM path (Euler, dt = 1e-4) conserves V to O(dt) and follows the ODE solution
    t, euler = dynamics.simulate_lotka_volterra(None, diffusion=(0.0, 0.0))
    assert t.shape == (1000,) and t[-1] == pytest.approx(9.99)
    invariant = lotka_volterra_invariant(euler)
    assert np.ptp(invariant) < 2e-3
    np.testing.assert_allclose(euler, solve_lotka_volterra_ode(t), atol=1e-2)


def test_lotka_volterra_noise_per_step():
    dt, n = 1e-4, 50_000
    _, path = dynamics.simulate_lotka_volterra(np.random.default_rng(0), dt=dt, n_steps=n, subsample=1)
    drift = np.stack(dynamics.lotka_volterra_drift(path[:-1, 0], path[:-1, 1]), axis=1)
    noise = np.diff(path, axis=0) - drift * dt
    np.testing.assert_allclose(noise.var(0) / dt, [0.2**2, 0.3**2], rtol=0.03)
    assert abs(np.corrcoef(noise.T)[0, 1]) < 0.02


def test_lotka_volterra_data_layout():
    data = dynamics.generate_lotka_volterra(seed=0)
    x_train, x_test = data.x("train").astype(np.float64), data.x("test").astype(np.float64)
    np.testing.assert_array_equal(data.y("train"), data.x("train")[..., :2])
    np.testing.assert_array_equal(data.y("test"), data.x("test")[..., :2])
    np.testing.assert_allclose(x_train.reshape(-1, 3)[:, 2], 0.01 * np.arange(500), atol=1e-5)
    np.testing.assert_allclose(x_test.reshape(-1, 3)[:, 2], 0.01 * np.arange(500, 1000), atol=1e-5)
    np.testing.assert_allclose(x_train[0, 0, :2], dynamics.LV_X0)
    for seed in range(5):
        states = dynamics.generate_lotka_volterra(seed=seed).y("train")
        assert np.all(states > 0)


def test_lotka_volterra_redraws_paths_that_leave_the_positive_quadrant():
    # from (0.01, 0.01) the noise makes every path negative within the first observations
    with pytest.raises(RuntimeError, match="no positive"):
        dynamics.generate_lotka_volterra(seed=0, x0_prey=0.01, x0_predator=0.01, max_tries=3)


# --- stochastic Lorenz ---------------------------------------------------------------------------------------------


def _lorenz_reference(t):
    rhs = lambda _, u: dynamics.lorenz_drift(*u)  # noqa: E731
    return solve_ivp(rhs, (0, t[-1]), dynamics.LORENZ_X0, "DOP853", t_eval=t, rtol=1e-11, atol=1e-11).y.T


def test_noise_free_lorenz_matches_solve_ivp():
    t, euler = dynamics.simulate_stochastic_lorenz(None, diffusion=0.0, n_steps=9000)
    assert t[-1] == pytest.approx(0.89)
    np.testing.assert_array_equal(euler[0], dynamics.LORENZ_X0)
    reference = _lorenz_reference(t)
    error = np.abs(euler - reference).max()
    assert error < 0.1  # |state| is up to 40
    # Euler is first order: halving the step halves the error
    _, finer = dynamics.simulate_stochastic_lorenz(None, diffusion=0.0, dt=5e-5, n_steps=18000, subsample=200)
    assert error / np.abs(finer - reference).max() == pytest.approx(2.0, rel=0.1)


def test_lorenz_increments_have_variance_dt():
    dt, n = 1e-4, 20_000
    _, path = dynamics.simulate_stochastic_lorenz(np.random.default_rng(1), dt=dt, n_steps=n, subsample=1)
    drift = np.stack(dynamics.lorenz_drift(*path[:-1].T), axis=1)
    noise = np.diff(path, axis=0) - drift * dt
    np.testing.assert_allclose(noise.var(0) / dt, 1.0, rtol=0.04)
    np.testing.assert_allclose(noise.mean(0), 0.0, atol=4 * np.sqrt(dt / n))
    correlation = np.corrcoef(noise.T)
    assert np.abs(correlation[np.triu_indices(3, 1)]).max() < 0.03
    assert abs(np.corrcoef(noise[:-1, 0], noise[1:, 0])[0, 1]) < 0.03  # independent across steps
    _, path2 = dynamics.simulate_stochastic_lorenz(
        np.random.default_rng(1), dt=dt, n_steps=n, subsample=1, diffusion=2.0
    )
    drift2 = np.stack(dynamics.lorenz_drift(*path2[:-1].T), axis=1)
    np.testing.assert_allclose((np.diff(path2, axis=0) - drift2 * dt).var(0) / dt, 4.0, rtol=0.04)


def test_vectorised_paths_equal_single_paths():
    x0 = np.array([[1.0, 1.0, 28.0], [-3.0, 2.0, 20.0]])
    _, batch = dynamics.simulate_stochastic_lorenz(np.random.default_rng(7), x0=x0, n_steps=3000)
    assert batch.shape == (30, 2, 3)
    _, single = dynamics.simulate_stochastic_lorenz(np.random.default_rng(7), x0=x0[:1], n_steps=3000)
    _, flat = dynamics.simulate_stochastic_lorenz(np.random.default_rng(7), n_steps=3000)
    np.testing.assert_allclose(single[:, 0], flat, rtol=1e-12)
    # noise-free: each path of the batch is the path from its own start
    _, batch = dynamics.simulate_stochastic_lorenz(None, x0=x0, diffusion=0.0, n_steps=3000)
    for b in range(2):
        _, alone = dynamics.simulate_stochastic_lorenz(None, x0=x0[b], diffusion=0.0, n_steps=3000)
        np.testing.assert_allclose(batch[:, b], alone, rtol=1e-12)


def test_lorenz_data_layout():
    data = dynamics.generate_lorenz(seed=0)
    x_train, x_test = data.x("train").astype(np.float64), data.x("test").astype(np.float64)
    np.testing.assert_array_equal(data.y("train"), data.x("train")[..., :3])
    np.testing.assert_allclose(x_train[0, 0], [1.0, 1.0, 28.0, 0.0])
    # contiguous windows: train t = 0, 0.01, ..., 4.79; test from t = 10 (the second half of 2000 observations)
    np.testing.assert_allclose(x_train.reshape(-1, 4)[:, 3], 0.01 * np.arange(480), atol=1e-5)
    np.testing.assert_allclose(x_test.reshape(-1, 4)[:, 3], 10 + 0.01 * np.arange(480), atol=1e-5)
    # on the attractor, not diverged
    assert np.all(np.abs(data.y("test")) < 80)
    # the appendix's layout and a validation split
    appendix = dynamics.generate_lorenz(seed=0, train_len=50, n_test=10, test_len=100, n_val=0)
    assert appendix.x("train").shape == (20, 50, 4) and appendix.x("test").shape == (10, 100, 4)
    np.testing.assert_array_equal(appendix.x("train").reshape(-1, 4)[:480], data.x("train").reshape(-1, 4))
    with_val = dynamics.generate_lorenz(seed=0, n_val=5)
    np.testing.assert_allclose(with_val.x("val")[0, 0, 3], 4.8, atol=1e-5)
    with pytest.raises(ValueError, match="overlap"):
        dynamics.generate_lorenz(seed=0, test_start=400)
    with pytest.raises(ValueError, match="do not fit"):
        dynamics.generate_lorenz(seed=0, test_start=1990)


@pytest.mark.slow
def test_lorenz_at_the_code_size_is_fast():
    start = time.perf_counter()
    data = dynamics.generate_lorenz(seed=0, n_steps=1_000_000, test_start=480)
    assert time.perf_counter() - start < 10
    np.testing.assert_allclose(data.x("test")[0, 0, 3], 4.8, atol=1e-5)

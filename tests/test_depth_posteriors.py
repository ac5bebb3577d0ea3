"""Distributions over the truncation depth (UDN §3.2, Theorem 3.2, Fig. 5) against scipy and reference tables."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from bnnrepro.errors import DivergedError
from bnnrepro.inference.depth_posteriors import (
    CategoricalDepth,
    FixedDepth,
    PointMassPrior,
    ShiftedPoissonPrior,
    TruncatedPoisson,
    UniformDepthPrior,
    expected_depth,
)
from bnnrepro.inference.poisson import poisson_quantile

# UDN paper Fig. 5 (App. A): m(q(k)) = 0.95-quantile of the unshifted Poisson(k), k = 1..70, and delta_k.
SPEC_FIG5_M = [
    3, 5, 6, 8, 9, 10, 12, 13, 14, 15, 17, 18, 19, 20, 22, 23, 24, 25, 26, 28, 29, 30, 31, 32, 33, 35, 36, 37, 38,
    39, 40, 42, 43, 44, 45, 46, 47, 48, 50, 51, 52, 53, 54, 55, 56, 57, 59, 60, 61, 62, 63, 64, 65, 66, 67, 69, 70,
    71, 72, 73, 74, 75, 76, 77, 79, 80, 81, 82, 83, 84,
]  # fmt: skip
SPEC_FIG5_DELTA = [
    2.0, 1.3, 1.6, 0.9, 1.2, 1.5, 0.8, 1.1, 1.4, 1.7, 1.0, 1.3, 1.6, 1.9, 1.2, 1.5, 1.8, 2.1, 2.4, 1.7, 2.0, 2.3,
    2.6, 2.9, 3.2, 2.5, 2.8, 3.1, 3.4, 3.7, 4.0, 3.3, 3.6, 3.9, 4.2, 4.5, 4.8, 5.1, 4.4, 4.7, 5.0, 5.3, 5.6, 5.9,
    6.2, 6.5, 5.8, 6.1, 6.4, 6.7, 7.0, 7.3, 7.6, 7.9, 8.2, 7.5, 7.8, 8.1, 8.4, 8.7, 9.0, 9.3, 9.6, 9.9, 9.2, 9.5,
    9.8, 10.1, 10.4, 10.7,
]  # fmt: skip

# lambda -> (m, E_q[l]) of TP(0.95) (UDN paper §3.2), in the authors' code's
# (`ANazaret/unbounded-depth-neural-networks`, `src/models.py`) convention.
SPEC_TABLE = {
    0.5: (3, 1.462),
    1.0: (4, 1.938),
    1.5: (5, 2.428),
    2.0: (6, 2.927),
    3.0: (7, 3.844),
    5.0: (10, 5.813),
    10.0: (16, 10.635),
    15.0: (23, 15.684),
    20.0: (29, 20.624),
    25.0: (34, 25.43),
}


def rate_of(q):
    return float(q.rate.detach())


def probs_of(q):
    return q.log_probs(q.max_depth()).detach().double().exp().numpy()


def reference_pmf(lam, quantile=0.95):
    """Shifted truncated Poisson on l = 1..m from scipy: m - 1 = max(Q_delta(lam), floor(lam) + 1)."""
    top = max(int(stats.poisson.ppf(quantile, lam)), math.floor(lam) + 1)
    unshifted = np.arange(top + 1)
    pmf = stats.poisson.pmf(unshifted, lam)
    return pmf / pmf.sum()


# --- poisson_quantile -------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_poisson_quantile_matches_scipy(level):
    rates = np.linspace(0.01, 150, 200)
    ours = [poisson_quantile(float(r), level) for r in rates]
    reference = stats.poisson.ppf(level, rates).astype(int).tolist()
    assert ours == reference


def test_poisson_quantile_matches_scipy_near_jumps():
    # Rates just below and above the points where the 0.95-quantile jumps (cdf(k; lam) = 0.95).
    from scipy.optimize import brentq

    for k in range(1, 40):
        jump = brentq(lambda lam, k=k: stats.poisson.cdf(k, lam) - 0.95, 1e-6, 100)
        for lam in (jump * (1 - 1e-6), jump * (1 + 1e-6)):
            assert poisson_quantile(lam, 0.95) == int(stats.poisson.ppf(0.95, lam)), (k, lam)


@pytest.mark.parametrize("rate", [0.0, -1.0, float("nan"), float("inf")])
def test_poisson_quantile_rejects_invalid_rate(rate):
    with pytest.raises((ValueError, RuntimeError)):
        poisson_quantile(rate, 0.95)


# --- Theorem 3.2 and Figure 5 -----------------------------------------------------------------------------


def test_theorem_3_2_bounds_eq_11():
    lams = np.linspace(0.01, 100, 10_000)
    m = np.array([poisson_quantile(float(lam), 0.95) for lam in lams])
    assert np.all(lams - math.log(2) <= m)
    assert np.all(m <= 1.3 * lams + 5)


def test_truncated_poisson_support_is_shifted_quantile():
    for lam in np.linspace(0.01, 100, 1500):
        q = TruncatedPoisson(initial_rate=float(lam))
        rate = rate_of(q)
        assert rate == pytest.approx(lam, rel=1e-5)
        m = int(stats.poisson.ppf(0.95, rate))  # the theorem's (unshifted) m
        assert q.max_depth() == max(m, math.floor(rate) + 1) + 1, lam
        # the support is the shifted quantile; the theorem's bounds hold for it shifted by one
        assert rate - math.log(2) + 1 <= q.max_depth() <= 1.3 * rate + 5 + 1


def test_floor_guard_only_matters_for_tiny_rates():
    threshold = -math.log(0.95)  # = 0.0513: P(X = 0) < 0.95 iff lambda > threshold
    assert threshold < 0.052
    for lam in np.linspace(0.052, 100, 20_000):
        m = poisson_quantile(float(lam), 0.95)
        assert max(m, math.floor(lam) + 1) == m, lam
    # and it does matter below the threshold (m = 0 there, support kept at two depths)
    for lam in (0.001, 0.01, 0.05):
        assert poisson_quantile(lam, 0.95) == 0
        assert TruncatedPoisson(lam).max_depth() == 2


@pytest.mark.parametrize("quantile", [0.5, 0.8, 0.99])
def test_truncated_poisson_other_quantiles(quantile):
    for lam in (0.3, 1.0, 2.7, 8.0, 31.0):
        q = TruncatedPoisson(lam, quantile)
        rate = rate_of(q)
        expected = max(int(stats.poisson.ppf(quantile, rate)), math.floor(rate) + 1) + 1
        assert q.max_depth() == expected
        np.testing.assert_allclose(probs_of(q), reference_pmf(rate, quantile), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("quantile", [0.49, 1.0])
def test_truncated_poisson_rejects_bad_quantile(quantile):
    with pytest.raises(ValueError):
        TruncatedPoisson(1.0, quantile)


def test_theorem_3_2_mode_eq_12():
    for n in range(1, 200):
        q = TruncatedPoisson(n + 0.5)
        log_probs = q.log_probs(q.max_depth()).detach()
        # shifted: depth l = n + 1 carries the unshifted value n
        assert int(torch.argmax(log_probs)) + 1 == n + 1, n
        # a strict maximum: neighbours are lower
        assert log_probs[n] > log_probs[n - 1] and log_probs[n] > log_probs[n + 1]


def test_figure_5_values():
    ks = np.arange(1, 71)
    m = [poisson_quantile(float(k), 0.95) for k in ks]
    assert m == SPEC_FIG5_M
    assert m == stats.poisson.ppf(0.95, ks).astype(int).tolist()
    delta = (1.3 * (ks - 1) + 5) - np.array(m)
    np.testing.assert_allclose(delta, SPEC_FIG5_DELTA, atol=1e-9)
    assert np.all(delta >= 0)
    assert delta.min() == pytest.approx(0.8)
    assert int(ks[np.argmin(delta)]) == 7


# --- TruncatedPoisson probabilities -----------------------------------------------------------------------


def test_truncated_poisson_lambda_one_pmf():
    q = TruncatedPoisson(initial_rate=1.0)
    assert rate_of(q) == pytest.approx(1.0, abs=1e-6)
    assert q.max_depth() == 4
    np.testing.assert_allclose(probs_of(q), [0.375, 0.375, 0.1875, 0.0625], atol=1e-6)
    assert expected_depth(q.log_probs(4).detach()) == pytest.approx(1.9375, abs=1e-5)


@pytest.mark.parametrize("lam", sorted(SPEC_TABLE))
def test_truncated_poisson_spec_table(lam):
    m, mean = SPEC_TABLE[lam]
    q = TruncatedPoisson(initial_rate=lam)
    assert rate_of(q) == pytest.approx(lam, rel=1e-6)
    assert q.max_depth() == m
    log_probs = q.log_probs(q.max_depth()).detach()
    assert log_probs.shape == (m,)
    assert expected_depth(log_probs) == pytest.approx(mean, abs=5e-4 + 1e-5)
    # and against scipy
    pmf = reference_pmf(rate_of(q))
    np.testing.assert_allclose(log_probs.double().exp().numpy(), pmf, rtol=1e-4, atol=1e-8)
    assert float((np.arange(1, m + 1) * pmf).sum()) == pytest.approx(mean, abs=5e-4 + 1e-9)


@pytest.mark.parametrize("lam", [0.02, 0.7, 4.3, 12.9, 47.0, 80.5])
def test_truncated_poisson_log_probs_against_scipy(lam):
    q = TruncatedPoisson(lam)
    log_probs = q.log_probs(q.max_depth()).detach().double().numpy()
    pmf = reference_pmf(rate_of(q))
    assert log_probs.shape == pmf.shape
    assert np.exp(log_probs).sum() == pytest.approx(1.0, abs=1e-5)
    big = pmf > 1e-12
    np.testing.assert_allclose(log_probs[big], np.log(pmf[big]), atol=2e-3, rtol=1e-4)


def test_truncated_poisson_rate_is_differentiable_softplus():
    q = TruncatedPoisson(2.5)
    assert rate_of(q) == pytest.approx(float(torch.nn.functional.softplus(q.rho.detach())))
    expected_depth_t = (q.log_probs(q.max_depth()).exp() * torch.arange(1, q.max_depth() + 1)).sum()
    expected_depth_t.backward()
    assert q.rho.grad is not None and float(q.rho.grad) > 0  # E_q[l] increases with lambda


# --- other families and priors ----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 3, 7])
def test_fixed_depth_is_point_mass(depth):
    q = FixedDepth(depth)
    assert q.max_depth() == depth
    probs = q.log_probs(depth).exp()
    expected = torch.zeros(depth)
    expected[depth - 1] = 1.0
    torch.testing.assert_close(probs, expected)
    assert expected_depth(q.log_probs(depth)) == pytest.approx(depth)


def test_fixed_depth_rejects_zero():
    with pytest.raises(ValueError):
        FixedDepth(0)


def test_categorical_depth():
    torch.manual_seed(0)
    q = CategoricalDepth(6)
    assert q.max_depth() == 6
    torch.testing.assert_close(q.log_probs(6).exp(), torch.full((6,), 1 / 6))  # initially uniform (DUN)
    logits = torch.randn(6)
    with torch.no_grad():
        q.logits.copy_(logits)
    probs = q.log_probs(6).exp().detach().double().numpy()
    reference = np.exp(logits.double().numpy()) / np.exp(logits.double().numpy()).sum()
    np.testing.assert_allclose(probs, reference, rtol=1e-5)
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)
    assert expected_depth(q.log_probs(6).detach()) == pytest.approx(float((np.arange(1, 7) * reference).sum()), 1e-5)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.7])
def test_shifted_poisson_prior_matches_scipy(alpha):
    prior = ShiftedPoissonPrior(alpha)
    depths = np.arange(1, 41)
    log_probs = prior.log_probs(40).double().numpy()
    np.testing.assert_allclose(log_probs, stats.poisson.logpmf(depths - 1, alpha), rtol=1e-5, atol=1e-5)
    assert np.exp(log_probs).sum() == pytest.approx(1.0, abs=1e-6)


def test_uniform_and_point_mass_priors():
    prior = UniformDepthPrior(10)
    assert prior.log_probs(10).exp().sum() == pytest.approx(1.0, abs=1e-6)
    torch.testing.assert_close(prior.log_probs(4), torch.full((4,), -math.log(10)))
    torch.testing.assert_close(PointMassPrior().log_probs(5), torch.zeros(5))


def test_expected_depth():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    assert expected_depth(torch.tensor(np.log(probs))) == pytest.approx(1 * 0.1 + 2 * 0.2 + 3 * 0.3 + 4 * 0.4)


def test_depth_limit_bounds_the_number_of_layers():
    # m(q) at lambda = 1 is 4 layers: allowed with depth_limit = 4, a divergence with depth_limit = 3
    assert TruncatedPoisson(1.0, depth_limit=4).max_depth() == 4
    with pytest.raises(DivergedError):
        TruncatedPoisson(1.0, depth_limit=3).max_depth()
    assert TruncatedPoisson(30.0, depth_limit=1000).max_depth() == max(int(stats.poisson.ppf(0.95, 30.0)), 31) + 1

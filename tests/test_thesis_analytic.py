"""Closed forms of the Haußmann (2021) thesis against numerical integrals and independent implementations: the
expected KL over VBP's binary activations (§3.1.5.1, Prop. 2, eq. 3.9, Figs. 3.3 and 3.4), the entropy ECDF-AUC
(Table 5.2) and the Dirichlet KL of BEDL's PAC-Bayes regulariser (§5.3)."""

import math
from itertools import pairwise

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from scipy.integrate import quad

from bnnrepro.artifacts import thesis_vbp
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.distributions import dirichlet_kl_to_uniform
from bnnrepro.inference import activation_kl
from bnnrepro.inference.activation_kl import expected_activation_kl, sampled_expected_activation_kl
from bnnrepro.metrics import entropy_ecdf_auc

matplotlib.use("Agg")

SIGMAS = (0.1, 0.5, 1.0, 2.0, 3.0)


def normal_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def gaussian_expectation(f, mu: float, sigma: float) -> float:
    """E[f(a)], a ~ N(mu, sigma^2), by quadrature over z = (a - mu) / sigma, split at the kink a = 0 and at the mode
    z = 0 (so that no semi-infinite piece misses the mass of a distant mode)."""
    integrand = lambda z: f(mu + sigma * z) * normal_pdf(z)  # noqa: E731
    edges = [-np.inf, *sorted({-mu / sigma, 0.0}), np.inf]
    tolerances = {"epsabs": 1e-13, "epsrel": 1e-12, "limit": 200}
    return sum(quad(integrand, low, high, **tolerances)[0] for low, high in pairwise(edges))


def exact_softplus_kl(mu: float, sigma: float, c: float) -> float:
    """Prop. 2's E[soft(C a)] - soft(C mu) by quadrature."""
    return gaussian_expectation(lambda a: np.logaddexp(0, c * a), mu, sigma) - np.logaddexp(0, c * mu)


def mc_error_bound(sigma: float, c: float, num_samples: int) -> float:
    """Four standard errors of a sample mean of soft(C a): soft is 1-Lipschitz, so sd[soft(C a)] <= C sigma."""
    return 4 * c * sigma / math.sqrt(num_samples)


# --- eq. (3.9) ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [1.0, 10.0])
@pytest.mark.parametrize("mu", [-5.0, -1.3, -0.05, 0.0, 0.2, 2.0, 5.0])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_eq_3_9_is_the_expected_relu_gap(mu, sigma, c):
    exact = gaussian_expectation(lambda a: max(0.0, c * a), mu, sigma) - max(0.0, c * mu)
    assert float(expected_activation_kl(mu, sigma, c)) == pytest.approx(exact, abs=1e-8)


def test_eq_3_9_broadcasts_and_is_the_thesis_form():
    mu, sigma = np.linspace(-5, 5, 201)[None, :], np.array(SIGMAS)[:, None]
    values = expected_activation_kl(mu, sigma, 2.0)
    t = mu / sigma
    literal = 2.0 * (mu * (0.5 * (1 + np.vectorize(math.erf)(t / math.sqrt(2)))) + sigma * np.exp(-t**2 / 2)
                     / math.sqrt(2 * math.pi) - np.maximum(0, mu))  # fmt: skip
    assert values.shape == (5, 201)
    np.testing.assert_allclose(values, literal, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="sigma"):
        expected_activation_kl(0.0, 0.0, 1.0)


# --- Monte Carlo form of Prop. 2 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mu", "sigma", "c"), [(0.0, 1.0, 1.0), (-2.0, 0.5, 1.0), (1.5, 2.0, 1.0), (0.3, 0.1, 10.0), (4.0, 3.0, 1.0)]
)
def test_sampled_matches_quadrature(mu, sigma, c):
    num_samples = 100_000
    sampled = sampled_expected_activation_kl(mu, sigma, c, num_samples, np.random.default_rng(1))
    assert float(sampled) == pytest.approx(exact_softplus_kl(mu, sigma, c), abs=mc_error_bound(sigma, c, num_samples))


def test_sampled_chunks_draw_one_stream(monkeypatch):
    """Chunked evaluation (here 2 samples at a time, the last chunk partial) equals one pass over the same draws."""
    mu, sigma = np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1.0, 3.0])
    eps = np.random.default_rng(3).standard_normal(101)
    direct = np.logaddexp(0, mu[:, None] + sigma[:, None] * eps).mean(-1) - np.logaddexp(0, mu)
    monkeypatch.setattr(activation_kl, "CHUNK_ELEMENTS", 7)
    chunked = sampled_expected_activation_kl(mu, sigma, 1.0, 101, np.random.default_rng(3))
    np.testing.assert_allclose(chunked, direct, rtol=0, atol=1e-12)


def test_sampled_is_below_eq_3_9_at_zero_mean():
    # soft(x) = max(0, x) + g(x), g(x) = log(1 + e^-|x|) in (0, log 2], with g(0) = log 2. So the exact form minus
    # eq. (3.9) is E[g(C a)] - g(C mu), which at mu = 0 is E[g(C a)] - log 2 < 0: the thesis' "smaller maxima".
    num_samples = 100_000
    sigmas = np.array(SIGMAS)
    sampled = sampled_expected_activation_kl(0.0, sigmas, 1.0, num_samples, np.random.default_rng(0))
    analytic = expected_activation_kl(0.0, sigmas, 1.0)
    assert (sampled + mc_error_bound(sigmas, 1.0, num_samples) < analytic).all()


def test_both_vanish_as_mu_grows():
    # Eq. (3.9) is C sigma (phi(t) - |t| Phi(-|t|)) ~ C sigma phi(t) / t^2 (t = mu / sigma): at |mu| = 5 sigma it is
    # 1.3e-7 of its peak for every sigma.
    sigmas = np.array(SIGMAS)
    assert (expected_activation_kl(5 * sigmas, sigmas, 1.0) < 1e-6 * expected_activation_kl(0.0, sigmas, 1.0)).all()
    assert (expected_activation_kl(-5 * sigmas, sigmas, 1.0) < 1e-6 * expected_activation_kl(0.0, sigmas, 1.0)).all()
    # The exact form decays on the wider scale max(sigma, 1 / C) (the "heavier tails"): by quadrature it is below
    # 1e-3 of its peak at |mu| = 10 max(sigma, 1 / C). The Monte Carlo estimate there is 0 up to its error, while
    # at mu = 0 it is more than ten times that error (sigma >= 0.5; at sigma = 0.1 the peak, 1e-3, is itself
    # within 1e6 samples' error).
    num_samples = 1_000_000
    for sigma in (0.5, 1.0, 2.0, 3.0):
        far = 10 * max(sigma, 1.0)
        assert exact_softplus_kl(far, sigma, 1.0) < 1e-3 * exact_softplus_kl(0.0, sigma, 1.0)
        sampled = sampled_expected_activation_kl(
            np.array([-far, 0.0, far]), sigma, 1.0, num_samples, np.random.default_rng(2)
        )
        bound = mc_error_bound(sigma, 1.0, num_samples)
        assert np.abs(sampled[[0, 2]]).max() < bound
        assert sampled[1] > 10 * bound


def test_softplus_relaxation_tightens_as_c_grows():
    # (soft(C a) - max(0, C a)) / C = g(C a) / C <= log 2 / C, so the relative gap between the exact form and
    # eq. (3.9), both divided by C, closes as C grows (exactly 0.72, 0.16, 0.017 at mu = 0, sigma = 1).
    mu = np.array([-1.0, 0.0, 1.0])
    gaps = []
    for c in (1.0, 10.0, 100.0):
        sampled = sampled_expected_activation_kl(mu, 1.0, c, 100_000, np.random.default_rng(0)) / c
        analytic = expected_activation_kl(mu, 1.0, c) / c
        gaps.append(np.abs(sampled - analytic) / analytic)
    assert (gaps[0] > gaps[1]).all() and (gaps[1] > gaps[2]).all()
    assert gaps[0].min() > 0.1 and gaps[2].max() < 0.03


# --- ECDF-AUC of predictive entropies ---------------------------------------------------------------------------


def test_entropy_ecdf_auc_is_the_area_under_the_ecdf():
    rng = np.random.default_rng(0)
    num_classes = 10
    concentrations = rng.choice([0.05, 0.5, 5.0, 50.0], size=300)[:, None] * np.ones(num_classes)
    probs = np.stack([rng.dirichlet(alpha) for alpha in concentrations])
    entropies = -np.where(probs > 0, probs * np.log(np.where(probs > 0, probs, 1)), 0).sum(-1)
    grid = np.linspace(0, math.log(num_classes), 400_001)
    ecdf = np.searchsorted(np.sort(entropies), grid, side="right") / len(entropies)
    area = np.trapezoid(ecdf, grid)
    assert entropy_ecdf_auc(torch.from_numpy(probs)) == pytest.approx(area, abs=1e-4)


def test_entropy_ecdf_auc_limits():
    uniform = torch.full((50, 10), 0.1, dtype=torch.float64)
    one_hot = torch.eye(5, dtype=torch.float64)[torch.arange(40) % 5]
    assert entropy_ecdf_auc(uniform) == pytest.approx(0.0, abs=1e-12)
    assert entropy_ecdf_auc(one_hot) == pytest.approx(math.log(5), abs=1e-12)
    with pytest.raises(ValueError, match=r"\[N, C\]"):
        entropy_ecdf_auc(torch.zeros(0, 10))


# --- Dirichlet KL -----------------------------------------------------------------------------------------------


def test_dirichlet_kl_to_uniform_matches_torch():
    generator = torch.Generator().manual_seed(0)
    alpha = (1.5 * torch.randn(7, 3, 6, generator=generator, dtype=torch.float64)).exp()
    expected = torch.distributions.kl_divergence(
        torch.distributions.Dirichlet(alpha), torch.distributions.Dirichlet(torch.ones_like(alpha))
    )
    kl = dirichlet_kl_to_uniform(alpha)
    assert kl.shape == (7, 3)
    torch.testing.assert_close(kl, expected, rtol=1e-10, atol=1e-10)
    assert float(dirichlet_kl_to_uniform(torch.ones(4, dtype=torch.float64))) == pytest.approx(0.0, abs=1e-12)


# --- Figures 3.3 and 3.4 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("artifact_id", ["thesis/fig3.3", "thesis/fig3.4"])
def test_figures_draw_at_smoke_scale(artifact_id):
    drawn = implementation(artifact_id)
    assert drawn.uses == "nothing"
    fig = drawn.draw(ArtifactContext(study=thesis_vbp.STUDY, scale="smoke"))
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].lines) == len(thesis_vbp.SIGMAS)
    plt.close(fig)


def test_fig3_4_note_gives_the_sample_count():
    note = implementation("thesis/fig3.4").note
    assert "1,000 samples" in note("smoke") and "1,000,000 samples" in note("paper")

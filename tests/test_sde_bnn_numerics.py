"""SDE-BNN numerics (Xu et al. 2022): the OU prior, q = p at initialisation, the path KL against Gaussian
moments, integration over the whole depth interval [0, 1], the STL estimator (eq. 12, Fig. 4) and the
stochastic adjoint against backprop through the solver."""

import math

import numpy as np
import pytest
import torch
import torchsde
from scipy.integrate import solve_ivp
from torch import nn
from torch.distributions import Normal, kl_divergence

from bnnrepro.distributions import RegressionLikelihood, categorical_log_likelihood
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.models import weight_sde_solver
from bnnrepro.models.weight_sde import (
    AugmentedWeightSDE,
    GaussianInitialWeights,
    HiddenDynamics,
    MLPHiddenDynamics,
    PosteriorDrift,
    mlp_sdebnn,
    negative_elbo,
)
from bnnrepro.models.weight_sde_solver import SolverSettings, brownian_motion, integrate
from tests.kl_checks import assert_same_mean_gradient, assert_stl_variance_vanishes

ESTIMATORS = ("ckl", "fmc", "stl")


@pytest.fixture
def float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


class WeightsOnly(HiddenDynamics):
    """dh/dt = tanh(h) * mean(w): a hidden state that the tests of the weight process can ignore."""

    state_shape = (1,)

    def __init__(self, num_weights: int):
        super().__init__()
        self.num_weights = num_weights

    def forward(self, t, h, w):
        return torch.tanh(h) * w.mean(dim=-1)[:, None, None]

    def initial_weights(self):
        return torch.zeros(self.num_weights)


class LinearNet(nn.Module):
    """NN_phi(w, t) = A w + b: a linear posterior drift, so that q is a Gaussian process."""

    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = nn.Parameter(a), nn.Parameter(b)

    def forward(self, t, w):
        return w @ self.a.T + self.b


def random_last_layer(model, std=0.3):
    """Move the drift net away from its zero initialisation (q != p)."""
    nn.init.normal_(model.sde.posterior.net.layers[-1].weight, std=std)


def solve_weights(sde, w0, num_samples, settings, entropy=0):
    y0 = sde.initial_state(w0.expand(num_samples, -1), torch.zeros(1, *sde.dynamics.state_shape))
    return sde.split(integrate(sde, y0, settings, brownian_motion(sde, y0, settings, entropy)))


# --- the OU prior -----------------------------------------------------------------------------------------


class PriorSDE(nn.Module):
    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, prior):
        super().__init__()
        self.prior = prior

    def f(self, t, y):
        return self.prior.drift(t, y)

    def g(self, t, y):
        return self.prior.diffusion(t, y)


@pytest.mark.parametrize("rate", [1.0, 0.0])
def test_ou_prior_moments_match_simulation(float64, rate):
    prior, n, dt = OrnsteinUhlenbeckPrior(sigma=0.7, rate=rate), 20000, 0.05
    w0 = torch.tensor([1.5, -1.0, 0.0])
    bm = torchsde.BrownianInterval(0.0, 1.0, size=(n, 3), entropy=0, dt=dt, levy_area_approximation="space-time")
    ts = torch.tensor([0.0, 0.5, 1.0])
    ys = torchsde.sdeint(PriorSDE(prior), w0.expand(n, -1), ts, bm=bm, dt=dt, method="srk")  # weak order 2 here
    for t, samples in zip([0.5, 1.0], ys[1:], strict=True):
        mean, var = prior.mean(t, w0), prior.variance(t)
        assert torch.all((samples.mean(0) - mean).abs() < 4 * (var / n).sqrt())
        assert torch.all((samples.var(0) - var).abs() < 4 * var * math.sqrt(2 / (n - 1)))


def test_ou_prior_variance_with_a_random_initial_weight(float64):
    prior, w0_var = OrnsteinUhlenbeckPrior(sigma=0.5), 0.3
    # Var[w_t] = Var[E[w_t | w_0]] + E[Var[w_t | w_0]] = exp(-2t) w0_var + Var[w_t | w_0 fixed].
    assert prior.variance(0.8, w0_var) == pytest.approx(math.exp(-1.6) * w0_var + float(prior.variance(0.8)))
    assert float(prior.variance(50.0)) == pytest.approx(0.5**2 / 2)  # stationary sigma^2 / (2 rate), not sigma^2


# --- q = p at initialisation ------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_at_initialisation_the_kl_is_exactly_zero(estimator):
    torch.manual_seed(0)
    model = mlp_sdebnn(1, 1, solver=SolverSettings(num_steps=10), kl_estimator=estimator)
    outputs, kl = model(torch.randn(40, 1), num_samples=8)
    assert outputs.shape == (8, 40, 1)
    assert torch.equal(kl, torch.zeros(8))
    w = torch.randn(8, model.sde.num_weights)
    prior = model.sde.posterior.prior
    assert torch.equal(model.sde.posterior(torch.tensor(0.3), w), prior.drift(torch.tensor(0.3), w))


def test_at_initialisation_the_weight_paths_have_the_prior_marginals(float64):
    torch.manual_seed(0)
    model, samples = mlp_sdebnn(1, 1, sigma=0.2, width=8), 4000
    w0, prior = model.initial_weights.w0.detach(), model.sde.posterior.prior
    with torch.no_grad():
        w1 = solve_weights(model.sde, w0, samples, SolverSettings(method="srk", num_steps=20)).w
    z = (w1 - prior.mean(1.0, w0)) / prior.variance(1.0).sqrt()  # standardised by the OU closed form
    assert z.mean(0).abs().max() < 4.5 / math.sqrt(samples)
    assert abs(z.var(0).mean() - 1) < 4 * math.sqrt(2 / (samples * z.shape[1]))


# --- the path KL for a linear posterior drift -------------------------------------------------------------


def gaussian_path_kl(a, b, w0, prior):
    """KL(q || p) = E_q int_0^1 1/2 ||A w_t + b||^2 / sigma^2 dt for dw = ((A - rate I) w + b) dt + sigma dB,
    from the moment ODEs m' = M m + b, P' = M P + P M^T + sigma^2 I (M = A - rate I), solved by scipy."""
    a, b, w0 = a.numpy(), b.numpy(), w0.numpy()
    d, m_matrix = len(w0), a - prior.rate * np.eye(len(w0))

    def moments(t, state):
        m, p = state[:d], state[d : d + d * d].reshape(d, d)
        residual = a @ m + b
        kl_rate = 0.5 * (residual @ residual + np.trace(a @ p @ a.T)) / prior.sigma**2
        dp = m_matrix @ p + p @ m_matrix.T + prior.sigma**2 * np.eye(d)
        return np.concatenate([m_matrix @ m + b, dp.ravel(), [kl_rate]])

    start = np.concatenate([w0, np.zeros(d * d), [0.0]])
    return solve_ivp(moments, (0.0, 1.0), start, rtol=1e-10, atol=1e-12).y[-1, -1]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_path_kl_of_a_linear_posterior_matches_gaussian_moments(float64, estimator):
    prior = OrnsteinUhlenbeckPrior(sigma=0.5)
    a, b = torch.tensor([[0.3, -0.2], [0.1, 0.4]]), torch.tensor([0.2, -0.1])
    w0, samples = torch.tensor([0.5, -0.3]), 4000
    sde = AugmentedWeightSDE(PosteriorDrift(prior, LinearNet(a, b)), WeightsOnly(2), estimator)
    with torch.no_grad():
        kl = solve_weights(sde, w0, samples, SolverSettings(num_steps=100)).kl.squeeze(-1)
    expected = gaussian_path_kl(a, b, w0, prior)
    standard_error = kl.std() / math.sqrt(samples)
    assert abs(kl.mean() - expected) < 4 * standard_error + 0.01 * expected  # MC error + Euler bias O(dt)
    assert 4 * standard_error < 0.2 * expected  # the test can tell a wrong KL apart


# --- integration over the whole depth interval [0, 1] -----------------------------------------------------


def reference_final_state(sde, w0, h0):
    """[w(1), h(1)] of the noise-free augmented ODE dw = f_q dt, dh = f_h dt by scipy (RK45, tight tolerances)."""
    num_weights = w0.numel()

    def rhs(t, state):
        w, h = torch.from_numpy(state[:num_weights])[None], torch.from_numpy(state[num_weights:]).view(1, *h0.shape)
        t = torch.tensor(t)
        with torch.no_grad():
            return torch.cat([sde.posterior(t, w), sde.dynamics(t, h, w).flatten(1)], -1).squeeze(0).numpy()

    start = torch.cat([w0, h0.flatten()]).numpy()
    solution = solve_ivp(rhs, (0.0, 1.0), start, rtol=1e-10, atol=1e-10, dense_output=True)
    return torch.from_numpy(solution.y[:, -1]), torch.from_numpy(solution.sol(0.53))


@pytest.mark.parametrize(
    ("settings", "tolerance"),
    [
        (SolverSettings(method="euler", num_steps=100), 5e-3),
        (SolverSettings(method="milstein", num_steps=100, adjoint=True), 5e-3),
        (SolverSettings(method="srk", num_steps=20), 1e-4),
        (SolverSettings(method="milstein", num_steps=10, adaptive=True, rtol=1e-6, atol=1e-6), 1e-3),
    ],
)
def test_the_solver_integrates_the_hidden_state_up_to_t_equal_1(float64, settings, tolerance):
    """With (nearly) no noise the augmented SDE is an ODE: its solution at t = 1 must match scipy's. A solver
    that stops early, like the authors' JAX grid at t ~ 0.53 (bayeSDE, `jaxsde/jaxsde/sdeint.py`), is far off."""
    torch.manual_seed(0)
    model = mlp_sdebnn(1, 1, width=8, sigma=1e-9, solver=settings)
    random_last_layer(model)
    x = torch.linspace(-3, 3, 4)[:, None]
    h0, w0 = model.input_layer(x), model.initial_weights.w0.detach()
    expected, early = reference_final_state(model.sde, w0, h0)
    with torch.no_grad():
        state = model.sde.split(integrate(model.sde, model.sde.initial_state(w0[None], h0), settings))
    assert torch.allclose(state.clock, torch.ones(1))
    reached = torch.cat([state.w, state.h], -1).squeeze(0)
    assert (reached - expected).abs().max() < tolerance
    assert (early - expected).abs().max() > 10 * tolerance  # t = 0.53 is clearly distinguishable


def hand_written_euler_maruyama(sde, y0, num_steps, bm, sigma, batch):
    """Ito Euler-Maruyama for [w, h, KL, clock], written out from eqs. 11, 5-6 (and the u dB of eqs. 20, 12)."""
    y, times, num_weights = y0, torch.linspace(0, 1, num_steps + 1), sde.num_weights
    for t0, t1 in zip(times[:-1], times[1:], strict=True):
        dt, dw_noise = t1 - t0, bm(t0, t1)
        w, h, kl, clock = y[:, :num_weights], y[:, num_weights:-2], y[:, -2:-1], y[:, -1:]
        u = sde.posterior.net(t0, w) / sigma
        kl = kl + 0.5 * u.square().sum(-1, keepdim=True) * dt
        if sde.kl_estimator != "ckl":
            kl = kl + (u * dw_noise).sum(-1, keepdim=True)
        drift_h = sde.dynamics(t0, h.view(len(y), batch, -1), w).flatten(1)
        y = torch.cat(
            [w + (sde.posterior.net(t0, w) - w) * dt + sigma * dw_noise, h + drift_h * dt, kl, clock + dt], -1
        )
    return y


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_the_solver_takes_the_same_steps_as_a_hand_written_euler_maruyama(float64, estimator):
    """Same Brownian path, same grid t_i = i/n over [0, 1]: the solver equals the loop (up to torchsde's grid
    rounding, ~1e-16 in t and so ~1e-8 in B_t)."""
    torch.manual_seed(0)
    settings, sigma, samples, batch = SolverSettings(num_steps=12), 0.3, 3, 5
    model = mlp_sdebnn(1, 1, width=8, sigma=sigma, solver=settings, kl_estimator=estimator)
    random_last_layer(model)
    sde, x = model.sde, torch.linspace(-2, 2, batch)[:, None]
    y0 = sde.initial_state(model.initial_weights.w0.detach().expand(samples, -1), model.input_layer(x))
    bm = brownian_motion(sde, y0, settings, entropy=3)
    with torch.no_grad():
        reached = integrate(sde, y0, settings, bm)
        expected = hand_written_euler_maruyama(sde, y0, settings.num_steps, bm, sigma, batch)
    assert torch.allclose(reached, expected, atol=1e-6, rtol=0)
    assert sde.split(reached).kl.min() > 0.1  # q != p: the KL terms are exercised


def test_the_diffusion_is_sigma_on_the_weights_built_once_per_state_shape():
    """g = [sigma I, 0, 0, 0] (eq. 9) whatever t and y; the same tensor again for the same shape, dtype and device,
    a new one for another."""
    sde = mlp_sdebnn(1, 1, width=4, drift_widths=(4,), sigma=0.3).sde
    y = torch.randn(5, sde.num_weights + 6)
    g = sde.g(torch.tensor(0.0), y)
    assert torch.equal(g, torch.cat([torch.full((5, sde.num_weights), 0.3), torch.zeros(5, 6)], -1))
    assert sde.g(torch.tensor(0.7), y + 1) is g
    assert sde.g(torch.tensor(0.0), y[:3]).shape == (3, sde.num_weights + 6)
    assert sde.g(torch.tensor(0.0), y.double()).dtype == torch.float64


def test_a_solver_that_stops_early_is_an_error(monkeypatch):
    """The clock check of `integrate`: a solve over [0, 0.53] (the JAX fixed-grid bug) raises."""
    sdeint = torchsde.sdeint
    monkeypatch.setattr(
        weight_sde_solver.torchsde, "sdeint", lambda sde, y0, ts, **kw: sdeint(sde, y0, ts * 0.53, **kw)
    )
    model = mlp_sdebnn(1, 1, solver=SolverSettings(num_steps=10))
    with pytest.raises(RuntimeError, match="stopped at t = 0.53"):
        model(torch.randn(4, 1))


@pytest.mark.parametrize(
    "settings",
    [SolverSettings(adjoint=True), SolverSettings(adaptive=True), SolverSettings(method="milstein")],
)
def test_the_martingale_estimators_need_fixed_step_euler_without_adjoint(settings):
    model = mlp_sdebnn(1, 1, solver=settings, kl_estimator="stl")
    with pytest.raises(ValueError, match="use fixed-step method='euler' without the adjoint"):
        model(torch.randn(4, 1))


# --- the STL estimator (eq. 12) against the closed-form and full Monte Carlo estimators (Fig. 4) ----------

STL_SIGMA, STL_NOISE, STL_TARGET, STL_SAMPLES = 1.0, 0.5, 1.0, 2000
STL_PRIOR = OrnsteinUhlenbeckPrior(STL_SIGMA)


class PosteriorFamily(nn.Module):
    """NN_phi(w, t) = kappa(t) (phi_0 - phi_1 exp(-(1 - t)) w), kappa(t) = sigma^2 e^{-(1-t)} / (s^2 + v(1 - t)).

    For a scalar w with w_0 = 0, the OU prior and y ~ N(w_1, s^2), Doob's h-transform gives the exact
    posterior drift f_p + sigma^2 d/dw log N(y; w e^{-tau}, s^2 + v(tau)), i.e. phi = (y, 1). phi has one
    row per sample path, so that one backward pass gives every path's own gradient."""

    def __init__(self, phi):
        super().__init__()
        self.phi = nn.Parameter(phi.expand(STL_SAMPLES, 2).clone())

    def forward(self, t, w):
        tau = 1 - t
        kappa = STL_SIGMA**2 * torch.exp(-tau) / (STL_NOISE**2 + STL_PRIOR.variance(tau))
        return kappa * (self.phi[:, :1] - self.phi[:, 1:] * torch.exp(-tau) * w)


def per_path_gradients(phi, estimator, entropy=0):
    """d/dphi [-log p(y | w_1) + KL-hat] for each of STL_SAMPLES paths (the same paths for every estimator)."""
    net = PosteriorFamily(phi)
    sde = AugmentedWeightSDE(PosteriorDrift(STL_PRIOR, net), WeightsOnly(1), estimator)
    state = solve_weights(sde, torch.zeros(1), STL_SAMPLES, SolverSettings(num_steps=50), entropy)
    negative_log_likelihood = 0.5 * ((STL_TARGET - state.w) / STL_NOISE).square()
    (negative_log_likelihood + state.kl).sum().backward()
    return net.phi.grad


def test_stl_and_full_monte_carlo_have_the_mean_gradient_of_the_closed_form_kl(float64):
    phi = torch.tensor([0.2, 0.3])  # away from the optimum: the gradients are far from 0
    gradients = {e: per_path_gradients(phi, e) for e in ESTIMATORS}  # paired: they differ by d/dphi of int u dB
    closed_form = gradients["ckl"]
    assert (closed_form.mean(0).abs() > 4 * closed_form.std(0) / math.sqrt(STL_SAMPLES)).any()
    assert_same_mean_gradient(gradients, max_z_score=4)


def test_stl_gradient_variance_vanishes_at_the_exact_posterior(float64):
    """Fig. 4 in small: at q = the true posterior the STL gradient is 0 on every path (up to O(dt)), while the
    closed-form and full Monte Carlo estimators keep a variance of order 1."""
    optimum = torch.tensor([STL_TARGET, 1.0])
    variance = {e: per_path_gradients(optimum, e).var(0).mean() for e in ESTIMATORS}
    assert_stl_variance_vanishes(variance, max_ratio=0.1)
    assert variance["ckl"] < variance["fmc"]


def test_at_the_prior_only_full_monte_carlo_has_a_kl_gradient():
    """q = p (zero last layer): u = 0 and du/dw = 0 everywhere, so the closed-form and STL gradients of the KL
    are exactly 0; the full Monte Carlo one, int du/dphi dB, is not (the score term STL removes, App. A.2)."""
    gradients = {}
    for estimator in ESTIMATORS:
        torch.manual_seed(0)
        model = mlp_sdebnn(
            1, 1, width=8, drift_widths=(4,), solver=SolverSettings(num_steps=10), kl_estimator=estimator
        )
        _, kl = model(torch.randn(6, 1), num_samples=4, entropy=0)
        kl.sum().backward()
        gradients[estimator] = torch.cat([p.grad.flatten() for p in model.sde.posterior.net.parameters()])
    assert torch.equal(gradients["ckl"], torch.zeros_like(gradients["ckl"]))
    assert torch.equal(gradients["stl"], torch.zeros_like(gradients["stl"]))
    assert gradients["fmc"].abs().max() > 1e-2


# --- the stochastic adjoint against backprop through the solver ------------------------------------------


def parameter_gradients(adjoint, num_steps, infer_w0=False):
    torch.manual_seed(0)
    solver = SolverSettings(method="milstein", num_steps=num_steps, adjoint=adjoint)
    model = mlp_sdebnn(1, 1, width=8, drift_widths=(4,), sigma=0.5, solver=solver, infer_w0=infer_w0)
    random_last_layer(model)
    outputs, kl = model(torch.linspace(-1, 1, 5)[:, None], num_samples=2, entropy=7)
    (outputs.square().sum() + kl.sum()).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("infer_w0", [False, True])
def test_adjoint_and_backprop_gradients_agree(float64, infer_w0):
    """Same Brownian path (BrownianInterval, same entropy), fixed steps: the stochastic adjoint solves the
    adjoint SDE backwards with its own O(dt) error, so the two converge to each other at first order."""
    errors = []
    for num_steps in (50, 200):
        backprop = parameter_gradients(False, num_steps, infer_w0)
        adjoint = parameter_gradients(True, num_steps, infer_w0)
        assert adjoint.shape == backprop.shape
        errors.append(float((adjoint - backprop).norm() / backprop.norm()))
    assert errors[1] < 0.03
    assert errors[1] < errors[0] / 2.5  # first-order convergence in dt


# --- the building blocks ----------------------------------------------------------------------------------


def test_mlp_dynamics_use_each_sample_s_own_weights(float64):
    dynamics, samples, batch = MLPHiddenDynamics(3, (5, 4), "tanh"), 3, 6
    w = torch.stack([dynamics.initial_weights() for _ in range(samples)])
    h, t = torch.randn(samples, batch, 3), torch.tensor(0.4)
    for s in range(samples):
        x = h[s]
        for i, (weight, bias) in enumerate(dynamics.layers(w[s : s + 1])):
            x = torch.tanh(x) if i else x
            x = torch.cat([x, t.expand(batch, 1)], -1) @ weight[0].T + bias[0]
        assert torch.allclose(dynamics(t, h, w)[s], x)
    assert dynamics.num_weights == (5 * 4 + 5) + (4 * 6 + 4) + (3 * 5 + 3)  # [W (out x (in + 1)), b] per layer


def test_inferred_initial_weights_have_the_gaussian_kl(float64):
    torch.manual_seed(0)
    initial = GaussianInitialWeights(torch.randn(7), prior_variance=0.2, log_std=-1.0)
    w0, kl = initial(3)
    q, p = Normal(initial.mean, initial.log_std.exp()), Normal(0.0, math.sqrt(0.2))
    assert w0.shape == (3, 7)
    assert torch.allclose(kl, kl_divergence(q, p).sum().expand(3))


def test_negative_elbo_per_datum(float64):
    """-(N/B sum_b mean_s log p - KL) / N for a Gaussian likelihood with the noise scale as a parameter."""
    likelihood = RegressionLikelihood(scale=0.5)
    predictions, targets, kl = torch.randn(4, 3, 1), torch.randn(3, 1), torch.tensor([1.0, 2.0, 3.0, 4.0])
    log_likelihood = likelihood(predictions, targets)
    expected = -Normal(predictions, 0.5).log_prob(targets).squeeze(-1).sum(-1).mean(0) * 10 / 3 + 2.5
    assert torch.allclose(negative_elbo(log_likelihood, kl, num_data=10), expected / 10)
    negative_elbo(log_likelihood, kl, num_data=10).backward()
    assert likelihood.log_scale.grad is not None


# --- CUDA -------------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("estimator", ["ckl", "stl"])
def test_forward_and_backward_on_cuda(estimator):
    torch.manual_seed(0)
    model = mlp_sdebnn(784, 10, width=16, drift_widths=(1, 8, 1), sigma=0.1, kl_estimator=estimator).cuda()
    random_last_layer(model, std=0.01)
    x, y = torch.rand(8, 1, 28, 28, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
    logits, kl = model(x, num_samples=2)
    loss = negative_elbo(categorical_log_likelihood(logits, y), kl, num_data=60000)
    loss.backward()
    assert logits.device.type == "cuda" and torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)

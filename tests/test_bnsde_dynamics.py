"""Bayesian neural SDEs (Haußmann 2021 thesis, ch. 6), the SDE itself: gamma = 0 as the black box and the prior
knowledge gamma * r, the white-box prior SDE (eq. 6.6) against the data simulator, Euler-Maruyama's strong order
(§2.6, Theorem 2), and the three ways of drawing theta (§6.2.2, Algorithm 2 line 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bnnrepro.data import dynamics
from bnnrepro.models.bayesian_drift import BayesianDrift
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.models.prior_knowledge import KnowledgeDrift
from bnnrepro.optim import Adam
from tests import bnsde_helpers
from tests.bnsde_helpers import linear_drift, make_method, no_knowledge, parameters

pytestmark = pytest.mark.usefixtures("one_torch_thread")

lorenz = bnsde_helpers.lorenz  # the module-scoped fixture, bound here: ruff reads an imported fixture as unused


# --- gamma = 0 is the black box ----------------------------------------------------------------------------------


def test_zero_gamma_is_the_black_box(lorenz):
    """Eq. 6.5 with gamma = 0 is the black-box BNSDE (eq. 6.3): knowledge.gamma [0, 0, 0] and null build the same
    weights, and on the same seed give identical losses, forecasts and training steps; a nonzero gamma does not."""
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    common = ("method.num_samples=2", "method.eval_samples=3")
    zero, null = make_method(*common, "method.knowledge.gamma=[0,0,0]"), make_method(*common)
    hybrid = make_method(*common, "method.knowledge.gamma=[0,0,1]")
    assert not zero.sde.knowledge.active and hybrid.sde.knowledge.active
    for name, value in parameters(null).items():
        assert torch.equal(parameters(zero)[name], value), name

    def run(method):
        torch.manual_seed(3)
        loss = method.loss(x, y, 4)
        prediction = method.predict(x)
        method.training_step(x, y, 4, Adam(method.parameter_groups(1e-2, 1.0)))
        return loss.item(), prediction, parameters(method)

    (loss_zero, prediction_zero, after_zero), (loss_null, prediction_null, after_null) = run(zero), run(null)
    assert loss_zero == loss_null
    assert torch.equal(prediction_zero, prediction_null)
    for name, value in after_null.items():
        assert torch.equal(after_zero[name], value), name
    loss_hybrid, prediction_hybrid, _ = run(hybrid)
    assert loss_hybrid != loss_null and not torch.equal(prediction_hybrid, prediction_null)


def test_knowledge_drift_is_gamma_times_the_known_equations():
    """gamma * r_xi(h) (eqs. 6.4-6.5): with no parameter noise r is the simulator's drift; the noisy parameters
    (§6.4.1-6.4.2) are one draw per seed, the same for the same seed."""
    h = torch.tensor([[1.0, 2.0, 20.0], [-3.0, 0.5, 30.0]])
    exact = KnowledgeDrift("lorenz", [1.0, 0.0, 0.5], 3, 0.0, seed=0)
    components = dynamics.lorenz_drift(*h.T.double())
    expected = torch.stack(components, -1) * torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    torch.testing.assert_close(exact(h).double(), expected, rtol=1e-6, atol=1e-5)
    noisy = [KnowledgeDrift("lorenz", [1.0, 1.0, 1.0], 3, 1.0, seed=s).parameters_xi for s in (0, 0, 1)]
    assert torch.equal(noisy[0], noisy[1]) and not torch.equal(noisy[0], noisy[2])
    assert not torch.allclose(noisy[0], exact.parameters_xi)
    lv = KnowledgeDrift("lotka_volterra", [1.0, 1.0], 2, 0.0, seed=0)
    torch.testing.assert_close(lv(torch.tensor([[5.0, 2.0]])), torch.tensor([[2 * 5 - 5 * 2, -4 * 2 + 5 * 2.0]]))


# --- the white-box prior SDE against the simulator ---------------------------------------------------------------


def test_white_box_lotka_volterra_simulates_the_true_sde():
    """With objective none, gamma = [1, 1] and no parameter noise the model is the white-box SDE (eq. 6.6, Fig.
    6.3) with the true Lotka-Volterra drift and diffusion (§6.4.1): driven by the simulator's own normal draws its
    EM path is the simulator's, and the mean and std of 4000 forecasts at t = 0.1, 0.25, 0.5 match 4000 simulated
    paths (`simulate_lotka_volterra`, x0 [B, 2], the same dt and no subsampling) within 5 standard errors."""
    length, dt, paths = 51, 0.01, 4000
    method = make_method(
        "method.objective=none",
        "method.knowledge.gamma=[1,1]",
        "dataset.dynamics.parameter_noise_std=0",
        f"method.eval_samples={paths}",
        dataset="lotka_volterra",
        length=length,
    )
    assert method.sde.drift is None
    x = torch.zeros(1, length, 3)
    x[0, :, :2] = torch.tensor([5.0, 2.0])
    x[0, :, 2] = torch.arange(length) * dt
    torch.manual_seed(0)
    forecasts = method.predict(x)[:, 0].double().numpy()  # [S, L, 2]
    _, simulated = dynamics.simulate_lotka_volterra(
        np.random.default_rng(0), np.tile([5.0, 2.0], (paths, 1)), dt=dt, n_steps=length, subsample=1
    )  # [L, S, 2]
    for k in (10, 25, 50):
        ours, theirs = forecasts[:, k], simulated[k]
        error = np.sqrt(ours.var(0) / paths + theirs.var(0) / paths)
        assert np.all(np.abs(ours.mean(0) - theirs.mean(0)) < 5 * error), (k, ours.mean(0), theirs.mean(0))
        spread = np.sqrt((ours.var(0) + theirs.var(0)) / (2 * paths))
        assert np.all(np.abs(ours.std(0) - theirs.std(0)) < 5 * spread), (k, ours.std(0), theirs.std(0))
    assert np.all(simulated[50].std(0) > 0.05)  # the noise has grown to be resolved

    few = 5
    _, reference = dynamics.simulate_lotka_volterra(
        np.random.default_rng(1), np.tile([5.0, 2.0], (few, 1)), dt=dt, n_steps=length, subsample=1
    )
    rng = np.random.default_rng(1)
    noise = torch.tensor(np.stack([rng.standard_normal((1, 2, few))[0].T for _ in range(length - 1)]))
    sde = method.sde.double()
    path, _ = sde.solve(
        torch.tensor([[5.0, 2.0]] * few, dtype=torch.float64),
        torch.full((length - 1,), dt, dtype=torch.float64),
        "mean",
        noise=noise,
    )
    np.testing.assert_allclose(path.numpy(), reference, rtol=1e-6, atol=1e-7)  # G is stored in float32


# --- Euler-Maruyama's strong order -------------------------------------------------------------------------------


def test_euler_maruyama_strong_order_on_an_ornstein_uhlenbeck_process():
    """EM converges strongly at order >= 1/2 (§2.6; Theorem 2 builds on it): on the Ornstein-Uhlenbeck SDE
    dh = (A h + b) dt + G dW (a linear BayesianDrift with no hidden layer at its means, A diagonal), whose solution
    h_T = e^{AT} h_0 + A^-1 (e^{AT} - I) b + int_0^T e^{A(T-s)} G dW_s is evaluated on a fine grid of 2^12 steps
    (midpoint weights), EM driven by the same Brownian path (the fine increments summed) at dt = T / 2^k,
    k = 2..7, has errors E|h_T^EM - h_T| whose log-log slope is >= 0.45. (With additive noise EM is in fact of
    strong order 1, as Milstein's correction vanishes; the fitted slope is close to 1.)"""
    rates, offset, g = torch.tensor([-1.0, -3.0], dtype=torch.float64), [0.5, -1.0], [0.5, 1.0]
    sde = HybridSDE(linear_drift([[-1.0, 0.0], [0.0, -3.0]], offset), no_knowledge(2), g).double()
    paths, fine, horizon = 1000, 2**12, 1.0
    h0 = torch.tensor([1.0, -2.0], dtype=torch.float64)
    torch.manual_seed(0)
    fine_dt = horizon / fine
    increments = torch.randn(fine, paths, 2, dtype=torch.float64) * math.sqrt(fine_dt)
    midpoints = (torch.arange(fine, dtype=torch.float64) + 0.5) * fine_dt
    kernel = torch.exp(rates * (horizon - midpoints)[:, None])  # [fine, 2]
    decay = torch.exp(rates * horizon)
    exact = decay * h0 + (decay - 1) / rates * torch.tensor(offset, dtype=torch.float64)
    exact = exact + torch.tensor(g, dtype=torch.float64) * (kernel[:, None] * increments).sum(0)

    step_sizes, errors = [], []
    for k in range(2, 8):
        coarse, dt = 2**k, horizon / 2**k
        noise = increments.view(coarse, fine // coarse, paths, 2).sum(1) / math.sqrt(dt)
        path, _ = sde.solve(h0.expand(paths, 2), torch.full((coarse,), dt, dtype=torch.float64), "mean", noise=noise)
        step_sizes.append(dt)
        errors.append(float((path[-1] - exact).norm(dim=-1).mean()))
    slope = np.polyfit(np.log(step_sizes), np.log(errors), 1)[0]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:], strict=False)), errors
    assert slope >= 0.45, (slope, errors)
    assert slope > 0.8, (slope, errors)  # order 1 for additive noise


# --- drawing theta -------------------------------------------------------------------------------------------------


def test_weight_sampling_modes():
    """per_trajectory draws theta once per trajectory (Algorithm 2, line 3): the same h gives the same drift twice,
    different rows of the batch different thetas; local_reparameterisation (§6.2.2) resamples the pre-activations
    at every call; mean is deterministic. For a single affine layer both random modes draw f(h) from its Gaussian
    marginal N(mu h + mu_b, sigma^2 h^2 + sigma_b^2)."""
    torch.manual_seed(0)
    drift = BayesianDrift(2, [6], "softplus")
    with torch.no_grad():
        for layer in drift.layers:
            layer.weight_log_variance.fill_(-2.0)
            layer.bias_log_variance.fill_(-2.0)
    h = torch.tensor([[0.5, -1.0]]).repeat(4, 1)
    per_trajectory = drift.draw(4, "per_trajectory")
    once = per_trajectory(h)
    assert torch.equal(once, per_trajectory(h))
    assert all(not torch.allclose(once[0], once[i]) for i in range(1, 4))
    local = drift.draw(4, "local_reparameterisation")
    assert not torch.allclose(local(h), local(h))
    assert not torch.allclose(local(h)[0], local(h)[1])
    mean = drift.draw(4, "mean")
    assert torch.equal(mean(h), drift.draw(4, "mean")(h))
    torch.testing.assert_close(mean(h), drift.mean_forward(h))
    assert torch.equal(mean(h)[0], mean(h)[3])

    single = BayesianDrift(2, [], "tanh")
    with torch.no_grad():
        single.layers[0].weight_log_variance.copy_(torch.tensor([[-1.0, -2.0], [-3.0, -0.5]]))
        single.layers[0].bias_log_variance.copy_(torch.tensor([-1.5, -2.5]))
        single.layers[0].bias_mean.copy_(torch.tensor([0.3, -0.7]))
    point = torch.tensor([[1.5, -2.0]])
    layer = single.layers[0]
    weight_var, bias_var = (v.detach() for v in layer.variances())
    expected_mean = (point @ layer.weight_mean.detach().T + layer.bias_mean.detach())[0]
    expected_var = (point.square() @ weight_var.T + bias_var)[0]
    draws = 20_000
    for mode in ("per_trajectory", "local_reparameterisation"):
        outputs = single.draw(draws, mode)(point.repeat(draws, 1)).detach()
        standard_error = (expected_var / draws).sqrt()
        assert torch.all((outputs.mean(0) - expected_mean).abs() < 4 * standard_error), mode
        torch.testing.assert_close(outputs.var(0), expected_var, rtol=0.05, atol=0, msg=mode)

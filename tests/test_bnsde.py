"""Bayesian neural SDEs with empirical (PAC-)Bayes (Haußmann 2021 thesis, ch. 6): the path KL of Lemma 1 against
its closed form for a linear drift and against torchsde's `logqp`, the PAC term of Theorem 1 / Algorithm 2 and
the E-PAC-Bayes loss rebuilt by hand, gamma = 0 as the black box, the white-box prior SDE (eq. 6.6) against the
data simulator, Euler-Maruyama's strong order (§2.6, Theorem 2), the data terms of eqs. 6.8 and 6.15, gradients
to every drift parameter (the two bugs of the authors' code, `manuelhaussmann/bnsde` `bsde.py`, `bnn.py`), the forecast
metrics, the errors on bad input, the three ways of drawing theta (§6.2.2, Algorithm 2 line 3) and the D-BNN SGLD
baseline."""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import pytest
import torch
import torchsde
from torch.nn import functional as F

from bnnrepro.data import dynamics
from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.inference.pac_bayes import log_mean_exp_data_term, mean_log_data_term, pac_complexity
from bnnrepro.methods.bnsde import BNSDEMethod, build
from bnnrepro.metrics import forecasting_metrics
from bnnrepro.models.bayesian_drift import BayesianDrift
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.models.prior_knowledge import KnowledgeDrift
from bnnrepro.optim import Adam
from bnnrepro.train_configs import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STATE = {"lorenz": 3, "lotka_volterra": 2}
SMALL_DRIFT = "method.drift.widths=[8]"


@functools.cache
def _config(dataset: str, overrides: tuple[str, ...]):
    return compose_config(["method=bnsde", f"dataset={dataset}", "dataset.path=unused", "run_dir=unused", *overrides])


def make_method(*overrides: str, dataset: str = "lorenz", length: int = 24, seed: int = 0) -> BNSDEMethod:
    """The method `bnsde` on windows of `length` observations of `dataset`, its weights drawn after
    torch.manual_seed(seed)."""
    spec = DataSpec("forecasting", length, 0, (length, STATE[dataset] + 1))
    torch.manual_seed(seed)
    return build(_config(dataset, (SMALL_DRIFT, *overrides)), spec)


@pytest.fixture(scope="module")
def lorenz() -> Splits:
    """A short stochastic Lorenz series (200 observations, dt = 0.01): four training windows of 24."""
    return dynamics.generate_lorenz(0, n_steps=20_000, n_train=4, n_test=2, test_start=120)


def linear_drift(weight: list[list[float]], bias: list[float]) -> BayesianDrift:
    """f(h) = W h + b: a BayesianDrift with no hidden layer, its posterior means set to (W, b), in float64."""
    drift = BayesianDrift(len(bias), [], "tanh").double()
    with torch.no_grad():
        drift.layers[0].weight_mean.copy_(torch.tensor(weight, dtype=torch.float64))
        drift.layers[0].bias_mean.copy_(torch.tensor(bias, dtype=torch.float64))
    return drift.requires_grad_(False)


def no_knowledge(state_size: int) -> KnowledgeDrift:
    return KnowledgeDrift(None, [0.0] * state_size, state_size, 0.0, 0).double()


def weight_kl_by_hand(drift: BayesianDrift, alpha: float) -> float:
    """KL(N(mu, sigma^2) || N(0, 1/alpha)) summed over every weight and bias of every layer, by torch.distributions."""
    prior_std = 1.0 / math.sqrt(alpha)
    total = 0.0
    for layer in drift.layers:
        for mean, log_variance in (
            (layer.weight_mean, layer.weight_log_variance),
            (layer.bias_mean, layer.bias_log_variance),
        ):
            q = torch.distributions.Normal(mean.detach().double(), log_variance.detach().double().exp().sqrt())
            total += float(torch.distributions.kl_divergence(q, torch.distributions.Normal(0.0, prior_std)).sum())
    return total


def parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


# --- Lemma 1: the discretised path KL ------------------------------------------------------------------------


def test_path_kl_of_a_linear_drift_matches_its_closed_form():
    """Lemma 1 (§6.2.3; discrete form of its proof): KL(Q || P) = sum_k E_Q[1/2 f(h_k)^T J^-1 f(h_k)] dt_k with
    J = G G^T. For a fixed linear drift f(h) = A h + b (no prior knowledge, gamma = 0) the EM recursion
    h_{k+1} = (I + A dt_k) h_k + b dt_k + G sqrt(dt_k) eps_k (§6.2.2) is Gaussian with mean m_k and covariance S_k,
    and E[f^T J^-1 f] = (A m_k + b)^T J^-1 (A m_k + b) + tr(J^-1 A S_k A^T). `solve`'s per-trajectory KL,
    averaged over 20000 trajectories on an irregular grid, must match within 4 standard errors; each trajectory's
    KL must be the sum of the formula along its own path, and the path's final moments (m_K, S_K)."""
    a, b, g = [[-1.0, 0.5], [-0.3, -2.0]], [0.4, -0.2], [0.5, 1.5]
    sde = HybridSDE(linear_drift(a, b), no_knowledge(2), g).double()
    steps = torch.tensor([0.05, 0.1, 0.02, 0.08, 0.15, 0.05, 0.1, 0.03, 0.12, 0.1], dtype=torch.float64)
    h0 = torch.tensor([1.0, -0.5], dtype=torch.float64)
    trajectories = 20_000
    torch.manual_seed(0)
    path, kl = sde.solve(h0.expand(trajectories, 2), steps, "mean")

    matrix, offset = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    precision = torch.diag(1.0 / torch.tensor(g, dtype=torch.float64) ** 2)
    mean, cov, expected = h0.clone(), torch.zeros(2, 2, dtype=torch.float64), 0.0
    for dt in steps.tolist():
        f_mean = matrix @ mean + offset
        expected += 0.5 * dt * float(f_mean @ precision @ f_mean + torch.trace(precision @ matrix @ cov @ matrix.T))
        step = torch.eye(2, dtype=torch.float64) + matrix * dt
        mean = step @ mean + offset * dt
        cov = step @ cov @ step.T + dt * torch.linalg.inv(precision)

    standard_error = float(kl.std() / math.sqrt(trajectories))
    assert abs(float(kl.mean()) - expected) < 4 * standard_error, (float(kl.mean()), expected, standard_error)
    assert standard_error < 0.02 * expected  # the comparison resolves a few percent

    f = path[:-1] @ matrix.T + offset
    along_path = (0.5 * steps[:, None] * (f.square() @ torch.diag(precision))).sum(0)
    torch.testing.assert_close(kl, along_path, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        path[-1].mean(0), mean, atol=4 * float(cov.diag().max().sqrt()) / math.sqrt(trajectories), rtol=0
    )
    torch.testing.assert_close(torch.cov(path[-1].T), cov, atol=0.05 * float(cov.max()), rtol=0)


class TorchsdeHybrid(torch.nn.Module):
    """The hybrid SDE (eq. 6.5) for torchsde: posterior drift f_theta + gamma r, prior drift gamma r (eq. 6.6), G."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, f_theta, knowledge: KnowledgeDrift, diffusion: torch.Tensor):
        super().__init__()
        self.f_theta, self.knowledge, self.diffusion = f_theta, knowledge, diffusion

    def f(self, t, y):
        return self.f_theta(y, t.expand(y.shape[0])) + self.knowledge(y)

    def h(self, t, y):
        return self.knowledge(y)

    def g(self, t, y):
        return self.diffusion.expand_as(y)


@pytest.mark.parametrize("time_input", [False, True])
@pytest.mark.parametrize("weight_sampling", ["mean", "per_trajectory"])
def test_solve_matches_torchsde_logqp_on_a_shared_brownian_path(weight_sampling, time_input):
    """Lemma 1's discrete KL is torchsde's `sdeint(..., logqp=True)` log-ratio for posterior drift f + gamma r and
    prior drift gamma r with the same diffusion (§6.2.3): on one Brownian path (a BrownianInterval's increments
    over the grid, divided by sqrt(dt), are `solve`'s noise) with Lorenz knowledge of dz (gamma = [0, 0, 1], noisy
    parameters) and a small BNN drift, the Euler paths and the summed log-ratio equal ours. For per_trajectory,
    torchsde gets the same theta draw (the same seed before `draw`). A drift that reads the time gets torchsde's t."""
    batch, steps_count, dt = 6, 64, 1.0 / 64  # a dyadic step: torchsde lands on every grid time exactly
    torch.manual_seed(0)
    drift = BayesianDrift(3, [16], "softplus", time_input=time_input).double()
    with torch.no_grad():
        for layer in drift.layers:
            layer.weight_log_variance.fill_(-3.0)
            layer.bias_log_variance.fill_(-3.0)
    knowledge = KnowledgeDrift("lorenz", [0.0, 0.0, 1.0], 3, 1.0, seed=0).double()
    diffusion = [1.0, 0.5, 2.0]
    sde = HybridSDE(drift, knowledge, diffusion).double()
    ts = torch.arange(steps_count + 1, dtype=torch.float64) * dt
    h0 = torch.tensor([1.0, 1.0, 28.0], dtype=torch.float64) + torch.randn(batch, 3, dtype=torch.float64)
    bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(batch, 4), dtype=torch.float64, entropy=123)
    noise = torch.stack([bm(ts[k], ts[k + 1])[:, :3] for k in range(steps_count)]) / math.sqrt(dt)

    torch.manual_seed(7)
    f_theta = drift.draw(batch, weight_sampling)
    reference = TorchsdeHybrid(f_theta, knowledge, torch.tensor(diffusion, dtype=torch.float64))
    with torch.no_grad():
        ys, log_ratio = torchsde.sdeint(reference, h0, ts, bm=bm, method="euler", dt=dt, logqp=True)
        torch.manual_seed(7)
        path, kl = sde.solve(h0, torch.full((steps_count,), dt, dtype=torch.float64), weight_sampling, noise=noise)

    assert log_ratio.shape == (steps_count, batch)
    torch.testing.assert_close(path, ys, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(kl, log_ratio.sum(0), rtol=1e-9, atol=1e-10)
    assert float(kl.min()) > 0


@pytest.mark.parametrize("time_input", [True, False])
def test_a_time_reading_drift_forecasts_from_the_windows_own_times(lorenz, time_input: bool):
    """With method.drift.time_input (eq. 6.5's f_theta(h_t, t)) a window's forecast depends on its time column (the
    same states later in the series forecast differently); an autonomous drift's does not. Same seed, same noise."""
    method = make_method(f"method.drift.time_input={str(time_input).lower()}", "method.weight_sampling=mean").eval()
    window = torch.as_tensor(lorenz.x("train"))[:1]
    later = window.clone()
    later[..., -1] += 10.0
    forecasts = []
    for x in (window, later):
        torch.manual_seed(3)
        forecasts.append(method.forecast(x, 2, with_kl=False)[0])
    assert torch.equal(forecasts[0][:, 0], forecasts[1][:, 0])  # both start at the window's first state
    difference = float((forecasts[0] - forecasts[1]).abs().max())  # float32 times: the steps round a little apart
    assert difference > 0.1 if time_input else difference < 1e-3
    assert method.sde.drift.input_size == 3 + time_input


def test_a_time_reading_drift_without_times_says_what_is_missing():
    drift = BayesianDrift(3, [4], "softplus", time_input=True)
    with pytest.raises(ValueError, match="reads the time .*method.drift.time_input.*start times"):
        drift.mean_forward(torch.zeros(2, 3))


# --- Theorem 1 / Algorithm 2: the PAC term and the E-PAC-Bayes loss --------------------------------------------


def test_pac_complexity_against_a_hand_computation():
    """C_delta = sqrt((KL + log(4 sqrt(N) / delta)) / (2N)) (Theorem 1, Algorithm 2), not the authors' code's
    (`manuelhaussmann/bnsde`, `bsde.py`) log(2 sqrt(N) / delta)."""
    assert float(pac_complexity(torch.tensor(3.5), 20, 0.05)) == pytest.approx(
        math.sqrt((3.5 + math.log(4 * math.sqrt(20) / 0.05)) / 40), rel=1e-6
    )
    assert float(pac_complexity(torch.tensor(0.0), 1, 0.5)) == pytest.approx(math.sqrt(math.log(8.0) / 2), rel=1e-6)
    value = float(pac_complexity(torch.tensor(120.0), 16, 0.1))
    assert value == pytest.approx(math.sqrt((120.0 + math.log(160.0)) / 32), rel=1e-6)
    assert value != pytest.approx(math.sqrt((120.0 + math.log(80.0)) / 32), rel=1e-4)


def test_e_pac_bayes_loss_is_the_data_term_plus_the_pac_term(lorenz):
    """Algorithm 2 rebuilt by hand in float64 for a hybrid (gamma = [0, 0, 1]) with S = 2, the mean weights, a
    non-unit diffusion and likelihood variance: the EM paths from the windows' first observations on the same
    noise, mll = (1/(S B)) sum log N(y_k | h_k, var) over steps and dimensions, the path KL summed over the batch,
    averaged over S and scaled by N / B (a minibatch of the N training sequences), plus the closed-form weight KL
    KL(N(mu, sigma^2) || N(0, 1/alpha)), and loss = -mll + sqrt((KL + log(4 sqrt(N) / delta)) / (2N))."""
    method = make_method(
        "method.objective=e_pac_bayes",
        "method.weight_sampling=mean",
        "method.num_samples=2",
        "method.knowledge.gamma=[0,0,1]",
        "method.prior_precision=0.5",
        "method.delta=0.1",
        "dataset.dynamics.diffusion=[1.0,0.5,2.0]",
        "dataset.dynamics.likelihood_variance=0.5",
        length=6,
    )
    x = torch.as_tensor(lorenz.x("train"))[:2, :6]
    y = torch.as_tensor(lorenz.y("train"))[:2, :6]
    samples, batch, num_train, variance, alpha, delta = 2, 2, 20, 0.5, 0.5, 0.1
    torch.manual_seed(5)
    loss = method.loss(x, y, num_train).item()
    steps = x[0, 1:, -1] - x[0, :-1, -1]
    torch.manual_seed(5)
    noise = torch.randn(len(steps), samples * batch, 3).double()

    layers = method.sde.drift.requires_grad_(False).layers
    xi = method.sde.knowledge.parameters_xi.tolist()
    g = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)

    def f_theta(h, t):  # f_theta(h_t, t), eq. 6.5: the state and the time side by side
        inputs = torch.cat([h, t[:, None]], dim=1)
        hidden = F.softplus(inputs @ layers[0].weight_mean.double().T + layers[0].bias_mean.double())
        return hidden @ layers[1].weight_mean.double().T + layers[1].bias_mean.double()

    h = x[:, 0, :3].double().repeat(samples, 1)  # row s * B + n: sample s of sequence n
    t = x[:, 0, 3].double().repeat(samples)  # each window's first time
    path, path_kl = [h], torch.zeros(samples * batch, dtype=torch.float64)
    for k, dt in enumerate(steps.tolist()):
        learned = f_theta(h, t)
        t = t + dt
        known = torch.stack([torch.zeros_like(h[:, 0]), torch.zeros_like(h[:, 0]), h[:, 0] * h[:, 1] - xi[2] * h[:, 2]])
        path_kl += 0.5 * dt * (learned.square() / g.square()).sum(1)
        h = h + (learned + known.T) * dt + math.sqrt(dt) * g * noise[k]
        path.append(h)
    predictions = torch.stack(path).view(len(path), samples, batch, 3)
    targets = y.double().transpose(0, 1)[:, None]
    log_density = -0.5 * ((predictions - targets).square() / variance + math.log(2 * math.pi * variance))
    mll = float(log_density.sum((0, 3)).mean())
    weight_kl = weight_kl_by_hand(method.sde.drift, alpha)
    kl = float(path_kl.view(samples, batch).mean(0).sum()) * num_train / batch + weight_kl
    complexity = math.sqrt((kl + math.log(4 * math.sqrt(num_train) / delta)) / (2 * num_train))

    assert method.diagnostics()["kl"] == pytest.approx(kl, rel=1e-4)
    assert method.diagnostics()["pac_complexity"] == pytest.approx(complexity, rel=1e-4)
    assert loss - (-mll) == pytest.approx(complexity, abs=1e-3 * max(1.0, abs(mll)))
    assert loss == pytest.approx(-mll + complexity, rel=1e-4)


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


# --- the data terms of eqs. 6.8 and 6.15 -------------------------------------------------------------------------


def test_log_mean_exp_and_mean_log_data_terms():
    """E-Bayes' -(1/B) sum_n log (1/S) sum_s p(Y_n | H^s) (eq. 6.8) against a hand value; with S = 1 it is the
    mean-of-logs term of eq. 6.15 / Algorithm 2; with S > 1 Jensen gives -logmeanexp <= -mean log."""
    likelihoods = torch.tensor([[0.2, 0.5], [0.4, 0.1]])  # [S, B]
    assert float(log_mean_exp_data_term(likelihoods.log())) == pytest.approx(-math.log(0.3), rel=1e-6)
    expected_mean_log = -(math.log(0.2) + math.log(0.5) + math.log(0.4) + math.log(0.1)) / 4
    assert float(mean_log_data_term(likelihoods.log())) == pytest.approx(expected_mean_log, rel=1e-6)
    torch.manual_seed(0)
    log_likelihoods = torch.randn(5, 7) * 3 - 10
    one = log_likelihoods[:1]
    torch.testing.assert_close(log_mean_exp_data_term(one), mean_log_data_term(one))
    assert float(log_mean_exp_data_term(log_likelihoods)) < float(mean_log_data_term(log_likelihoods))


def test_e_bayes_with_one_sample_is_the_elbo_data_term(lorenz):
    """With S = 1, E-Bayes' loss (eq. 6.8) is the mean-of-logs data term, i.e. the D-BNN ELBO's loss less its
    KL / N, on the same weights and seed; with S = 3 its log-mean-exp term is below the mean of logs."""
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    e_bayes, elbo = make_method("method.objective=e_bayes"), make_method("method.objective=elbo")
    torch.manual_seed(1)
    loss_e_bayes = e_bayes.loss(x, y, 20).item()
    torch.manual_seed(1)
    loss_elbo = elbo.loss(x, y, 20).item()
    kl = elbo.sde.drift.kl(elbo.prior_precision).item()
    assert loss_e_bayes == pytest.approx(loss_elbo - kl / 20, rel=1e-6)
    several, mean_log = (
        make_method("method.objective=e_bayes", "method.num_samples=3"),
        make_method("method.objective=none", "method.num_samples=3"),
    )
    mean_log.sde.drift = several.sde.drift  # the same model, scored by the mean of logs
    torch.manual_seed(2)
    loss_several = several.loss(x, y, 20).item()
    torch.manual_seed(2)
    assert loss_several < mean_log.loss(x, y, 20).item()


# --- gradients: the authors' two bugs ------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["e_pac_bayes", "e_bayes", "elbo"])
def test_a_training_step_reaches_every_drift_parameter(lorenz, objective):
    """After one training step (Algorithm 2's loss, or eq. 6.8, or the ELBO) every parameter of the drift, the
    means and the log-variances of all three layers, has a finite gradient that is nonzero in every entry (the
    authors' weight KL read no parameters; without a KL term the log-variances must get their gradient through
    the local reparameterisation of §6.2.2)."""
    method = make_method(f"method.objective={objective}", "method.drift.widths=[8,8]")
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    torch.manual_seed(0)
    method.training_step(x, y, 20, Adam(method.parameter_groups(1e-3, 1.0)))
    named = dict(method.sde.drift.named_parameters())
    assert len(named) == 12
    for name, p in named.items():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert bool((p.grad != 0).all()), (name, int((p.grad == 0).sum()))


def test_weight_kl_reads_every_layer():
    """KL(p_phi(theta) || N(0, 1/alpha)) of Lemma 1 is the closed form summed over every weight and bias of every
    layer, and so changes when any layer's means or log-variances change (the authors' code's, `manuelhaussmann/bnsde`
    `bnn.py`, weight KL looked up attribute names that its layers did not have and was 0)."""
    torch.manual_seed(0)
    drift = BayesianDrift(3, [8, 8], "softplus")
    alpha = 0.7
    expected = weight_kl_by_hand(drift, alpha)
    assert drift.kl(alpha).item() == pytest.approx(expected, rel=1e-5)
    assert expected > 100  # log sigma^2 = -9 at initialisation: about 4 nats per weight
    base = drift.kl(alpha).item()
    for index, layer in enumerate(drift.layers):
        for name in ("weight_log_variance", "bias_log_variance", "weight_mean", "bias_mean"):
            tensor = getattr(layer, name)
            with torch.no_grad():
                tensor.add_(0.5)
            changed = drift.kl(alpha).item()
            with torch.no_grad():
                tensor.sub_(0.5)
            assert changed != pytest.approx(base, rel=1e-6), (index, name)
    assert BayesianDrift(3, [8], "relu", bayesian=False).kl(alpha).item() == 0.0


def test_consecutive_steps_do_not_accumulate_gradients(lorenz):
    """The authors' step never zeroed the gradients: here two consecutive steps on the same batch leave, after
    the second, exactly the gradient of a fresh backward pass at the weights after the first (same seed)."""
    method = make_method("method.objective=e_pac_bayes")
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    optimizer = Adam(method.parameter_groups(1e-2, 1.0))
    torch.manual_seed(0)
    method.training_step(x, y, 20, optimizer)
    first = {name: p.grad.clone() for name, p in method.named_parameters()}
    fresh = copy.deepcopy(method)
    for p in fresh.parameters():
        p.grad = None
    torch.manual_seed(1)
    method.training_step(x, y, 20, optimizer)
    torch.manual_seed(1)
    fresh.loss(x, y, 20).backward()
    for (name, p), q in zip(method.named_parameters(), fresh.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=0, msg=name)
        assert not torch.allclose(p.grad, p.grad + first[name]), name  # accumulation would have been visible


# --- forecast metrics ---------------------------------------------------------------------------------------------


def test_forecasting_metrics_against_a_hand_computation():
    """`forecasting_metrics` (Table 6.1's MSE, Table 6.2's NLL): the MSE of the sample-mean forecast averaged over
    sequences, steps and dimensions; the NLL of each sequence under the moment-matched Gaussian predictive
    N(mean_s, var_s (population) + noise) summed over its steps and dimensions, then averaged over sequences."""
    samples = torch.tensor(
        [
            [[[0.0, 1.0], [2.0, 0.5]], [[1.0, -1.0], [0.0, 3.0]]],
            [[[1.0, 2.0], [1.0, 0.5]], [[3.0, -2.0], [1.0, 1.0]]],
            [[[2.0, 0.0], [0.0, 2.0]], [[2.0, 0.0], [2.0, 2.0]]],
        ]
    )  # [S = 3, B = 2, L = 2, D = 2]
    y = torch.tensor([[[1.0, 0.0], [1.0, 1.0]], [[0.0, -1.0], [2.0, 0.0]]])
    noise = 0.25
    squared, nll_per_sequence = [], []
    for n in range(2):
        total = 0.0
        for step in range(2):
            for d in range(2):
                values = [float(samples[s, n, step, d]) for s in range(3)]
                mean = sum(values) / 3
                variance = sum((v - mean) ** 2 for v in values) / 3 + noise
                target = float(y[n, step, d])
                squared.append((mean - target) ** 2)
                total += 0.5 * (math.log(2 * math.pi * variance) + (target - mean) ** 2 / variance)
        nll_per_sequence.append(total)
    metrics = forecasting_metrics(samples, y, noise)
    assert metrics["mse"] == pytest.approx(sum(squared) / len(squared), rel=1e-6)
    assert metrics["nll"] == pytest.approx(sum(nll_per_sequence) / 2, rel=1e-6)


# --- errors on bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["method.knowledge.gamma=[0,1]"], r"knowledge\.gamma \[0, 1\] has 2 entries for a 3-dimensional state"),
        (["method.knowledge.gamma=[0,1.5,0]"], r"knowledge\.gamma .* has weights \[1\.5\] outside \[0, 1\]"),
        (["method.knowledge.gamma=[-0.1,0,0]"], r"weights \[-0\.1\] outside \[0, 1\]"),
        (["method.delta=0"], r"delta is 0"),
        (["method.delta=1.5"], r"delta is 1\.5"),
        (["dataset.dynamics.diffusion=[1.0,0.0,1.0]"], r"diffusion \[1\.0, 0\.0, 1\.0\] must have 3 positive entries"),
        (["dataset.dynamics.diffusion=[1.0,-1.0,1.0]"], r"diffusion \[1\.0, -1\.0, 1\.0\] must have 3 positive"),
        (["dataset.dynamics.diffusion=[1.0,1.0]"], r"diffusion \[1\.0, 1\.0\] must have 3 positive entries"),
        (["method.objective=map"], r"unknown method\.objective 'map'"),
        (["dataset.dynamics.parameter_noise_std=-1"], r"parameter_noise_std is -1"),
        (
            ["dataset.dynamics.system=pendulum", "method.knowledge.gamma=[1,1,1]"],
            r"unknown knowledge\.system 'pendulum'",
        ),
        (["method.weight_sampling=per_weight"], r"unknown method\.weight_sampling 'per_weight'"),
        (["dataset.dynamics.likelihood_variance=0"], r"likelihood_variance is 0"),
        (["dataset.dynamics.system=null", "method.knowledge.gamma=[0,0,1]"], r"knows no system to weigh"),
    ],
)
def test_bad_configs_name_the_value(overrides, match):
    with pytest.raises(ValueError, match=match):
        make_method(*overrides)


def test_bad_arguments_name_the_value():
    for delta in (0.0, 1.0, -0.2):
        with pytest.raises(ValueError, match=rf"delta is {delta}"):
            pac_complexity(torch.tensor(1.0), 10, delta)
    drift = BayesianDrift(2, [4], "tanh")
    with pytest.raises(ValueError, match=r"unknown weight_sampling 'per_step'"):
        drift.draw(3, "per_step")
    with pytest.raises(ValueError, match=r"unknown drift activation 'sigmoid'"):
        BayesianDrift(2, [4], "sigmoid")
    with pytest.raises(ValueError, match=r"diffusion \[0\.2\] must have 2 positive entries"):
        HybridSDE(drift, no_knowledge(2), [0.2])
    with pytest.raises(ValueError, match=r"method bnsde forecasts sequences"):
        build(_config("lorenz", (SMALL_DRIFT,)), DataSpec("regression", 1, 0, (1,)))


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


# --- the D-BNN SGLD baseline and the white box -------------------------------------------------------------------


def test_sgld_trains_point_weights(lorenz):
    """D-BNN (SGLD) (Look & Kandemir 2019, §6.4 baselines): point weights only (no log-variance exists), a
    deterministic drift, and one Langevin step moves every weight."""
    method = make_method("method.objective=sgld")
    names = [name for name, _ in method.named_parameters()]
    assert names and not [name for name in names if "variance" in name]
    assert not method.sde.drift.bayesian
    h, t = torch.randn(5, 3), torch.rand(5)
    drift = method.sde.drift
    torch.testing.assert_close(drift.draw(5, "per_trajectory")(h, t), drift.draw(5, "mean")(h, t))
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    before = parameters(method)
    torch.manual_seed(0)
    loss = method.training_step(x, y, 20, Adam(method.parameter_groups(1e-4, 1.0)))
    assert math.isfinite(loss)
    for name, value in parameters(method).items():
        assert torch.isfinite(value).all(), name
        assert bool((value != before[name]).all()), name


def test_white_box_has_nothing_to_train(lorenz):
    """The white-box prior SDE (objective none, eq. 6.6) has no drift network and no parameters; its training
    step returns a finite loss and leaves the state as it was."""
    method = make_method("method.objective=none", "method.knowledge.gamma=[1,1,1]")
    assert method.sde.drift is None and list(method.parameters()) == []
    state = {name: value.clone() for name, value in method.state_dict().items()}
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    loss = method.training_step(x, y, 20, Adam(method.parameter_groups(1e-3, 1.0)))
    assert math.isfinite(loss)
    after = method.state_dict()
    assert after.keys() == state.keys()
    for name, value in state.items():
        assert torch.equal(after[name], value), name


# --- CMU's pretrained prior knowledge ------------------------------------------------------------------------------


def test_pretrained_knowledge_with_null_gamma_weighs_every_latent_dimension():
    """config/train/method/bnsde.yaml: knowledge.gamma null "with `pretrained` [means] every latent dimension":
    the CMU hybrids of Table 6.2 (§6.4.3; the study's e_*_hybrid@cmu set only pretrained: true) must add the
    pretrained drift with gamma = 1 in all six latent dimensions."""
    length, frames = 10, 5
    arrays = {
        f"{a}_{s}": np.random.default_rng(0).standard_normal((3, length, frames)).astype(np.float32)
        for a in "xy"
        for s in ("train", "val", "test")
    }
    cfg = _config(
        "cmu_mocap35", (SMALL_DRIFT, "method.knowledge.pretrained=true", "method.knowledge.pretrain_epochs=0")
    )
    torch.manual_seed(0)
    method = build(cfg, DataSpec("forecasting", length, 0, (length, frames)), Splits(arrays))
    assert method.sde.knowledge.active
    torch.testing.assert_close(method.sde.knowledge.gamma, torch.ones(6))


def test_curriculum_switches_snippet_length_at_the_thesis_epochs():
    """CMU's curriculum (§6.6.3): snippets of 30 frames up to epoch 1000 of 3000, 50 up to 2500, then 100; the
    fractions 1/3 and 5/6 of the config round to those epochs."""
    curriculum = "method.curriculum={lengths: [30,50,100], until_fraction: [0.3333333,0.8333333]}"
    cfg = _config("cmu_mocap35", (SMALL_DRIFT, curriculum, "train.epochs=3000"))
    method = build(cfg, DataSpec("forecasting", 300, 0, (300, 50)))
    sequences = torch.zeros(2, 300, 50)
    lengths = {}
    for done in (0, 999, 1000, 2499, 2500, 2999):
        method.epochs_done.fill_(done)
        lengths[done + 1] = method.snippet(sequences).shape[1]
    assert lengths == {1: 30, 1000: 30, 1001: 50, 2500: 50, 2501: 100, 3000: 100}

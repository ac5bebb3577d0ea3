"""Bayesian neural SDEs with empirical (PAC-)Bayes (Haußmann 2021 thesis, ch. 6), their objective: the path KL of
Lemma 1 against its closed form for a linear drift and against torchsde's `logqp` (a drift that reads the time
included), the PAC term of Theorem 1 / Algorithm 2 and the E-PAC-Bayes loss rebuilt by hand, and the data terms of
eqs. 6.8 and 6.15. The SDE's dynamics are tested in tests/test_bnsde_dynamics.py, training and configuration in
tests/test_bnsde_training.py; their shared helpers are in tests/bnsde_helpers.py."""

from __future__ import annotations

import math

import pytest
import torch
import torchsde
from torch.nn import functional as F

from bnnrepro.inference.pac_bayes import log_mean_exp_data_term, mean_log_data_term, pac_complexity
from bnnrepro.models.bayesian_drift import BayesianDrift
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.models.prior_knowledge import KnowledgeDrift
from tests import bnsde_helpers
from tests.bnsde_helpers import linear_drift, make_method, no_knowledge, weight_kl_by_hand

pytestmark = pytest.mark.usefixtures("one_torch_thread")

lorenz = bnsde_helpers.lorenz  # the module-scoped fixture, bound here: ruff reads an imported fixture as unused


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

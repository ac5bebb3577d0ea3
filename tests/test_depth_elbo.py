"""The ELBO of eq. (10) against a brute-force sum over truncations, and its lambda-gradient (UDN paper eqs. 8-10)."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from bnnrepro.inference import depth_posteriors
from bnnrepro.inference.depth_elbo import depth_elbo
from bnnrepro.methods.depth_networks import DepthNetworkMethod
from bnnrepro.methods.laplace import default_dtype
from bnnrepro.models.unbounded_depth import UnboundedDepthNetwork, fully_connected_layer, linear_head

IN, WIDTH, OUT, N = 2, 5, 2, 7


def make_method(posterior, prior, heads, prior_std, seed=0):
    torch.manual_seed(seed)
    network = UnboundedDepthNetwork(fully_connected_layer(IN, WIDTH), linear_head(WIDTH, OUT), heads=heads)
    method = DepthNetworkMethod(network, posterior, prior, prior_std**2)
    # move the weights away from PyTorch's small default init so that the KL terms matter
    with torch.no_grad():
        for p in network.parameters():
            p.mul_(1.5).add_(0.1)
    return method


def udn_method(rate, prior_std):
    """The UDN: q(l) = TP(rate), l - 1 ~ Poisson(0.5), one head per depth."""
    return make_method(
        depth_posteriors.TruncatedPoisson(rate), depth_posteriors.ShiftedPoissonPrior(0.5), "per_depth", prior_std
    )


def make_data(n=N, seed=1, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, IN, generator=g).to(dtype)
    y = torch.randint(0, OUT, (n,), generator=g)
    return x, y


def as_np(t):
    return t.detach().double().numpy()


def explicit_logits(network, x, depth):
    """Omega_l(x) from the raw weights: h_k = relu(W_k h_{k-1} + b_k), then head l (or the shared head)."""
    h = as_np(x)
    for k in range(depth):
        linear = network.layers[k][0]
        h = np.maximum(h @ as_np(linear.weight).T + as_np(linear.bias), 0.0)
    head = network.heads[0] if network.head_mode == "shared" else network.heads[depth - 1]
    return h @ as_np(head.weight).T + as_np(head.bias)


def log_likelihood(logits, y):
    """sum_i log softmax(logits_i)[y_i], with a hand-written log-sum-exp."""
    top = logits.max(axis=1, keepdims=True)
    log_norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    return float((logits[np.arange(len(y)), y.numpy()] - log_norm).sum())


def kl_scalar_sum(params, s):
    """sum over scalars of KL(N(nu, 1) || N(0, s^2)) = log s + (1 + nu^2) / (2 s^2) - 1/2."""
    total = 0.0
    for p in params:
        nu = as_np(p)
        total += float((math.log(s) + (1 + nu**2) / (2 * s**2) - 0.5).sum())
    return total


def brute_force_terms(method, q, log_p, x, y, num_train, prior_std):
    """Per-depth G_l = log p(l) - log q(l) - sum_{k<=l} KL_k + data_l for the depths with q(l) > 0."""
    network = method.network
    shared = kl_scalar_sum(network.heads[0].parameters(), prior_std) if network.head_mode == "shared" else 0.0
    G = np.full(len(q), np.nan)
    cumulative_kl = shared
    for depth in range(1, len(q) + 1):
        block = list(network.layers[depth - 1].parameters())
        if network.head_mode == "per_depth":
            block += list(network.heads[depth - 1].parameters())
        cumulative_kl += kl_scalar_sum(block, prior_std)
        if q[depth - 1] == 0:
            continue
        data = log_likelihood(explicit_logits(network, x, depth), y) * num_train / len(y)
        G[depth - 1] = log_p[depth - 1] - math.log(q[depth - 1]) - cumulative_kl + data
    return G


def brute_force_elbo(q, G):
    support = q > 0
    return float((q[support] * G[support]).sum())


def udn_reference_q(rate):
    top = max(int(stats.poisson.ppf(0.95, rate)), math.floor(rate) + 1)
    pmf = stats.poisson.pmf(np.arange(top + 1), rate)
    return pmf / pmf.sum()


# --- the ELBO value ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("prior_std", [1.0, 2.0])
def test_udn_elbo_matches_brute_force(prior_std):
    method = udn_method(1.3, prior_std)
    x, y = make_data()
    rate = float(method.depth_posterior.rate.detach())
    q = udn_reference_q(rate)
    assert len(q) == method.depth_posterior.max_depth() == 4
    log_p = stats.poisson.logpmf(np.arange(len(q)), 0.5)
    G = brute_force_terms(method, q, log_p, x, y, N, prior_std)
    expected = brute_force_elbo(q, G)
    assert float(method.elbo(x, y, N).detach()) == pytest.approx(expected, rel=1e-4)
    assert float(method.loss(x, y, N).detach()) == pytest.approx(-expected / N, rel=1e-4)


@pytest.mark.parametrize("prior_std", [1.0, 2.0])
def test_dun_elbo_matches_brute_force(prior_std):
    torch.manual_seed(3)
    posterior = depth_posteriors.CategoricalDepth(4)
    with torch.no_grad():
        posterior.logits.copy_(torch.randn(4))
    method = make_method(posterior, depth_posteriors.UniformDepthPrior(4), "shared", prior_std)
    x, y = make_data()
    logits = as_np(posterior.logits)
    q = np.exp(logits - logits.max())
    q /= q.sum()
    log_p = np.full(4, -math.log(4))
    G = brute_force_terms(method, q, log_p, x, y, N, prior_std)
    assert float(method.elbo(x, y, N).detach()) == pytest.approx(brute_force_elbo(q, G), rel=1e-4)


@pytest.mark.parametrize("prior_std", [1.0, 2.0])
def test_finite_network_elbo_is_map_objective(prior_std):
    method = make_method(depth_posteriors.FixedDepth(3), depth_posteriors.PointMassPrior(), "shared", prior_std)
    x, y = make_data()
    network = method.network
    assert network.depth == 3
    weights = [*network.heads[0].parameters(), *network.layers.parameters()]
    expected = log_likelihood(explicit_logits(network, x, 3), y) - kl_scalar_sum(weights, prior_std)
    assert float(method.elbo(x, y, N).detach()) == pytest.approx(expected, rel=1e-4)


def test_minibatch_rescales_data_term():
    prior_std = 1.0
    method = udn_method(1.3, prior_std)
    x, y = make_data()
    xb, yb = x[2:5], y[2:5]  # B = 3 < n = 7
    q = udn_reference_q(float(method.depth_posterior.rate.detach()))
    log_p = stats.poisson.logpmf(np.arange(len(q)), 0.5)
    G = brute_force_terms(method, q, log_p, xb, yb, N, prior_std)  # data term (7/3) sum over the batch
    assert float(method.elbo(xb, yb, N).detach()) == pytest.approx(brute_force_elbo(q, G), rel=1e-4)
    # and the unscaled version differs (the rescaling matters)
    G_unscaled = brute_force_terms(method, q, log_p, xb, yb, len(yb), prior_std)
    assert abs(brute_force_elbo(q, G_unscaled) - brute_force_elbo(q, G)) > 1.0


def test_depth_elbo_ignores_depths_outside_support():
    log_q = torch.log(torch.tensor([0.0, 0.25, 0.75]))
    log_prior = torch.tensor([-1.0, -2.0, -3.0])
    log_lik = torch.tensor([float("nan"), -10.0, -20.0])  # never computed outside the support
    weight_kl = torch.tensor([1.0, 2.0, 3.0])
    expected = 0.25 * (-2 - 10 - 2 - math.log(0.25)) + 0.75 * (-3 - 20 - 3 - math.log(0.75))
    assert float(depth_elbo(log_q, log_prior, log_lik, weight_kl)) == pytest.approx(expected, rel=1e-6)


# --- the lambda-gradient ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [1.3, 4.2])
def test_lambda_gradient_finite_differences_and_covariance(lam):
    prior_std = 1.0
    with default_dtype(torch.float64):
        method = udn_method(lam, prior_std).double()
        x, y = make_data(dtype=torch.float64)
        rho = method.depth_posterior.rho
        assert rho.dtype == torch.float64
        method.zero_grad()
        method.elbo(x, y, N).backward()
        grad_rho = float(rho.grad)
        rate = float(method.depth_posterior.rate.detach())
        grad_lambda = grad_rho / (1 / (1 + math.exp(-float(rho.detach()))))

        # (a) central finite differences in rho, the support held fixed
        eps = 1e-6
        depth = method.depth_posterior.max_depth()
        values = []
        with torch.no_grad():
            rho0 = rho.detach().clone()
            for sign in (1, -1):
                rho.copy_(rho0 + sign * eps)
                assert method.depth_posterior.max_depth() == depth
                values.append(float(method.elbo(x, y, N).detach()))
            rho.copy_(rho0)
        fd = (values[0] - values[1]) / (2 * eps)
        assert grad_rho == pytest.approx(fd, rel=1e-5, abs=1e-7)

        # (b) closed form Cov_q(l, G_l) / lambda
        q = udn_reference_q(rate)
        assert len(q) == depth
        log_p = stats.poisson.logpmf(np.arange(len(q)), 0.5)
        G = brute_force_terms(method, q, log_p, x, y, N, prior_std)
        depths = np.arange(1, len(q) + 1)
        covariance = float((q * depths * G).sum() - (q * depths).sum() * (q * G).sum())
        assert abs(covariance) > 1e-3  # non-trivial
        assert grad_lambda == pytest.approx(covariance / rate, rel=1e-6)


# --- numerical edge cases (these two tests fail on the current src: see the report) -----------------------


def test_depth_elbo_gradient_finite_when_q_underflows():
    # q(1) = exp(-110) underflows to 0 in float32 while log q(1) is finite; the entropy's gradient must stay finite
    logits = torch.tensor([-110.0, 0.0, 0.0], requires_grad=True)
    elbo = depth_elbo(torch.log_softmax(logits, 0), torch.zeros(3), torch.zeros(3), torch.zeros(3))
    assert float(elbo.detach()) == pytest.approx(math.log(2), rel=1e-6)
    elbo.backward()
    assert torch.isfinite(logits.grad).all(), logits.grad
    # d H / d z_l = -q_l (log q_l + H): about 0 for the vanishing depth, and 0 for the two equal ones
    torch.testing.assert_close(logits.grad, torch.zeros(3), atol=1e-6, rtol=0)


def test_lambda_gradient_finite_for_large_rates():
    # lambda = 110: q(1) ~ exp(-110) is 0 in float32 (m = 129); the float32 gradient must match float64's
    x, y = make_data()
    grads = {}
    for dtype in (torch.float32, torch.float64):
        with default_dtype(dtype):
            method = udn_method(110.0, 1.0).to(dtype)
            method.elbo(x.to(dtype), y, N).backward()
            grads[dtype] = float(method.depth_posterior.rho.grad)
    assert math.isfinite(grads[torch.float32]), grads
    assert grads[torch.float32] == pytest.approx(grads[torch.float64], rel=1e-2)


def test_elbo_after_double():
    # nn.Module.double() should give a float64 ELBO (no need to change the global default dtype)
    method = udn_method(1.3, 1.0).double()
    x, y = make_data(dtype=torch.float64)
    q = udn_reference_q(float(method.depth_posterior.rate.detach()))
    G = brute_force_terms(method, q, stats.poisson.logpmf(np.arange(len(q)), 0.5), x, y, N, 1.0)
    elbo = method.elbo(x, y, N)
    assert elbo.dtype == torch.float64
    assert float(elbo.detach()) == pytest.approx(brute_force_elbo(q, G), rel=1e-7)

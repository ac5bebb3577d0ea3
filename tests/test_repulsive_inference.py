"""Kernels, score estimators and update rules of repulsive deep ensembles (D'Angelo & Fortuin 2021, §2-3).

Score estimators are compared with exact scores on N = 1000 samples, in float64, on the central part of each target
(outside it the samples are too sparse for any kernel estimator). The error measure is the relative error
||s_hat - s|| / ||s|| over those samples. At N = 1000 it is not small, because these estimators converge slowly.
Over 20 seeds it was, as mean ± sd (max):

    target      KDE vs smoothed score   SGE                  SSGE at the samples   SSGE at fresh points
    Gaussian 2  0.16 ± 0.02 (0.20)      0.24 ± 0.03 (0.31)   0.21 ± 0.03 (0.27)    0.22 ± 0.04 (0.29)
    Gaussian 5  0.14 ± 0.01 (0.16)      0.30 ± 0.02 (0.32)   0.24 ± 0.02 (0.26)    0.25 ± 0.02 (0.28)
    funnel      0.14 ± 0.03 (0.19)      0.29 ± 0.05 (0.36)   0.36 ± 0.03 (0.41)    0.37 ± 0.03 (0.43)

(the push-forward prior of the linear model: 0.20 ± 0.05 (0.30)). The tolerances (`TOLERANCE`) sit 3.5 to 5 sd above
the mean. A broken estimator is above them: halving the estimate gives 0.47 to 0.54, doubling it 1.0 to 1.3, and a
sign error about 2. SGE and SSGE use a wider kernel (h = med^2) and a larger ridge (0.3) than the method's defaults
(med^2 / log n, 0.01): with the defaults their errors on i.i.d. samples are 1.4 to 2.2 on the Gaussians (0.5 to 0.7
on the funnel). As particle dynamics, where the particles are no i.i.d. sample, the defaults do fit the target
(`test_particles_match_the_gaussian_target`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist
from torch import nn
from torch.nn.utils import parameters_to_vector

from bnnrepro.inference.kernels import median_heuristic_bandwidth, rbf_kernel, rbf_kernel_grad_sum, squared_distances
from bnnrepro.inference.repulsive import (
    deep_ensemble_direction,
    ensemble_vjp,
    fsvgd_direction,
    function_space_scores,
    functional_prior_score,
    fwgd_direction,
    log_posterior_grads,
    sample_prior_outputs,
    svgd_direction,
    wgd_direction,
)
from bnnrepro.inference.score_estimators import kde_score, sge_score, ssge_score
from bnnrepro.optim import Adam

NUM_SAMPLES = 1000
FRESH_POINTS = 200
TOLERANCE = {"kde": 0.3, "sge": 0.45, "ssge": 0.5}
STEIN_RIDGE = 0.3  # eta for SGE and SSGE in these tests (the default 0.01 overfits i.i.d. samples)


# --- targets with exact scores ------------------------------------------------------------------------------------


def correlated_gaussian(dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and covariance: in 2-D the authors' Fig. 2 target (notebooks/WGD_synthetic.ipynb), in 5-D a random one."""
    if dim == 2:
        return torch.tensor([-0.68, 0.80], dtype=torch.float64), torch.tensor([[1.10, 0.80], [0.80, 3.35]]).double()
    generator = torch.Generator().manual_seed(dim)
    factor = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
    return torch.randn(dim, generator=generator, dtype=torch.float64), factor @ factor.T / dim + 0.5 * torch.eye(dim)


def gaussian_score(x: torch.Tensor, mean: torch.Tensor, covariance: torch.Tensor) -> torch.Tensor:
    return -(x - mean) @ torch.linalg.inv(covariance)


def funnel_score(x: torch.Tensor) -> torch.Tensor:
    """Neal's funnel (the paper's Fig. F.1 target): v ~ N(0, 3^2), u | v ~ N(0, e^v), points (u, v):
    grad_u = -u e^-v, grad_v = -v/9 - 1/2 + u^2 e^-v / 2."""
    u, v = x.unbind(-1)
    return torch.stack([-u * torch.exp(-v), -v / 9 - 0.5 + u.square() * torch.exp(-v) / 2], -1)


def smoothed_funnel_score(x: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """The score of the funnel convolved with N(0, h/2 I), the KDE's population limit: the convolution in u is
    closed form, N(u | 0, e^v' + h/2), the one in v a quadrature over v' on a grid of step 0.01."""
    points = x.clone().requires_grad_(True)
    u, v = points[:, :1], points[:, 1:]
    grid = torch.linspace(-40, 40, 8001, dtype=x.dtype)
    u_variance = torch.exp(grid) + bandwidth / 2
    log_u = -0.5 * torch.log(u_variance) - u.square() / (2 * u_variance)
    log_integrand = -grid.square() / 18 + log_u - (v - grid).square() / bandwidth
    return torch.autograd.grad(torch.logsumexp(log_integrand, 1).sum(), points)[0]


def draw(target: str, num: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Samples [num, d], their exact scores and a mask of the samples in the target's central part."""
    generator = torch.Generator().manual_seed(seed)
    if target == "funnel":
        v = 3 * torch.randn(num, generator=generator, dtype=torch.float64)
        u = torch.exp(v / 2) * torch.randn(num, generator=generator, dtype=torch.float64)
        x = torch.stack([u, v], 1)
        return x, funnel_score(x), (v.abs() <= 3) & (u.abs() <= 2 * torch.exp(v / 2))
    mean, covariance = correlated_gaussian(int(target[-1]))
    noise = torch.randn(num, len(mean), generator=generator, dtype=torch.float64)
    x = mean + noise @ torch.linalg.cholesky(covariance).T
    mahalanobis = ((x - mean) @ torch.linalg.inv(covariance) * (x - mean)).sum(1)
    return x, gaussian_score(x, mean, covariance), mahalanobis <= mahalanobis.quantile(0.9)


def relative_error(estimate: torch.Tensor, exact: torch.Tensor, mask: torch.Tensor) -> float:
    return float((estimate[mask] - exact[mask]).norm() / exact[mask].norm())


def squared_median_distance(x: torch.Tensor) -> float:
    """med^2: the Liu & Wang bandwidth times log n, i.e. a kernel of lengthscale ~ the median distance."""
    return float(median_heuristic_bandwidth(squared_distances(x))) * math.log(len(x))


TARGETS = ["gaussian2", "gaussian5", "funnel"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --- kernel -------------------------------------------------------------------------------------------------------


def test_median_heuristic_matches_numpy():
    x = torch.randn(37, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    expected = np.median(pdist(x.numpy())) ** 2 / np.log(37)  # 666 distances: the mean of the two middle ones
    assert float(median_heuristic_bandwidth(squared_distances(x))) == pytest.approx(expected, rel=1e-12)
    assert float(median_heuristic_bandwidth(squared_distances(x[:1]))) == 1.0
    coincident = torch.zeros(3, 2)
    assert torch.equal(
        rbf_kernel(coincident, coincident, median_heuristic_bandwidth(squared_distances(coincident))), torch.ones(3, 3)
    )


def test_kernel_gradient_sum_matches_autograd():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(6, 3, generator=generator, dtype=torch.float64)
    y = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    leaf = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(rbf_kernel(leaf, y, 0.7).sum(), leaf)
    torch.testing.assert_close(rbf_kernel_grad_sum(x, y, 0.7), expected)
    assert float(rbf_kernel(x, y, 0.7)[0, 1]) == pytest.approx(math.exp(-float((x[0] - y[1]).square().sum()) / 0.7))


# --- score estimators ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_kde_score_matches_the_smoothed_target(target):
    """Eq. (14) is the score of the KDE, whose population limit is the target convolved with the kernel, a Gaussian
    N(0, h/2 I): its exact score is the reference (against the unsmoothed score the bias in h dominates)."""
    x, _, mask = draw(target, NUM_SAMPLES, seed=0)
    h = float(median_heuristic_bandwidth(squared_distances(x)))
    if target == "funnel":
        exact = smoothed_funnel_score(x, h)
    else:
        mean, covariance = correlated_gaussian(x.shape[1])
        exact = gaussian_score(x, mean, covariance + h / 2 * torch.eye(len(mean), dtype=x.dtype))
    assert relative_error(kde_score(x), exact, mask) < TOLERANCE["kde"]


@pytest.mark.parametrize("target", TARGETS)
def test_sge_score_matches_the_exact_score(target):
    x, exact, mask = draw(target, NUM_SAMPLES, seed=0)
    estimate = sge_score(x, ridge=STEIN_RIDGE, bandwidth=squared_median_distance(x))
    assert relative_error(estimate, exact, mask) < TOLERANCE["sge"]


@pytest.mark.parametrize("target", TARGETS)
def test_ssge_score_matches_the_exact_score_at_samples_and_fresh_points(target):
    points, exact, mask = draw(target, NUM_SAMPLES + FRESH_POINTS, seed=0)
    x = points[:NUM_SAMPLES]
    estimate = ssge_score(x, points, ridge=STEIN_RIDGE, bandwidth=squared_median_distance(x))
    at_samples, at_fresh = slice(None, NUM_SAMPLES), slice(NUM_SAMPLES, None)
    assert relative_error(estimate[at_samples], exact[at_samples], mask[at_samples]) < TOLERANCE["ssge"]
    assert relative_error(estimate[at_fresh], exact[at_fresh], mask[at_fresh]) < TOLERANCE["ssge"]


def test_ssge_with_fewer_eigenfunctions_is_a_truncation():
    """J = n reproduces the estimate at the samples, K (K + eta I)^-2 G (eq. 17), and J < n differs."""
    x, _, _ = draw("gaussian2", 50, seed=2)
    h = squared_median_distance(x)
    kernel = rbf_kernel(x, x, h)
    regularised = kernel + STEIN_RIDGE * torch.eye(50, dtype=x.dtype)
    expected = kernel @ torch.linalg.solve(regularised @ regularised, rbf_kernel_grad_sum(x, x, h, kernel))
    torch.testing.assert_close(ssge_score(x, ridge=STEIN_RIDGE, num_eigenfunctions=50, bandwidth=h), expected)
    truncated = ssge_score(x, ridge=STEIN_RIDGE, num_eigenfunctions=5, bandwidth=h)
    assert not torch.allclose(truncated, expected, atol=1e-3)


# --- particle dynamics on a Gaussian ------------------------------------------------------------------------------


def run_particles(direction, num_particles: int, steps: int = 500) -> torch.Tensor:
    """The particles after `steps` Adam steps (lr 0.1) on -phi, from N((-1, 5), 0.5 I): the authors' Fig. 2 set-up
    (notebooks/WGD_synthetic.ipynb), with the target of `correlated_gaussian(2)`."""
    mean, covariance = correlated_gaussian(2)
    start = torch.tensor([-1.0, 5.0], dtype=torch.float64)
    particles = start + 0.5**0.5 * torch.randn(num_particles, 2, generator=torch.Generator().manual_seed(0)).double()
    optimiser = Adam([{"params": [particles], "lr": 0.1}])
    for _ in range(steps):
        particles.grad = -direction(particles, gaussian_score(particles, mean, covariance))
        optimiser.step()
    return particles


def moment_errors(particles: torch.Tensor) -> tuple[float, float]:
    """||mean - mu|| / sqrt(tr Sigma) and ||cov - Sigma||_F / ||Sigma||_F."""
    mean, covariance = correlated_gaussian(2)
    mean_error = (particles.mean(0) - mean).norm() / covariance.trace().sqrt()
    return float(mean_error), float((torch.cov(particles.T) - covariance).norm() / covariance.norm())


@pytest.mark.parametrize(
    "direction",
    [
        functools.partial(wgd_direction, estimator=sge_score),
        functools.partial(wgd_direction, estimator=ssge_score),
        svgd_direction,
    ],
    ids=["sge-WGD", "ssge-WGD", "SVGD"],
)
def test_particles_match_the_gaussian_target(direction):
    """Fig. 2: SGE-WGD, SSGE-WGD and SVGD (with the default kernel, bandwidth and eta) fit the target; with 100
    particles the moments are off by about 7 %."""
    mean_error, covariance_error = moment_errors(run_particles(direction, 100))
    assert mean_error < 0.05 and covariance_error < 0.12


def test_kde_wgd_approaches_the_gaussian_target_as_particles_grow():
    """KDE-WGD with the median heuristic fits the target less well than the others (Fig. 2): 100 particles are
    under-dispersed (covariance about 20 % off, both variances too small); the fit improves with the number of
    particles, towards the n -> infinity limit in which KDE-WGD samples the target (paper §3.2)."""
    direction = functools.partial(wgd_direction, estimator=kde_score)
    particles = run_particles(direction, 100)
    mean_error, covariance_error = moment_errors(particles)
    _, covariance = correlated_gaussian(2)
    assert mean_error < 0.05 and covariance_error < 0.25
    assert (torch.cov(particles.T).diagonal() < covariance.diagonal()).all()
    assert moment_errors(run_particles(direction, 200))[1] < covariance_error - 0.02


def test_deep_ensemble_collapses_to_the_mode():
    mean, _ = correlated_gaussian(2)
    particles = run_particles(lambda particles, grads: deep_ensemble_direction(grads), 100)
    torch.testing.assert_close(particles, mean.expand_as(particles), atol=1e-3, rtol=0)


def test_svgd_with_one_particle_is_gradient_ascent():
    x = torch.tensor([[0.3, -1.2, 2.0]], dtype=torch.float64)
    grads = torch.tensor([[1.5, -0.25, 4.0]], dtype=torch.float64)
    torch.testing.assert_close(svgd_direction(x, grads), grads, rtol=0, atol=0)


# --- function space on a linear model -----------------------------------------------------------------------------


def linear_model_setup(num_particles: int = 5, dim: int = 3, num_inputs: int = 4):
    """f(x; theta) = x . theta (nn.Linear without bias), particles, a batch X and targets."""
    generator = torch.Generator().manual_seed(3)
    model = nn.Linear(dim, 1, bias=False).double()
    particles = torch.randn(num_particles, dim, generator=generator, dtype=torch.float64)
    inputs = torch.randn(num_inputs, dim, generator=generator, dtype=torch.float64)
    targets = torch.randn(num_inputs, 1, generator=generator, dtype=torch.float64)
    return model, particles, inputs, targets


def gaussian_log_likelihood(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -0.5 * (outputs - targets).square().sum(-1)


def pulled_back_kernel(first: torch.Tensor, second: torch.Tensor, inputs: torch.Tensor, h: float) -> torch.Tensor:
    """k~(theta, theta') = k(X theta, X theta'), the function-space kernel as a kernel on weights."""
    return torch.exp(-((first - second) @ inputs.T).square().sum(-1) / h)


@pytest.mark.parametrize("rule", ["kde-fWGD", "f-SVGD"])
def test_function_space_rules_on_a_linear_model_are_weight_space_rules(rule):
    """For f = X theta every Jacobian is X, so J^T (the function-space rule on f_i = X theta_i) must equal the
    weight-space rule in which the kernel is k~(theta, theta') = k(X theta, X theta') and the score is
    grad_theta log p(y | X theta). The reference computes the latter by autograd in weight space, with the
    bandwidth from numpy on the function values; no prior term (that is tested below)."""
    model, particles, inputs, targets = linear_model_setup()
    num_train, n = 50, len(particles)
    outputs, pull_back = ensemble_vjp(model, particles, inputs)
    scores = function_space_scores(outputs, targets, gaussian_log_likelihood, num_train)
    if rule == "kde-fWGD":
        actual = fwgd_direction(outputs, scores, pull_back, kde_score)
    else:
        actual = fsvgd_direction(outputs, scores, pull_back)

    h = float(np.median(pdist((particles @ inputs.T).numpy())) ** 2 / np.log(n))
    theta = particles.clone().requires_grad_(True)
    log_likelihood = num_train * gaussian_log_likelihood((theta @ inputs.T)[..., None], targets).mean(-1)
    (weight_scores,) = torch.autograd.grad(log_likelihood.sum(), theta)
    gram = pulled_back_kernel(particles[:, None], particles[None], inputs, h)
    # kernel_grads[i, j] = grad_{theta_i} k~(theta_i, theta_j)
    kernel_grads = torch.stack(
        [
            torch.stack([torch.func.grad(pulled_back_kernel)(particles[i], particles[j], inputs, h) for j in range(n)])
            for i in range(n)
        ]
    )
    if rule == "kde-fWGD":
        expected = weight_scores - kernel_grads.sum(1) / gram.sum(1, keepdim=True)
    else:
        expected = (gram @ weight_scores + kernel_grads.sum(0)) / n  # sum_j grad_{theta_j} k~(theta_j, theta_i)
    torch.testing.assert_close(actual, expected)


def test_functional_prior_score_on_a_linear_model():
    """The push-forward of w ~ N(0, s^2 I) through f = X w is N(0, s^2 X X^T), with score -(s^2 X X^T)^-1 f. SSGE
    fitted on prior draws must recover it at fresh function values (tolerance of SSGE at fresh points, see the
    module docstring). s^2 = 4 is a variance: read as a standard deviation, the estimate would be 4 times too small."""
    model, _, inputs, _ = linear_model_setup(dim=5, num_inputs=2)
    prior_variance, generator = 4.0, torch.Generator().manual_seed(4)
    prior_outputs = sample_prior_outputs(model, inputs, NUM_SAMPLES + FRESH_POINTS, prior_variance, generator)
    fitted, fresh = prior_outputs[:NUM_SAMPLES], prior_outputs[NUM_SAMPLES:]
    h = squared_median_distance(fitted.flatten(1))
    estimate = functional_prior_score(fresh, fitted, ridge=STEIN_RIDGE, bandwidth=h).flatten(1)
    values = fresh.flatten(1)
    covariance = prior_variance * inputs @ inputs.T
    exact = gaussian_score(values, torch.zeros(2, dtype=values.dtype), covariance)
    mahalanobis = (exact * values).sum(1).neg()
    assert relative_error(estimate, exact, mahalanobis <= mahalanobis.quantile(0.9)) < TOLERANCE["ssge"]


# --- the batched ensemble against a loop over members -------------------------------------------------------------


def categorical_log_likelihood(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return -nn.functional.cross_entropy(logits, labels, reduction="none")


def test_batched_gradients_and_pull_back_match_a_loop_over_members():
    """`model` only supplies the architecture: its own parameters are never used."""
    generator = torch.Generator().manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).double()
    members = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).double() for _ in range(4)]
    particles = torch.stack([parameters_to_vector(member.parameters()) for member in members]).detach()
    inputs = torch.randn(16, 4, generator=generator, dtype=torch.float64)
    labels = torch.randint(3, (16,), generator=generator)
    cotangents = torch.randn(4, 16, 3, generator=generator, dtype=torch.float64)
    num_train, prior_variance = 200, 0.5

    grads, outputs = log_posterior_grads(
        model, particles, inputs, labels, categorical_log_likelihood, num_train, prior_variance
    )
    batched_outputs, pull_back = ensemble_vjp(model, particles, inputs)
    pulled_back = pull_back(cotangents)
    for i, member in enumerate(members):
        params = list(member.parameters())
        logits = member(inputs)
        weights = parameters_to_vector(params)
        log_posterior = num_train * categorical_log_likelihood(logits, labels).mean() - weights.square().sum() / (
            2 * prior_variance
        )
        expected_grad = parameters_to_vector(torch.autograd.grad(log_posterior, params))
        expected_pull_back = parameters_to_vector(torch.autograd.grad(member(inputs), params, cotangents[i]))
        torch.testing.assert_close(grads[i], expected_grad)
        torch.testing.assert_close(outputs[i], logits.detach())
        torch.testing.assert_close(batched_outputs[i], logits.detach())
        torch.testing.assert_close(pulled_back[i], expected_pull_back)

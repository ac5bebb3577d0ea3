"""Update directions of deep ensembles, WGD, SVGD and their function-space versions (D'Angelo & Fortuin 2021).

Each rule returns the ascent direction phi of eq. (2), w_i <- w_i + eps_t phi(w_i), for all particles at once. The
paper's equations are Euler steps and it states no step size; the authors' code (`ratschlab/repulsive_ensembles`,
`methods/WGD.py`, `methods/SVGD.py`) instead feeds -phi to Adam as the gradient. Both are the caller's choice:
`particles += lr * phi`, or `particles.grad = -phi` and an Adam step.

Weight space: particles [n, d] (each row a network's parameters, flattened as by `parameters_to_vector`) and the
gradients of log p(w_i | D) [n, d]. Function space: the outputs f(X_B; w_i) [n, m, out] of every particle on a batch
of m inputs B (the canonical projection pi_B of Def. 1; B is a training minibatch, §2.2), the function-space scores
grad_f log p(f_i | D) [n, m, out], and the pull-back cotangents [n, m, out] -> J_i^T cotangents [n, d] of eq. (5).
The outputs are whatever the network returns (logits or probabilities: not stated in the paper).
The weight prior is N(0, prior_variance I), prior_variance a variance (the paper's reading; the authors' code
(`ratschlab/repulsive_ensembles`, `utils/distributions.py`) passes it as the standard deviation). Gradients of the
whole ensemble come from one vmapped functional_call.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, grad, vjp, vmap

from bnnrepro.inference.kernels import Bandwidth, rbf_gram, rbf_kernel_grad_sum
from bnnrepro.inference.score_estimators import STEIN_RIDGE, ScoreEstimator, kde_score, ssge_score

LogLikelihood = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(outputs [m, out] of one network, targets [m, ...]) -> log p(y_b | f(x_b)) of each example [m]."""

PullBack = Callable[[torch.Tensor], torch.Tensor]
"""Cotangents on the outputs [n, m, out] -> J_i^T cotangent_i for each particle [n, d] (a vector-Jacobian product)."""


def deep_ensemble_direction(log_posterior_grads: torch.Tensor) -> torch.Tensor:
    """Eq. (2), DE: phi(w_i) = grad log p(w_i | D), independent MAP ascent of each member (§2)."""
    return log_posterior_grads


def wgd_direction(
    particles: torch.Tensor, log_posterior_grads: torch.Tensor, estimator: ScoreEstimator = kde_score
) -> torch.Tensor:
    """Eq. (13): phi(x_i) = grad log pi(x_i) - grad log rho(x_i), the particles' own score estimated by `estimator`:
    eqs. (14)-(15) with `kde_score` (kde-WGD), (16) with `sge_score`, (17) with `ssge_score` (§3.2)."""
    return log_posterior_grads - estimator(particles)


def svgd_direction(
    particles: torch.Tensor, log_posterior_grads: torch.Tensor, bandwidth: Bandwidth | None = None
) -> torch.Tensor:
    """Eq. (6), SVGD (Liu & Wang 2016): phi(x_i) = (1/n) sum_j [k(x_j, x_i) grad log p(x_j) + grad_{x_j} k(x_j, x_i)].

    Eq. (6) as printed has grad log p(x_i) in the sum and no 1/n. We take the standard form of its reference
    [51], which the paper's own critique of SVGD (kernel-averaged posterior gradients, §2.3), its eq. (7) (with
    1/n) and the authors' code (`ratschlab/repulsive_ensembles`, `methods/SVGD.py`) all use. The bandwidth is the
    particles' median heuristic unless given.
    """
    kernel, h = rbf_gram(particles, bandwidth)
    # sum_j grad_{x_j} k(x_j, x_i) = -sum_j grad_{x_i} k(x_i, x_j) for the stationary kernel
    return (kernel @ log_posterior_grads - rbf_kernel_grad_sum(particles, particles, h, kernel)) / len(particles)


def fwgd_direction(
    outputs: torch.Tensor, output_scores: torch.Tensor, pull_back: PullBack, estimator: ScoreEstimator = kde_score
) -> torch.Tensor:
    """Eqs. (5), (20), fWGD: phi(w_i) = J_i^T [grad_f log p(f_i | D) - grad log rho(pi_B f_i)], the WGD rule of eq. (13)
    on the flattened batch outputs [n, m * out], pushed back to weights through each particle's Jacobian (§2.2)."""
    function_direction = wgd_direction(outputs.flatten(1), output_scores.flatten(1), estimator)
    return pull_back(function_direction.view_as(outputs))


def fsvgd_direction(
    outputs: torch.Tensor,
    output_scores: torch.Tensor,
    pull_back: PullBack,
    bandwidth: Bandwidth | None = None,
) -> torch.Tensor:
    """Eq. (7), f-SVGD (Wang et al. 2019): phi(w_i) = J_i^T (1/n) sum_j [k(f_i, f_j) grad_{f_j} log p(f_j | D)
    + grad_{f_j} k(f_j, f_i)], the SVGD rule of eq. (6) on the flattened batch outputs, pushed back by J_i (§2.3)."""
    function_direction = svgd_direction(outputs.flatten(1), output_scores.flatten(1), bandwidth)
    return pull_back(function_direction.view_as(outputs))


def unflatten_parameters(model: nn.Module) -> Callable[[torch.Tensor], dict[str, torch.Tensor]]:
    """A flat parameter vector [d] -> {name: tensor} in the layout of `parameters_to_vector(model.parameters())`."""
    named = list(model.named_parameters())
    sizes = [p.numel() for _, p in named]

    def unflatten(vector: torch.Tensor) -> dict[str, torch.Tensor]:
        return {name: chunk.view(p.shape) for (name, p), chunk in zip(named, vector.split(sizes), strict=True)}

    return unflatten


def ensemble_forward(model: nn.Module, particles: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """f(inputs; w_i) for every particle w_i (a row of [n, d]): [n, m, out], one batched forward of `model`."""
    unflatten = unflatten_parameters(model)
    return vmap(lambda w: functional_call(model, unflatten(w), (inputs,)))(particles)


def ensemble_vjp(model: nn.Module, particles: torch.Tensor, inputs: torch.Tensor) -> tuple[torch.Tensor, PullBack]:
    """The outputs f(inputs; w_i) [n, m, out] and the pull-back through each particle's Jacobian J_i (eq. 5)."""
    outputs, vjp_fn = vjp(lambda w: ensemble_forward(model, w, inputs), particles)
    return outputs, lambda cotangents: vjp_fn(cotangents)[0]


def log_posterior_grads(
    model: nn.Module,
    particles: torch.Tensor,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    log_likelihood: LogLikelihood,
    num_train: int,
    prior_variance: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """grad_w log p(w_i | D) for every particle [n, d], and the outputs [n, m, out], from one vmapped forward.

    log p(w | D) = num_train * mean_b log p(y_b | f(x_b; w)) - ||w||^2 / (2 prior_variance) + const: the minibatch
    likelihood rescaled to the training set (as the authors' code, `ratschlab/repulsive_ensembles`
    `utils/distributions.py`) and the Gaussian prior N(0, prior_variance I). `prior_variance` is one variance, or one
    per particle [n] (hyper-deep ensembles, a Table 1 baseline the paper does not describe: members with different
    priors, as in the authors' code, `training/training_mnist_hyper.py`).
    """
    unflatten = unflatten_parameters(model)
    variances = torch.as_tensor(prior_variance, dtype=particles.dtype, device=particles.device)

    def log_posterior(w: torch.Tensor, variance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outputs = functional_call(model, unflatten(w), (inputs,))
        log_prior = -w.square().sum() / (2 * variance)
        return num_train * log_likelihood(outputs, targets).mean() + log_prior, outputs

    return vmap(grad(log_posterior, has_aux=True))(particles, variances.expand(len(particles)))


def sample_prior_outputs(
    model: nn.Module,
    inputs: torch.Tensor,
    num_samples: int,
    prior_variance: float,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draws of the push-forward prior on the batch, f(inputs; w_k) with w_k ~ N(0, prior_variance I): [k, m, out]."""
    dimension = sum(p.numel() for p in model.parameters())
    reference = next(model.parameters())
    weights = torch.randn(num_samples, dimension, generator=generator, dtype=inputs.dtype, device=reference.device)
    return ensemble_forward(model, prior_variance**0.5 * weights, inputs)


def functional_prior_score(
    outputs: torch.Tensor,
    prior_outputs: torch.Tensor,
    ridge: float = STEIN_RIDGE,
    num_eigenfunctions: int | None = None,
    bandwidth: Bandwidth | None = None,
) -> torch.Tensor:
    """grad_f log p(f) at the particles' outputs [n, m, out]: SSGE (`ssge_score`, same options) fitted on draws of the
    push-forward prior on the same batch [k, m, out] and evaluated out of sample, as in Sun et al. [71] (§3.3).
    Prior draws whose squared norm overflows (a deep network under a wide weight prior) are an error: the kernel
    between them would be NaN."""
    squared_norms = prior_outputs.flatten(1).square().sum(1)
    if not torch.isfinite(squared_norms).all():
        raise ValueError(
            f"the push-forward prior's outputs overflow (largest |f| {prior_outputs.abs().max().item():.3g}): the "
            "weight prior is too wide for this network; lower method.prior_variance"
        )
    scores = ssge_score(prior_outputs.flatten(1), outputs.flatten(1), ridge, num_eigenfunctions, bandwidth)
    return scores.view_as(outputs)


def function_space_scores(
    outputs: torch.Tensor,
    targets: torch.Tensor,
    log_likelihood: LogLikelihood,
    num_train: int,
    prior_outputs: torch.Tensor | None = None,
) -> torch.Tensor:
    """grad_f log p(f_i | D) = grad_f log p(y | f_i) + grad_f log p(f_i) on the batch, for every particle [n, m, out].

    The likelihood term is num_train * mean_b log p(y_b | f_b), as in weight space; the prior term is
    `functional_prior_score` on `prior_outputs` (see `sample_prior_outputs`; the authors' code,
    `ratschlab/repulsive_ensembles` `methods/WGD.py`, draws as many as there are particles), or left out when they are
    None. The weight prior does not enter: in function space the push-forward prior takes its place (as in the authors'
    f_WGD and f_s_SVGD).
    """
    scores = vmap(grad(lambda f: num_train * log_likelihood(f, targets).mean()))(outputs)
    return scores if prior_outputs is None else scores + functional_prior_score(outputs, prior_outputs)

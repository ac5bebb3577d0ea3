"""A Gaussian likelihood whose variance is a network output (heteroscedastic regression): the output layer gives a
mean mu(x) and a raw variance per target, sigma^2(x) = softplus(raw) + 1e-6 (Lakshminarayanan et al. 2017 §2.2.1;
Kendall & Gal 2017 §3 predict log sigma^2 instead; the softplus is shared so that the heads differ in inference
alone). Over S samples of the network (ensemble members, weight samples, dropout masks) the predictive is the uniform
mixture of their Gaussians, moment-matched (Lakshminarayanan et al. 2017 §2.4; Kendall & Gal 2017 §3).

Shapes: network outputs [..., 2D] for D targets (means first, raw variances last); means, variances and targets
[..., D].
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional

MINIMUM_VARIANCE = 1e-6
"""Added to the softplus of the raw variance, so that a head never predicts a vanishing variance (§2.2.1)."""

OUTPUTS_PER_TARGET = 2
"""A mean and a raw variance per target."""

HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def mean_and_variance(outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Means and variances [..., D] from network outputs [..., 2D]: the first D outputs are the means, the last D
    the raw variances, sigma^2 = softplus(raw) + MINIMUM_VARIANCE."""
    if outputs.shape[-1] % OUTPUTS_PER_TARGET:
        raise ValueError(
            f"a heteroscedastic head gives a mean and a variance per target: got {outputs.shape[-1]} outputs"
        )
    num_targets = outputs.shape[-1] // OUTPUTS_PER_TARGET
    return outputs[..., :num_targets], functional.softplus(outputs[..., num_targets:]) + MINIMUM_VARIANCE


def gaussian_nll_without_constant(means: torch.Tensor, variances: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(log sigma^2 + (y - mu)^2 / sigma^2) / 2 elementwise: -log N(y | mu, sigma^2) less its constant log(2 pi) / 2,
    the training criterion of a variance head (Lakshminarayanan et al. 2017 §2.2.1)."""
    return 0.5 * (variances.log() + (targets - means).pow(2) / variances)


def gaussian_log_likelihood(means: torch.Tensor, variances: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log N(y | mu, sigma^2) elementwise."""
    return -(HALF_LOG_TWO_PI + gaussian_nll_without_constant(means, variances, targets))


def heteroscedastic_log_likelihood(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log N(y | mu(x), sigma^2(x)) [S, B], summed over the D targets, of network outputs [S, B, 2D]
    (`mean_and_variance`) for targets [B, D]: a heteroscedastic method's data term, as `RegressionLikelihood` gives
    a constant noise's."""
    return gaussian_log_likelihood(*mean_and_variance(outputs), targets).sum(-1)


def moment_matched_mixture(means: torch.Tensor, variances: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance [..., D] of the uniform mixture of the Gaussians N(means[s], variances[s]) over the first
    axis S (§2.4): mean_s mu_s, and mean_s sigma_s^2 + var_s mu_s (population variance). The evaluation's predictive
    (bnnrepro.metrics.gaussian_predictive) is this mixture when `predict` gives the means and `noise_variance_at` the
    mean of the variances."""
    return means.mean(0), variances.mean(0) + means.var(0, unbiased=False)

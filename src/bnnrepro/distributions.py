"""Closed forms shared by the models and methods: Gaussian and Dirichlet KL divergences and the likelihoods of the
networks' outputs.

Prior widths are variances throughout: the weight prior is p(w) = N(0, prior_variance I).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import distributions, nn


def gaussian_sample(mean: torch.Tensor, log_std: torch.Tensor, sample_shape: Sequence[int]) -> torch.Tensor:
    """mean + exp(log_std) * eps with eps ~ N(0, I) of `sample_shape`: a draw of the mean-field Gaussian
    N(mean, diag exp(log_std)^2) by reparameterisation (Blundell et al. 2015 §3.2), differentiable in both."""
    return mean + log_std.exp() * torch.randn(sample_shape, dtype=mean.dtype, device=mean.device)


def gaussian_kl(
    mean: torch.Tensor, log_std: torch.Tensor, prior_variance: float, std: torch.Tensor | None = None
) -> torch.Tensor:
    """sum_i KL(N(mean_i, exp(log_std_i)^2) || N(0, prior_variance)), closed form: the KL of a mean-field Gaussian
    posterior against the weight prior (Blundell et al. 2015, eq. 2; Xu et al. 2022, Table 1's MFVI baselines).
    `std`: exp(log_std) when the caller has it already (a sample's), so that one exp carries both gradients."""
    ratio = ((log_std.exp() if std is None else std).square() + mean.square()) / prior_variance
    return 0.5 * (ratio - 1 - 2 * log_std + math.log(prior_variance)).sum()


def unit_variance_gaussian_kl(means: list[torch.Tensor], prior_variance: float) -> torch.Tensor:
    """KL(N(nu, I) || N(0, prior_variance I)) summed over a block of weight tensors nu (0 for an empty block):
    (||nu||^2 / s^2 + d (1 / s^2 - 1 + log s^2)) / 2 with s^2 = prior_variance, Nazaret & Blei (2022) eq. (10)."""
    if not means:
        return torch.zeros(())
    squared_norm = sum(nu.pow(2).sum() for nu in means)
    num_weights = sum(nu.numel() for nu in means)
    precision = 1.0 / prior_variance
    return 0.5 * (precision * squared_norm + num_weights * (precision - 1.0 + math.log(prior_variance)))


def normal_kl(mean_p: torch.Tensor, std_p: torch.Tensor, mean_q: torch.Tensor, std_q: torch.Tensor) -> torch.Tensor:
    """KL(N(mean_p, std_p^2) || N(mean_q, std_q^2)) elementwise, between two univariate Gaussians."""
    return torch.log(std_q / std_p) + (std_p**2 + (mean_p - mean_q) ** 2) / (2 * std_q**2) - 0.5


def dirichlet_kl_to_uniform(alpha: torch.Tensor) -> torch.Tensor:
    """KL(Dir(alpha) || Dir(1, ..., 1)) over the last axis of concentrations alpha [..., C], closed form (Haußmann 2021
    thesis, §5.3, the KL term for classification): log Gamma(alpha_0) - log Gamma(C) - sum_c log Gamma(alpha_c)
    + sum_c (alpha_c - 1)(psi(alpha_c) - psi(alpha_0)), alpha_0 = sum_c alpha_c."""
    total = alpha.sum(-1)
    digamma_gap = torch.digamma(alpha) - torch.digamma(total)[..., None]
    normaliser = torch.lgamma(total) - math.lgamma(alpha.shape[-1]) - torch.lgamma(alpha).sum(-1)
    return normaliser + ((alpha - 1) * digamma_gap).sum(-1)


def categorical_log_likelihood(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log softmax(f)_y [...] of a categorical likelihood on logits f [..., K] for class indices y [B] (or of the
    logits' batch shape): the softmax likelihood of the classifiers (Xu et al. 2022 §3; D'Angelo & Fortuin 2021 §4)."""
    return distributions.Categorical(logits=logits).log_prob(targets)


def probabilities_log_likelihood(probabilities: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p_y [...] of a categorical likelihood on class probabilities p [..., K], each clamped at the smallest normal
    number, so that a vanishing probability gives a large finite score, not an infinite one."""
    index = targets.expand(probabilities.shape[:-1])[..., None]
    picked = probabilities.gather(-1, index).squeeze(-1)
    return picked.clamp_min(torch.finfo(probabilities.dtype).tiny).log()


class RegressionLikelihood(nn.Module):
    """log p(y | f) with the network output f as location and a scale that is learned unless `learn_scale=False`
    (Xu et al. 2020, the SDE-BNN workshop paper, §3: "the parameters of this likelihood can also be learned").

    family: "gaussian", "laplace" (the workshop paper's §3) or "cauchy" (Xu et al. 2022 §3); the papers disagree.
    """

    FAMILIES = {"gaussian": distributions.Normal, "laplace": distributions.Laplace, "cauchy": distributions.Cauchy}

    def __init__(self, scale: float, family: str = "gaussian", learn_scale: bool = True):
        super().__init__()
        if family not in self.FAMILIES:
            raise ValueError(f"family must be one of {tuple(self.FAMILIES)}, got {family!r}")
        self.family = self.FAMILIES[family]
        self.log_scale = nn.Parameter(torch.tensor(math.log(scale)), requires_grad=learn_scale)

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """[S, B] from predictions [S, B, D] and targets [B, D], summed over D. Non-finite predictions give a
        non-finite value (the training step's finite check then names the divergence), not torch's argument error."""
        family = self.family(predictions, self.log_scale.exp(), validate_args=False)
        return family.log_prob(targets).sum(dim=-1)

    @property
    def variance(self) -> float:
        """The variance of the noise y - f: scale^2 (gaussian), 2 scale^2 (laplace), inf (cauchy, which has none)."""
        scale = self.log_scale.detach().exp()
        return float(self.family(torch.zeros_like(scale), scale).variance)

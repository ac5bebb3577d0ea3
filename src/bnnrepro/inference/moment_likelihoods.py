"""Likelihood terms of a network whose output f^L is Gaussian with diagonal moments (mean, var): the data terms
of VBP and DVI (thesis ch. 3) and the marginals of BEDL (ch. 5).

Shapes: mean and var [B, D] (regression outputs or class logits), targets [B, D] (regression) or [B] (class
indices). Each function returns one value per data point [B].
"""

from __future__ import annotations

import math

import torch

from bnnrepro.inference.gaussian_moments import MIN_VARIANCE


def gaussian_expected_log_likelihood(
    targets: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, precision: torch.Tensor | float
) -> torch.Tensor:
    """E_f[log N(y | f, 1/beta)] = 1/2 log(beta / 2 pi) - beta/2 ((y - E f)^2 + var f), summed over outputs: the
    closed-form data term of VBP's regression ELBO (eq. 3.5)."""
    precision = torch.as_tensor(precision, dtype=mean.dtype, device=mean.device)
    squared = (targets - mean).square() + var
    return (0.5 * torch.log(precision / (2 * math.pi)) - 0.5 * precision * squared).sum(-1)


def gaussian_log_marginal(targets: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """log N(y | mean, var), summed over outputs: a Gaussian marginal (BEDL's regression marginal, §5.4, and
    VBP's predictive N(E f, 1/beta + var f), §3.1.3)."""
    var = var.clamp_min(MIN_VARIANCE)
    return (-0.5 * (math.log(2 * math.pi) + var.log() + (targets - mean).square() / var)).sum(-1)


def type2_ml_precision(targets: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """The noise precision maximising sum_n E[log N(y_n | f_n, 1/beta)]: 1/beta* = (1/N) sum_n ((y_n - E f_n)^2 +
    var f_n) over all N points and outputs (thesis §3.3.1, "updated after each epoch")."""
    return 1.0 / ((targets - mean).square() + var).mean()


def taylor_expected_log_softmax(targets: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """E[log softmax(f)_y] ~ E[f_y] - lse(E f) - 1/2 sum_c var[f_c] (p_c - p_c^2), p = softmax(E f): the
    second-order (delta-method) expansion of E[lse(f)] with covariances dropped (thesis §3.1.7, after Wu et al.
    2019), the multi-class data term of VBP and DVI in ch. 3."""
    log_p = mean.log_softmax(-1)
    p = log_p.exp()
    picked = log_p.gather(-1, targets[:, None]).squeeze(-1)
    return picked - 0.5 * (var * (p - p.square())).sum(-1)


def logit_samples(mean: torch.Tensor, var: torch.Tensor, num_samples: int) -> torch.Tensor:
    """S draws [S, B, C] of f^L ~ N(mean, diag var) by reparameterisation."""
    noise = torch.randn((num_samples, *mean.shape), dtype=mean.dtype, device=mean.device)
    return mean + var.clamp_min(0).sqrt() * noise


def sampled_predictive(mean: torch.Tensor, var: torch.Tensor, num_samples: int) -> torch.Tensor:
    """The mean softmax [B, C] of `num_samples` draws of f^L ~ N(mean, diag var): the classification predictive by
    sampling the final logits (thesis §3.1.7; BEDL's, §5.2.2)."""
    return logit_samples(mean, var, num_samples).softmax(-1).mean(0)


def log_mean_softmax(targets: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """log (1/S) sum_s softmax(f_s)_y for logit draws [S, B, C]: the Monte Carlo marginal of BEDL (eq. 5.8,
    alpha_c / alpha_0 = softmax(f)_c) and the log-likelihood of a sampled predictive."""
    index = targets[None, :, None].expand(logits.shape[0], -1, 1)
    picked = logits.log_softmax(-1).gather(-1, index).squeeze(-1)
    return torch.logsumexp(picked, 0) - math.log(logits.shape[0])


def mean_log_softmax(targets: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """(1/S) sum_s log softmax(f_s)_y for logit draws [S, B, C]: a Monte Carlo expected log-likelihood (the
    sampled data term of VarOut and of DVI's softmax in ch. 5)."""
    index = targets[None, :, None].expand(logits.shape[0], -1, 1)
    return logits.log_softmax(-1).gather(-1, index).squeeze(-1).mean(0)


def two_point_samples(mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """[2, B, D]: mean - sd and mean + sd, whose sample mean and population variance are exactly (mean, var). A
    sampling-free method's Gaussian predictive handed to the evaluation's moment-matched Gaussian NLL
    (bnnrepro.metrics.gaussian_predictive_nll) without Monte Carlo error."""
    sd = var.clamp_min(0).sqrt()
    return torch.stack([mean - sd, mean + sd])

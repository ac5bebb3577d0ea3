"""Moments of activations of Gaussian pre-activations: the algebra of the sampling-free BNNs of Haußmann (2021).

Every function maps the diagonal moments (mean, variance) of pre-activations f to those of the post-activations h,
elementwise; covariances between units are dropped (thesis §3.5.3 and §5.8.1.3). Two families:

- Identity-Heaviside gates (VBP, thesis ch. 3): an activation written as f times a binary gate z with
  q(z) = Ber(sigmoid(C E[f])) (Proposition 1), z independent of f under the mean field. ReLU is f z (eq. 3.8),
  leaky ReLU f (a + (1 - a) z) and hard tanh u - v + f (1 - u)(1 - v) (§3.5.2).
- Moment matching of a Gaussian f (the CLT BNNs: DVI, BEDL, the RAL predictor): ReLU (Frey & Hinton 1999,
  thesis §5.8.1.1) and ELU/SELU (§5.8.1.2).

Max pooling (Proposition 3) picks the input with the largest mean: its mean and variance pass through.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch.nn import functional as F

MIN_VARIANCE = 1e-12
"""Floor of a variance before its square root: a deterministic unit (variance 0) gives sigma = 1e-6, not 0/0."""


class Moments(NamedTuple):
    """Diagonal Gaussian moments of a layer's units: mean and variance, of the same shape."""

    mean: torch.Tensor
    var: torch.Tensor


def _standard_normal_pdf(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * x.square()) / math.sqrt(2 * math.pi)


def _gated(moments: Moments, gate_mean: torch.Tensor, gate_var: torch.Tensor) -> Moments:
    """h = f c for f independent of the gate c: E[h] = E[c] E[f] and, by eq. (3.7),
    var[h] = E[c^2] var[f] + var[c] E[f]^2."""
    mean, var = moments
    second_moment = gate_var + gate_mean.square()
    return Moments(gate_mean * mean, second_moment * var + gate_var * mean.square())


def heaviside_gate(moments: Moments, sharpness: float) -> Moments:
    """VBP's ReLU, h = f z with z ~ Ber(sigmoid(C E[f])) (eq. 3.1, Proposition 1): E[h] = p E[f] and
    var[h] = p var[f] + p (1 - p) E[f]^2 (eq. 3.8 in its clean form; E[z^2] = E[z] = p). Exact as C -> inf."""
    p = torch.sigmoid(sharpness * moments.mean)
    return _gated(moments, p, p * (1 - p))


def leaky_relu_gate(moments: Moments, sharpness: float, slope: float) -> Moments:
    """Leaky ReLU / PReLU as h = f c with c = a + (1 - a) z (thesis §3.5.2): E[c] = a + (1 - a) p and
    var[c] = (1 - a)^2 p (1 - p), with p = sigmoid(C E[f])."""
    p = torch.sigmoid(sharpness * moments.mean)
    return _gated(moments, slope + (1 - slope) * p, (1 - slope) ** 2 * p * (1 - p))


def hard_tanh_gate(moments: Moments, sharpness: float) -> Moments:
    """Hard tanh as h = u - v + f g with g = (1 - u)(1 - v), u ~ Ber(sigmoid(C (E[f] - 1))) and
    v ~ Ber(sigmoid(-C (E[f] + 1))) independent of each other and of f (thesis §3.5.2).

    The thesis prints E[u] + E[v] for the mean of u - v; derived here from the definition: with g binary
    (E[g^2] = E[g]) and u g = v g = 0,
    E[h] = E[u] - E[v] + E[f] E[g] and
    var[h] = var[u] + var[v] + E[f^2] E[g] - E[f]^2 E[g]^2 - 2 E[f] E[g] (E[u] - E[v])."""
    mean, var = moments
    p_u = torch.sigmoid(sharpness * (mean - 1))
    p_v = torch.sigmoid(-sharpness * (mean + 1))
    g = (1 - p_u) * (1 - p_v)
    out_mean = p_u - p_v + mean * g
    out_var = (
        p_u * (1 - p_u) + p_v * (1 - p_v)
        + (var + mean.square()) * g - mean.square() * g.square()
        - 2 * mean * g * (p_u - p_v)
    )  # fmt: skip
    return Moments(out_mean, out_var.clamp_min(0))


def relu(moments: Moments) -> Moments:
    """ReLU of a Gaussian f ~ N(mu, sigma^2), exact (Frey & Hinton 1999; thesis §5.8.1.1):
    E[h] = sigma phi(mu/sigma) + mu Phi(mu/sigma),
    var[h] = (mu^2 + sigma^2) Phi(mu/sigma) + mu sigma phi(mu/sigma) - E[h]^2."""
    mean, var = moments
    std = var.clamp_min(MIN_VARIANCE).sqrt()
    ratio = mean / std
    cdf, pdf = torch.special.ndtr(ratio), _standard_normal_pdf(ratio)
    out_mean = std * pdf + mean * cdf
    second_moment = mean * out_mean + var * cdf  # = (mu^2 + sigma^2) Phi + mu sigma phi, two products fewer
    return Moments(out_mean, (second_moment - out_mean.square()).clamp_min(0))


def elu(moments: Moments, alpha: float = 1.0, scale: float = 1.0) -> Moments:
    """scale * ELU_alpha of a Gaussian f ~ N(mu, sigma^2), exact (thesis §5.8.1.2); SELU is scale = 1.0507,
    alpha = 1.6733. With r = relu(f):
    E[h] / scale = alpha (e^{mu + sigma^2/2} Phi(-(mu + sigma^2)/sigma) - Phi(-mu/sigma)) + E[r],
    E[h^2] / scale^2 = alpha^2 (e^{2 mu + 2 sigma^2} Phi(-(mu + 2 sigma^2)/sigma)
                       - 2 e^{mu + sigma^2/2} Phi(-(mu + sigma^2)/sigma) + Phi(-mu/sigma)) + E[r^2].
    The products e^a Phi(b) are taken as exp(a + log Phi(b)), finite where e^a alone overflows."""
    mean, var = moments
    std = var.clamp_min(MIN_VARIANCE).sqrt()
    rectified = relu(moments)
    rectified_second = rectified.var + rectified.mean.square()
    below = torch.special.ndtr(-mean / std)
    first = torch.exp(mean + var / 2 + torch.special.log_ndtr(-(mean + var) / std))
    second = torch.exp(2 * mean + 2 * var + torch.special.log_ndtr(-(mean + 2 * var) / std))
    out_mean = alpha * (first - below) + rectified.mean
    out_second = alpha**2 * (second - 2 * first + below) + rectified_second
    return Moments(scale * out_mean, (scale**2 * (out_second - out_mean.square())).clamp_min(0))


def max_pool(moments: Moments, kernel_size: int, stride: int | None = None) -> Moments:
    """Max pooling of [B, C, H, W] moments (Proposition 3): max(a, b) = a z + b (1 - z) with
    q(z) = delta(E[a] - E[b] > 0), so the input of largest mean passes its mean (i) and its variance (ii); the
    variance path follows the mean path's indices."""
    pooled, indices = F.max_pool2d(moments.mean, kernel_size, stride, return_indices=True)
    var = moments.var.flatten(2).gather(2, indices.flatten(2)).view_as(pooled)
    return Moments(pooled, var)

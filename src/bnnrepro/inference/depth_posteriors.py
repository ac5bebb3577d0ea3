"""Distributions over the truncation depth l in {1, 2, ...} (Nazaret & Blei 2022, §3).

Variational families q(l) (with learnable parameters) and priors p(l). Every distribution exposes
the same two things the ELBO of eq. (10) needs: `max_depth()`, the largest l with q(l) > 0 (m(q) in
the paper), and `log_probs(m)`, log q(l) (or log p(l)) for l = 1..m as a differentiable tensor.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.errors import DivergedError
from bnnrepro.inference.poisson import poisson_quantile


def shifted_poisson_log_probs(rate: torch.Tensor, max_depth: int) -> torch.Tensor:
    """Unnormalised log-probabilities of l - 1 ~ Poisson(rate) for l = 1..max_depth."""
    k = torch.arange(max_depth, dtype=rate.dtype, device=rate.device)
    return k * torch.log(rate) - rate - torch.lgamma(k + 1)


class TruncatedPoisson(nn.Module):
    """The truncated Poisson family TP(delta) of §3.2, over l in {1, 2, ...}.

    q(l; lambda) is proportional to lambda^(l-1) / (l-1)! for l - 1 <= Q_delta(lambda), the
    delta-quantile of Poisson(lambda), and zero beyond. The paper writes q over l without the shift
    that its prior has (l - 1 ~ Poisson); we shift q like the prior so that l = 1 carries mass (the
    authors' code, `ANazaret/unbounded-depth-neural-networks` `src/models.py`, does the same). lambda =
    softplus(rho) keeps lambda > 0 (parametrisation not stated in the paper). The support keeps at least the two
    depths floor(lambda) + 1 and floor(lambda) + 2, so that lambda always has a gradient; this changes m only for
    lambda < 0.052.
    """

    def __init__(self, initial_rate: float, quantile: float = 0.95, depth_limit: int = 1000):
        super().__init__()
        self.depth_limit = depth_limit
        if not 0.5 <= quantile < 1:
            raise ValueError(f"TP(delta) needs delta in [0.5, 1) (Theorem 3.2), got {quantile}")
        self.quantile = quantile
        inverse_softplus = initial_rate + math.log(-math.expm1(-initial_rate))
        self.rho = nn.Parameter(torch.tensor(inverse_softplus, dtype=torch.float32))

    @property
    def rate(self) -> torch.Tensor:
        return F.softplus(self.rho)

    def max_depth(self) -> int:
        """m(q): the deepest l with q(l) > 0; DivergedError beyond `depth_limit` layers."""
        rate = float(self.rate.detach())
        try:
            return max(poisson_quantile(rate, self.quantile, limit=self.depth_limit - 1), math.floor(rate) + 1) + 1
        except DivergedError as err:
            raise DivergedError(
                f"the depth posterior diverged: lambda = {rate:.4g} asks for more than depth_limit = "
                f"{self.depth_limit} layers ({err})"
            ) from None

    def log_probs(self, max_depth: int) -> torch.Tensor:
        return torch.log_softmax(shifted_poisson_log_probs(self.rate, max_depth), dim=0)


class FixedDepth(nn.Module):
    """A point mass at depth L: turns the UDN objective into MAP training of Omega_L (§2)."""

    def __init__(self, depth: int):
        super().__init__()
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.depth = depth

    def max_depth(self) -> int:
        return self.depth

    def log_probs(self, max_depth: int) -> torch.Tensor:
        log_probs = torch.full((max_depth,), -math.inf)
        log_probs[self.depth - 1] = 0.0
        return log_probs


class CategoricalDepth(nn.Module):
    """Categorical q(l) over l = 1..D with learnable logits, initially uniform (DUN, Antoran et al. 2020)."""

    def __init__(self, num_depths: int):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(num_depths))

    def max_depth(self) -> int:
        return self.logits.numel()

    def log_probs(self, max_depth: int) -> torch.Tensor:
        return torch.log_softmax(self.logits[:max_depth], dim=0)


class ShiftedPoissonPrior(nn.Module):
    """Prior p(l) with l - 1 ~ Poisson(alpha) (§3.2, 'because l > 0'); unbounded support."""

    def __init__(self, rate: float):
        super().__init__()
        self.rate = rate

    def log_probs(self, max_depth: int) -> torch.Tensor:
        return shifted_poisson_log_probs(torch.tensor(float(self.rate)), max_depth)


class UniformDepthPrior(nn.Module):
    """Uniform prior on l = 1..D (the DUN baseline)."""

    def __init__(self, num_depths: int):
        super().__init__()
        self.num_depths = num_depths

    def log_probs(self, max_depth: int) -> torch.Tensor:
        return torch.full((max_depth,), -math.log(self.num_depths))


class PointMassPrior(nn.Module):
    """p(l) = 1 at the depth of a finite network: log p(L) = 0 (its value elsewhere is never used)."""

    def log_probs(self, max_depth: int) -> torch.Tensor:
        return torch.zeros(max_depth)


def expected_depth(log_probs: torch.Tensor) -> float:
    """E_q[l] = sum_l l q(l) for log q(l), l = 1..m."""
    depths = torch.arange(1, log_probs.numel() + 1, dtype=log_probs.dtype, device=log_probs.device)
    return float((log_probs.exp() * depths).sum())

"""The Poisson quantile that sets the truncation depth m(q) of a Poisson-shaped q(l) (Nazaret & Blei 2022, §3.3).

Plain Python, no torch: the UDN figures draw the truncation depth too, in jobs that do not import torch.
"""

from __future__ import annotations

import math

from bnnrepro.errors import DivergedError


def poisson_quantile(rate: float, level: float, limit: int | None = None) -> int:
    """Smallest integer k >= 0 with P(X <= k) >= level for X ~ Poisson(rate).

    With `limit`, raise DivergedError instead of searching beyond k = limit.
    """
    if not 0 < rate < math.inf:
        raise DivergedError(f"Poisson rate must be positive and finite, got {rate}")
    k, log_pmf = 0, -rate
    cdf = math.exp(log_pmf)
    while cdf < level:
        if limit is not None and k >= limit:
            raise DivergedError(f"the {level}-quantile of Poisson({rate:.4g}) exceeds {limit}")
        k += 1
        log_pmf += math.log(rate) - math.log(k)
        cdf += math.exp(log_pmf)
    return k

"""The ELBO over truncation depths, eq. (10) of Nazaret & Blei (2022).

L(q) = sum_{l=1}^{m} q(l) [ log p(l) - log q(l) + sum_{k<=l} log p(theta_k)/q(theta_k)
                              + sum_i log p(y_i | Omega_l(x_i; theta)) ]

with q(theta_k) = N(nu_k, I) and p(theta_k) = N(0, s^2 I): the weight term is the closed form
-KL = -(||nu_k||^2 / s^2 + d_k (1/s^2 - 1 - log(1/s^2))) / 2, which is -||nu_k||^2 / 2 for s = 1; the
likelihood is taken at the mean nu ("first order", §3.2). The outer sum is exact because q has
bounded support, so the lambda-gradient needs no score-function estimator.
"""

from __future__ import annotations

import torch


def depth_elbo(
    log_q: torch.Tensor,
    log_prior: torch.Tensor,
    log_likelihood: torch.Tensor,
    weight_kl: torch.Tensor,
) -> torch.Tensor:
    """ELBO of eq. (10) from per-depth terms, each a tensor over l = 1..m.

    log_q: log q(l); log_prior: log p(l); log_likelihood: sum_i log p(y_i | Omega_l(x_i))
    (already rescaled to the full data set when computed on a minibatch); weight_kl:
    sum_{k<=l} KL(q(theta_k) || p(theta_k)) (cumulative over layers).
    """
    q = log_q.exp()
    support = torch.isfinite(log_q)
    # log q(l) itself (not log of exp) keeps the gradient finite where q(l) underflows to 0.
    per_depth = torch.where(support, log_prior + log_likelihood - weight_kl - log_q, torch.zeros_like(q))
    return (q * per_depth).sum()

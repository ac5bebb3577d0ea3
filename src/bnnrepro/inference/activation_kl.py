"""The expected KL term over VBP's binary activations (Haußmann 2021 thesis, §3.1.5.1, Proposition 2).

With pre-activation a ~ N(mu, sigma^2), p(z | a) = Ber(sigmoid(C a)) and q(z) = Ber(sigmoid(C E[a])), Prop. 2 gives
E_q(a)[KL(q(z) || p(z | a))] = E[soft(C a)] - soft(C mu), soft(x) = log(1 + e^x). Eq. (3.9) replaces soft by
max(0, .) and is closed form; the exact expectation is estimated by sampling (Fig. 3.4). numpy and scipy only, so
that the analytic figures need no torch.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

CHUNK_ELEMENTS = 2**22
"""Samples x pairs evaluated at once by `sampled_expected_activation_kl`: 32 MB per float64 temporary."""


def _check_scales(sigma: np.ndarray) -> None:
    if not (sigma > 0).all():
        raise ValueError("sigma must be positive")


def expected_activation_kl(mu: ArrayLike, sigma: ArrayLike, c: ArrayLike) -> np.ndarray:
    """Eq. (3.9): C (mu Phi(mu / sigma) + sigma phi(mu / sigma) - max(0, mu)), broadcast over the arguments.

    This is C (E[max(0, a)] - max(0, mu)) exactly. Evaluated as C sigma (phi(t) - |t| Phi(-|t|)) with t = mu / sigma,
    the same expression (mu Phi(t) - max(0, mu) = -|mu| Phi(-|t|) for either sign of mu): even in mu, and without
    subtracting max(0, mu) from a number close to it at large mu.
    """
    mu, sigma, c = (np.asarray(value, dtype=np.float64) for value in (mu, sigma, c))
    _check_scales(sigma)
    t = np.abs(mu / sigma)
    return c * sigma * (np.exp(-0.5 * t**2) / math.sqrt(2 * math.pi) - t * ndtr(-t))


def sampled_expected_activation_kl(
    mu: ArrayLike, sigma: ArrayLike, c: ArrayLike, num_samples: int, rng: np.random.Generator
) -> np.ndarray:
    """Monte Carlo estimate of Prop. 2's E_{a ~ N(mu, sigma^2)}[soft(C a)] - soft(C mu), broadcast over the arguments.

    Every (mu, sigma, C) gets the same `num_samples` standard-normal draws eps, a = mu + sigma eps (common random
    numbers: each estimate is an ordinary Monte Carlo one, and the curves are smooth in mu and sigma). The draws are
    made in chunks of about `CHUNK_ELEMENTS` / #pairs, so memory does not grow with `num_samples`. soft(x) is
    np.logaddexp(0, x), which does not overflow.
    """
    mu, sigma, c = np.broadcast_arrays(*(np.asarray(value, dtype=np.float64) for value in (mu, sigma, c)))
    _check_scales(sigma)
    if num_samples < 1:
        raise ValueError(f"num_samples must be at least 1, got {num_samples}")
    loc, scale = (c * mu).reshape(-1, 1), (c * sigma).reshape(-1, 1)
    chunk = max(1, CHUNK_ELEMENTS // loc.size)
    total = np.zeros(loc.size)
    for start in range(0, num_samples, chunk):
        eps = rng.standard_normal(min(chunk, num_samples - start))
        total += np.logaddexp(0, loc + scale * eps).sum(-1)
    return (total / num_samples - np.logaddexp(0, loc[:, 0])).reshape(mu.shape)

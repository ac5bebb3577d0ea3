"""RAL's state (thesis §4.2.2, "State"; §4.7 "State construction"): rank the unlabelled points by predictive
entropy, walk down the ranking taking every K-th point until M are collected (thinning), and describe them by the
predictor's output moments, a C*M-dimensional diagonal Gaussian."""

from __future__ import annotations

import torch

from bnnrepro.inference.gaussian_moments import Moments


def thinned(ranking: torch.Tensor, every: int, count: int) -> torch.Tensor:
    """The entries at ranks 0, K, 2K, ..., (M - 1)K of `ranking` (K = every, M = count)."""
    if len(ranking) < (count - 1) * every + 1:
        raise ValueError(f"a ranking of {len(ranking)} points has no {count} points {every} ranks apart")
    return ranking[: (count - 1) * every + 1 : every]


def state_moments(output_moments: Moments, candidates: torch.Tensor) -> Moments:
    """The state S ~ prod_c prod_m N(s_mc | g_c(x_m), h_c(x_m)) of the candidates (positions into the moments'
    rows) as one row of C*M means and variances, candidate-major."""
    return Moments(output_moments.mean[candidates].reshape(1, -1), output_moments.var[candidates].reshape(1, -1))

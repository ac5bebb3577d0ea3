"""The data terms and the trainable PAC-Bayes bound of a BNSDE (thesis §6.2.2-6.2.3, Theorem 1, Algorithm 2).

Log-likelihoods come as [S, B]: sample s of trajectory n, summed over its observations. Both data terms are per
trajectory (the mean over the batch), so that a minibatch estimates the mean over the N training trajectories.
"""

from __future__ import annotations

import math

import torch


def check_delta(delta: float) -> None:
    if not 0.0 < delta < 1.0:
        raise ValueError(
            f"delta is {delta}; the PAC bound holds with probability 1 - delta, so delta must lie in (0, 1) "
            "(the authors' code, `manuelhaussmann/bnsde` `bsde.py`, uses 0.05)"
        )


def log_mean_exp_data_term(log_likelihoods: torch.Tensor) -> torch.Tensor:
    """-(1/B) sum_n log (1/S) sum_s p(Y_n | H^s): the negative empirical-Bayes marginal likelihood of eq. 6.8."""
    samples = log_likelihoods.shape[0]
    return -(torch.logsumexp(log_likelihoods, dim=0) - math.log(samples)).mean()


def mean_log_data_term(log_likelihoods: torch.Tensor) -> torch.Tensor:
    """-(1/(S B)) sum_n sum_s log p(Y_n | H^s): the Jensen-loosened data term of eq. 6.15 and Algorithm 2 ("mll");
    it equals `log_mean_exp_data_term` when S = 1."""
    return -log_likelihoods.mean()


DATA_TERMS = {"log_mean_exp": log_mean_exp_data_term, "mean_log": mean_log_data_term}


def pac_complexity(kl: torch.Tensor, num_train: int, delta: float) -> torch.Tensor:
    """C_delta = sqrt((KL(Q || P) + log(4 sqrt(N) / delta)) / (2N)) of Theorem 1 and Algorithm 2, where N is the
    number of training trajectories. (The thesis' eq. 6.16 adds it to a maximised log-likelihood, a sign typo; the
    authors' code (`manuelhaussmann/bnsde`, `bsde.py`) has log(2 sqrt(N) / delta); we follow the theorem and
    Algorithm 2.)"""
    check_delta(delta)
    return torch.sqrt((kl + math.log(4.0 * math.sqrt(num_train) / delta)) / (2.0 * num_train))

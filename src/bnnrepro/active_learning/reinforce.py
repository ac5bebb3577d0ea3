"""Episodic REINFORCE (Williams 1992) with a moving-average baseline, RAL's policy update (thesis §4.2.2,
Algorithm 1, §4.7 "Returns and baselines")."""

from __future__ import annotations

import torch


def discounted_returns(rewards: torch.Tensor, discount: float) -> torch.Tensor:
    """G_t = sum_{k >= 0} gamma^k R_{t+k} for the rewards R_1..R_T of an episode's actions (R_t the reward of
    action A_t): the return of thesis §2.4. §4.7's G_i = sum_{j=1}^{T-i} gamma^j R_{i+j}, read with the same
    indexing, leaves out an action's own reward and its last action's return would be 0; the authors' code
    (`manuelhaussmann/ral`, `exp_mnist.py`) takes §2.4's (G_t = R_t + gamma G_{t+1}), and so do we."""
    returns = torch.empty_like(rewards)
    following = torch.zeros((), dtype=rewards.dtype)
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + discount * following
        returns[t] = following
    return returns


def policy_loss(log_probabilities: torch.Tensor, returns: torch.Tensor, baseline: float, kl: torch.Tensor):
    """sum_t -(G_t - b) log pi(A_t | S_t) + KL(q(phi) || p(phi)), minimised by one gradient step per episode.
    Algorithm 1 as printed multiplies the KL by G_t and drops b; the text subtracts the baseline, and the KL is the
    variational posterior's regulariser, not part of the policy gradient (the authors' code, `manuelhaussmann/ral`
    `exp_mnist.py`, adds it once)."""
    return -((returns - baseline) * log_probabilities).sum() + kl


class RewardBaseline:
    """b = the mean of every reward observed in earlier episodes ("a moving average over all the past rewards",
    §4.2.2; 0 before the first)."""

    def __init__(self, total: float = 0.0, count: int = 0):
        self.total, self.count = total, count

    @property
    def value(self) -> float:
        return self.total / self.count if self.count else 0.0

    def observe(self, rewards: torch.Tensor) -> None:
        self.total += float(rewards.sum())
        self.count += len(rewards)

    def state_dict(self) -> dict:
        return {"total": self.total, "count": self.count}

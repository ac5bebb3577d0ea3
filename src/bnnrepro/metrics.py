"""Evaluation metrics on predictive probabilities."""

from __future__ import annotations

import torch


def accuracy(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of inputs whose most probable class is the label."""
    return float((probs.argmax(-1) == labels).float().mean())


def negative_log_likelihood(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean of -log p(y | x) under the predictive distribution."""
    picked = probs.gather(-1, labels[:, None]).squeeze(-1)
    return float(-torch.log(picked.clamp_min(torch.finfo(probs.dtype).tiny)).mean())

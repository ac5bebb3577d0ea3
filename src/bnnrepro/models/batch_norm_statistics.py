"""BatchNorm running statistics that still hold their initial values, and their re-estimation before evaluation.

The UDN creates layers during training (Algorithm 1), also just before an evaluation. A new BatchNorm starts at
running mean 0 / variance 1 and, at momentum m, keeps weight (1 - m)^n on them after n training batches, so a
layer created shortly before an evaluation would evaluate with mostly initial statistics. Before evaluating,
`refresh_batch_norm_statistics` re-estimates the `stale_batch_norms` from training inputs; every other module
is left as it is. A BatchNorm off the evaluated path (a head never used) does not touch the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


def initial_weight(batch_norm: _BatchNorm) -> float:
    """The weight of the initial mean 0 / variance 1 in the running statistics: (1 - momentum)^batches, or for
    momentum None (a cumulative average) 1 before the first batch and 0 after."""
    batches = int(batch_norm.num_batches_tracked)
    if batch_norm.momentum is None:
        return float(batches == 0)
    return (1 - batch_norm.momentum) ** batches


def stale_batch_norms(module: nn.Module, tolerance: float = 0.01) -> list[_BatchNorm]:
    """The BatchNorm modules of `module` whose running statistics carry more than `tolerance` initial weight."""
    return [
        m
        for m in module.modules()
        if isinstance(m, _BatchNorm) and m.track_running_stats and initial_weight(m) > tolerance
    ]


@torch.no_grad()
def refresh_batch_norm_statistics(
    network: nn.Module,
    network_forward: Callable[[torch.Tensor], object],
    batch_norms: Iterable[_BatchNorm],
    x: torch.Tensor,
    batch_size: int,
) -> None:
    """Set the running statistics of `batch_norms` (modules of `network`) to the average of their batch
    statistics over `x`, run through `network_forward` in batches of `batch_size` (each batch weighted equally,
    torch's momentum None). Every other module of `network` runs in eval mode, so nothing else changes;
    momenta and train/eval flags are restored afterwards. A BatchNorm the forward does not reach stays reset."""
    targets = list(batch_norms)
    if not targets:
        return
    members = {id(m) for m in network.modules()}
    if any(id(bn) not in members for bn in targets):
        raise ValueError("refresh_batch_norm_statistics: every BatchNorm to refresh must be a module of `network`")
    training = [(m, m.training) for m in network.modules()]
    momenta = [bn.momentum for bn in targets]
    try:
        network.eval()
        for bn in targets:
            bn.reset_running_stats()
            bn.momentum = None
            bn.train()
        for start in range(0, len(x), batch_size):
            network_forward(x[start : start + batch_size])
    finally:
        for m, flag in training:
            m.training = flag
        for bn, momentum in zip(targets, momenta, strict=True):
            bn.momentum = momentum

"""Many fully connected networks evaluated at once: a stack of M weight sets, each layer one batched matmul over the
stack (the deep ensemble's members and the mean-field BNN's weight samples, Xu et al. 2022 Fig. 10's comparison
models; the SDE-BNN's hidden dynamics on its S weight paths, Xu et al. 2022 eq. 11)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise

import torch

Activation = Callable[[torch.Tensor], torch.Tensor]


def layer_sizes(num_inputs: int, hidden_widths: Sequence[int], num_outputs: int) -> list[tuple[int, int]]:
    """(fan_in, fan_out) of each layer of an MLP from num_inputs through hidden_widths to num_outputs."""
    return list(pairwise([num_inputs, *hidden_widths, num_outputs]))


def uniform_linear_init(num_stacked: int, fan_in: int, fan_out: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights [M, fan_in, fan_out] and biases [M, 1, fan_out] of M independent layers, each drawn like
    `nn.Linear`'s default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    weight = torch.empty(num_stacked, fan_in, fan_out).uniform_(-bound, bound)
    bias = torch.empty(num_stacked, 1, fan_out).uniform_(-bound, bound)
    return weight, bias


def batched_mlp(
    x: torch.Tensor,
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor],
    activation: Activation,
    layer_input: Activation | None = None,
) -> torch.Tensor:
    """M MLPs at once: inputs x [M, B, in], per-layer weights [M, in, out] and biases [M, 1, out] -> [M, B, out],
    one batched matmul per layer and the activation between layers. `layer_input` maps each layer's input before
    its matmul (e.g. appends the depth t as a feature)."""
    h = x
    for i, (weight, bias) in enumerate(zip(weights, biases, strict=True)):
        h = activation(h) if i else h
        h = torch.baddbmm(bias, h if layer_input is None else layer_input(h), weight)
    return h

"""The networks whose weight posterior the repulsive ensembles and HMC sample (D'Angelo & Fortuin 2021): the
authors' ReLU MLPs of the toy figures and their CIFAR ResNets without normalisation (Table 1)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec
from bnnrepro.models.resnet import ChannelsFirstImages, ResNet


def relu_mlp(num_features: int, hidden_widths: Sequence[int], num_outputs: int) -> nn.Sequential:
    """A fully connected ReLU network (the authors' toy MLPs, repulsive_ensembles README: 1-10-10-1 and 2-10-10-5)."""
    widths = [num_features, *hidden_widths]
    layers: list[nn.Module] = []
    for fan_in, fan_out in pairwise(widths):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-1], num_outputs))


def posterior_network(cfg: DictConfig, spec: DataSpec, num_outputs: int) -> nn.Module:
    """The network of method config `cfg`: `architecture` mlp, the ReLU MLP of `hidden_widths` (an image input is
    flattened first), or resnet, the CIFAR ResNet of `resnet_blocks_per_stage` blocks per stage (6n + 2 layers:
    ResNet32 at n = 5, the authors' Table 1 model, and ResNet8 at n = 1), ReLU and no normalisation, as their
    `ResNet(n=5, use_batch_norm=False)` (repulsive_ensembles; the paper's Table 1 names ResNet32 only)."""
    if cfg.architecture == "mlp":
        if len(spec.input_shape) > 1:
            return nn.Sequential(nn.Flatten(), relu_mlp(math.prod(spec.input_shape), cfg.hidden_widths, num_outputs))
        return relu_mlp(spec.num_features, cfg.hidden_widths, num_outputs)
    if cfg.architecture == "resnet":
        if len(spec.input_shape) not in (2, 3):
            raise ValueError(f"architecture 'resnet' needs images [H, W] or [H, W, C], got inputs {spec.input_shape}")
        channels = spec.input_shape[2] if len(spec.input_shape) == 3 else 1
        resnet = ResNet(channels, num_outputs, cfg.resnet_blocks_per_stage, activation="relu")
        return nn.Sequential(ChannelsFirstImages(), resnet)
    raise ValueError(f"method {cfg.name!r}: unknown architecture {cfg.architecture!r}; known: mlp, resnet")

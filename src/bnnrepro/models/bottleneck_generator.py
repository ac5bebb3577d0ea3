"""The CIFAR-10 layers f_l and heads o_l of the unbounded-depth network (Nazaret & Blei 2022, §4.2, §6.2).

f_1 is a stem convolution; f_l for l >= 2 are bottleneck blocks B_6 (layers 2-4), B_7 (5-9) and B_8 (10 on),
B_k with 2^k bottleneck channels and 4 x 2^k out channels, the first block of each stage with stride 2 (32 x 32
-> 16 -> 8 -> 4 pixels): Omega_L is the paper's "ResNet-3L". Each o_l average-pools 4 x 4 and applies a linear
layer. Channels are round(base x width_multiplier); 1.0 is the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.models.resnet import ChannelsFirstImages
from bnnrepro.models.unbounded_depth import LayerGenerator

IMAGE_SIZE, IMAGE_CHANNELS = 32, 3
EXPANSION = 4
AUTHORS_MAX_DEPTH = 1 + 3 + 5 + 1000
"""The authors' generator builds the stem, 3 B_6, 5 B_7 and 1000 B_8 blocks."""


@dataclass(frozen=True)
class Stage:
    name: str
    first_depth: int
    base_channels: int
    """The stem's out channels, or a bottleneck block's inner channels c (its out channels are 4c)."""
    size: int
    """Out height and width."""


STAGES = (
    Stage("stem", 1, 64, IMAGE_SIZE),
    Stage("B_6", 2, 64, IMAGE_SIZE // 2),
    Stage("B_7", 5, 128, IMAGE_SIZE // 4),
    Stage("B_8", 10, 256, IMAGE_SIZE // 8),
)


def stage_of(depth: int) -> Stage:
    """The stage of layer f_depth: stem (1), B_6 (2-4), B_7 (5-9) or B_8 (10 on) (UDN §4.2)."""
    if depth < 1:
        raise ValueError(f"layer depths start at 1, got {depth}")
    return [stage for stage in STAGES if stage.first_depth <= depth][-1]


def stage_channels(stage: Stage, width_multiplier: float) -> int:
    """round(base channels x width_multiplier); ValueError where that is not a positive count."""
    if not math.isfinite(width_multiplier):
        raise ValueError(f"width_multiplier must be a finite number, got {width_multiplier}")
    channels = round(stage.base_channels * width_multiplier)
    if channels < 1:
        raise ValueError(
            f"width_multiplier {width_multiplier} gives {channels} channels in the {stage.name} "
            f"({stage.base_channels} x {width_multiplier}); use more than 1/{2 * stage.base_channels} = "
            f"{1 / (2 * stage.base_channels)}, e.g. 1/{stage.base_channels} = {1 / stage.base_channels} (1 channel)"
        )
    return channels


def check_width_multiplier(width_multiplier: float) -> None:
    """ValueError unless every stage has at least one channel."""
    for stage in STAGES:
        stage_channels(stage, width_multiplier)


def layer_shape(depth: int, width_multiplier: float) -> tuple[int, int]:
    """(out channels, out height = width) of f_depth on CIFAR's 32 x 32 images."""
    stage = stage_of(depth)
    channels = stage_channels(stage, width_multiplier)
    return (channels if stage.name == "stem" else EXPANSION * channels), stage.size


def check_depth(depth: int, max_depth: int) -> None:
    """ValueError if the generator with this `max_depth` cannot build layer f_depth."""
    if depth > max_depth:
        raise ValueError(
            f"layer {depth} is deeper than the bottleneck generator's max_depth = {max_depth}: raise the "
            f"generator's max_depth, or check the depth posterior (has q(l) diverged?)"
        )


class Bottleneck(nn.Module):
    """torchvision's bottleneck block: 1x1 (in -> c), 3x3 (c -> c, stride), 1x1 (c -> 4c) convolutions without
    biases, each followed by BatchNorm, ReLU after the first two and after adding the shortcut (identity, or a
    strided 1x1 convolution + BatchNorm where the shape changes)."""

    def __init__(self, in_channels: int, channels: int, stride: int):
        super().__init__()
        out_channels = EXPANSION * channels
        self.conv1 = nn.Conv2d(in_channels, channels, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv3 = nn.Conv2d(channels, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.shortcut = (
            nn.Identity()
            if stride == 1 and in_channels == out_channels
            else nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels)
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return F.relu(self.bn3(self.conv3(out)) + self.shortcut(x))


def bottleneck_resnet_layer(width_multiplier: float = 1.0, max_depth: int = AUTHORS_MAX_DEPTH) -> LayerGenerator:
    """f_1 = channels-last [B, 32, 32, 3] images -> Conv3x3 (3 -> 64w) + BatchNorm + ReLU; f_l for l >= 2 the
    bottleneck block of layer l's stage, stride 2 at the first block of a stage (UDN §4.2, §6.2)."""
    check_width_multiplier(width_multiplier)
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, got {max_depth}")

    def layer(depth: int) -> nn.Module:
        check_depth(depth, max_depth)
        stage = stage_of(depth)
        channels = stage_channels(stage, width_multiplier)
        if stage.name == "stem":
            return nn.Sequential(
                ChannelsFirstImages(),
                nn.Conv2d(IMAGE_CHANNELS, channels, 3, 1, 1, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
            )
        in_channels, _ = layer_shape(depth - 1, width_multiplier)
        return Bottleneck(in_channels, channels, 2 if depth == stage.first_depth else 1)

    return layer


def pooled_linear_head(width_multiplier: float, num_classes: int) -> LayerGenerator:
    """o_l = AvgPool2d(4) -> Flatten -> Linear(C_l (S_l / 4)^2 -> num_classes), C_l and S_l layer l's out
    channels and size (UDN §6.2; 4096, 4096, 2048, 1024 inputs after the stem, B_6, B_7, B_8 at width 1)."""
    check_width_multiplier(width_multiplier)

    def head(depth: int) -> nn.Module:
        channels, size = layer_shape(depth, width_multiplier)
        return nn.Sequential(nn.AvgPool2d(4), nn.Flatten(), nn.Linear(channels * (size // 4) ** 2, num_classes))

    return head

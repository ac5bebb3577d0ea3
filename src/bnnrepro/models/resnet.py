"""ResNet32 for CIFAR-10 and MNIST, the discrete baseline of SDE-BNN Table 1 (Xu et al. 2022, §5; He et al. 2016,
§4.2).

A 3x3 convolution to 16 channels, three stages of n residual blocks (16, 32, 64 channels; the first block of
stages 2 and 3 halves H and W with stride 2), global average pooling and a linear layer: 6n + 2 weighted layers,
n = 5 for ResNet32 (0.46M parameters), n = 1 for ResNet8.

Choices (the paper says only "standard residual networks"):

* no normalisation, as in every SDE-BNN model (SDE-BNN paper §6; the authors' code, `xwinxu/bayeSDE`
  `brax/_impl/resnet.py`: `resnet32v2` with `normalization_method=""`);
* pre-activation blocks x + conv(act(conv(act(x)))) as the authors' `resnet32v2` (He et al. 2016b), the residual
  form h + f(h) of SDE-BNN paper eq. 7;
* tanh, Table 2's activation for ResNet32; the authors' code uses ReLU, available as `activation`;
* parameter-free shortcuts where the shape changes (He et al.'s option A: subsample, zero-pad the channels), which
  keeps 6n + 2 weighted layers and the published 0.46M; the authors' code uses 1x1 projections (option B);
* torch's default initialisation.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.models.image_layout import channels_first
from bnnrepro.models.weight_sde import ACTIVATIONS

STAGE_WIDTHS = (16, 32, 64)


class ChannelsFirstImages(nn.Module):
    """`channels_first` as a layer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return channels_first(x)


class PreActivationBlock(nn.Module):
    """x -> shortcut(x) + conv3x3(act(conv3x3_stride(act(x)))), convolutions with biases."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, activation: str):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1)
        self.stride, self.extra_channels = stride, out_channels - in_channels
        self.activation = ACTIVATIONS[activation]

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        """Identity, or every stride-th pixel with zero channels appended (option A)."""
        x = x[..., :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, 0, self.extra_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.shortcut(x) + self.conv2(self.activation(self.conv1(self.activation(x))))


class ResNet(nn.Module):
    """CIFAR-style ResNet with `blocks_per_stage` = n (6n + 2 layers) and stage widths (16, 32, 64) times
    `width_multiplier`: x [B, C, H, W] -> logits [B, num_classes]."""

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 10,
        blocks_per_stage: int = 5,
        width_multiplier: float = 1.0,
        activation: str = "tanh",
    ):
        super().__init__()
        widths = [max(1, round(width * width_multiplier)) for width in STAGE_WIDTHS]
        self.stem = nn.Conv2d(in_channels, widths[0], 3, 1, 1)
        blocks, channels = [], widths[0]
        for stage, width in enumerate(widths):
            for index in range(blocks_per_stage):
                stride = 2 if stage and not index else 1
                blocks.append(PreActivationBlock(channels, width, stride, activation))
                channels = width
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(channels, num_classes)
        self.activation = ACTIVATIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.activation(self.blocks(self.stem(x)))
        return self.head(h.mean(dim=(-2, -1)))


def resnet32(in_channels: int = 3, num_classes: int = 10, **options) -> ResNet:
    """ResNet32: 5 blocks per stage; `options` go to ResNet (width_multiplier, activation)."""
    return ResNet(in_channels, num_classes, blocks_per_stage=5, **options)

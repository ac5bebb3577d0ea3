"""Augmentation of the training batches (train.augmentation), on images in the datasets' layout: [B, H, W, C], or
[B, H, W] for grey images (bnnrepro.models.image_layout).

crop_flip: pad 4 pixels on every side, crop back to H x W at a random offset, flip left-right with probability 1/2
(He et al. 2016 §4.2; the UDN authors' code (`ANazaret/unbounded-depth-neural-networks`, `experiments/load_data.py`)
for UDN §6.2: torchvision's RandomCrop(32, padding=4) and RandomHorizontalFlip). torchvision pads the raw image with
black before normalising it, so the padding here, of normalised images, is a black pixel's normalised value
(`black_pixel`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import numpy as np
import torch

AUGMENTATIONS = ("crop_flip",)
"""The values of train.augmentation besides null (none)."""

CROP_PADDING = 4
"""crop_flip's padding (RandomCrop(32, padding=4))."""


def training_augmentation(name: str | None, dataset_cfg: Mapping) -> Callable[..., torch.Tensor] | None:
    """The augmentation `name` (train.augmentation) as f(x, generator=g) of a training batch x of `dataset_cfg`'s
    images, or None for null; ValueError for an unknown name."""
    if name is None:
        return None
    if name not in AUGMENTATIONS:
        raise ValueError(
            f"train.augmentation={name!r} is unknown; choose null (no augmentation) or one of "
            f"{', '.join(AUGMENTATIONS)}"
        )
    return partial(random_crop_flip, padding=CROP_PADDING, fill=black_pixel(dataset_cfg))


def black_pixel(dataset_cfg: Mapping) -> torch.Tensor:
    """A black pixel after the dataset's normalisation (bnnrepro.data.images.load): -mean/std per channel, 0 where
    dataset.mean is null or absent."""
    mean, std = dataset_cfg.get("mean"), dataset_cfg.get("std")
    if mean is None:
        return torch.tensor(0.0)
    return torch.from_numpy((0.0 - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32))


def random_crop_flip(x: torch.Tensor, padding: int, generator: torch.Generator, fill: torch.Tensor) -> torch.Tensor:
    """`crop_flip` of each image of `x` at offsets drawn uniformly from 0..2*padding and flipped with probability
    1/2, all drawn from `generator` (a CPU generator, so that its state is the same on every device)."""
    offsets = torch.randint(0, 2 * padding + 1, (len(x), 2), generator=generator)
    flips = torch.rand(len(x), generator=generator) < 0.5
    return crop_flip(x, padding, offsets.to(x.device), flips.to(x.device), fill)


def crop_flip(
    x: torch.Tensor, padding: int, offsets: torch.Tensor, flips: torch.Tensor, fill: torch.Tensor
) -> torch.Tensor:
    """Each image of `x` padded by `padding` pixels of value `fill` (per channel), cropped back to its size with its
    top-left corner at `offsets` [B, 2] (row, column) of the padded image, and flipped left-right where `flips` [B]."""
    if x.dim() not in (3, 4):
        raise ValueError(
            f"train.augmentation=crop_flip augments images [B, H, W, C] or [B, H, W]; this batch has shape "
            f"{list(x.shape)}: set train.augmentation=null for a dataset whose inputs are not images"
        )
    images = x if x.dim() == 4 else x[..., None]
    b, h, w, c = images.shape
    padded = images.new_empty(b, h + 2 * padding, w + 2 * padding, c)
    padded[...] = fill.to(images)
    padded[:, padding : padding + h, padding : padding + w] = images
    rows = offsets[:, :1] + torch.arange(h, device=x.device)
    columns = offsets[:, 1:] + torch.arange(w, device=x.device)
    columns = torch.where(flips[:, None], columns.flip(1), columns)
    batch = torch.arange(b, device=x.device)
    return padded[batch[:, None, None], rows[:, :, None], columns[:, None, :]].reshape(x.shape)

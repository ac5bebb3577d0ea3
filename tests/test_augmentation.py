"""crop_flip (He et al. 2016 §4.2; UDN §6.2's CIFAR-10 transform): identity at the centre offset, torch.flip when
flipped, padding of a normalised black pixel, draws from its own generator, and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bnnrepro.data import images
from bnnrepro.data.augmentation import (
    CROP_PADDING,
    black_pixel,
    crop_flip,
    random_crop_flip,
    training_augmentation,
)

CIFAR10 = {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2023, 0.1994, 0.2010]}  # config/train/dataset/cifar10.yaml
P = CROP_PADDING


def batch(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def at(offset: tuple[int, int], flip: bool, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([offset] * size), torch.tensor([flip] * size)


@pytest.mark.parametrize("shape", [(5, 32, 32, 3), (5, 28, 28)])
def test_an_unflipped_crop_at_the_centre_is_the_identity_and_a_flipped_one_is_torch_flip(shape) -> None:
    x, fill = batch(*shape), black_pixel(CIFAR10 if len(shape) == 4 else {})
    assert torch.equal(crop_flip(x, P, *at((P, P), False, 5), fill), x)
    assert torch.equal(crop_flip(x, P, *at((P, P), True, 5), fill), torch.flip(x, dims=[2]))


def test_padded_pixels_are_the_fill_and_the_rest_is_the_shifted_image() -> None:
    x, fill = batch(4, 32, 32, 3), black_pixel(CIFAR10)
    top_left = crop_flip(x, P, *at((0, 0), False, 4), fill)
    assert (top_left[:, :P] == fill).all() and (top_left[:, :, :P] == fill).all()
    assert torch.equal(top_left[:, P:, P:], x[:, :-P, :-P])
    bottom_right = crop_flip(x, P, *at((2 * P, 2 * P), False, 4), fill)
    assert (bottom_right[:, -P:] == fill).all() and (bottom_right[:, :, -P:] == fill).all()
    assert torch.equal(bottom_right[:, :-P, :-P], x[:, P:, P:])
    # the flip applies to the crop (RandomCrop, then RandomHorizontalFlip)
    assert torch.equal(
        crop_flip(x, P, *at((1, 2), True, 4), fill), torch.flip(crop_flip(x, P, *at((1, 2), False, 4), fill), [2])
    )


def test_each_image_gets_its_own_offset_and_flip() -> None:
    x, fill = batch(3, 8, 8, 2), torch.zeros(2)
    offsets, flips = torch.tensor([[P, P], [0, 3], [2 * P, 1]]), torch.tensor([False, True, False])
    out = crop_flip(x, P, offsets, flips, fill)
    for i in range(3):
        assert torch.equal(out[i : i + 1], crop_flip(x[i : i + 1], P, offsets[i : i + 1], flips[i : i + 1], fill))


def test_random_crop_flip_draws_from_its_generator() -> None:
    x, fill = batch(256, 32, 32, 3), black_pixel(CIFAR10)
    generator = torch.Generator().manual_seed(3)
    first = random_crop_flip(x, P, generator, fill)
    assert first.shape == x.shape
    assert torch.equal(random_crop_flip(x, P, torch.Generator().manual_seed(3), fill), first)
    assert not torch.equal(random_crop_flip(x, P, generator, fill), first)  # the generator moved on

    # the draws: offsets uniform over 0..2P in both axes, about half the images flipped
    draws = torch.Generator().manual_seed(3)
    offsets = torch.randint(0, 2 * P + 1, (256, 2), generator=draws)
    flips = torch.rand(256, generator=draws) < 0.5
    assert torch.equal(first, crop_flip(x, P, offsets, flips, fill))
    assert set(offsets.unique().tolist()) == set(range(2 * P + 1))
    assert 100 < int(flips.sum()) < 156


def test_the_fill_is_a_black_pixel_after_the_datasets_normalisation(tmp_path: Path) -> None:
    raw = np.zeros((2, 32, 32, 3), dtype=np.uint8)  # black images
    np.savez(tmp_path / "black.npz", x_train=raw, y_train=np.zeros(2), x_test=raw, y_test=np.zeros(2))
    loaded = images.load(tmp_path / "black.npz", CIFAR10)
    assert torch.equal(torch.as_tensor(loaded.x("test")[0, 0, 0]), black_pixel(CIFAR10))
    assert black_pixel({"mean": None, "std": None}) == 0.0 and black_pixel({}) == 0.0


def test_training_augmentation_by_name() -> None:
    assert training_augmentation(None, CIFAR10) is None
    augment = training_augmentation("crop_flip", CIFAR10)
    x = batch(6, 32, 32, 3)
    out = augment(x, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out, random_crop_flip(x, P, torch.Generator().manual_seed(0), black_pixel(CIFAR10)))
    with pytest.raises(ValueError, match=r"train.augmentation='mixup' is unknown; choose null \(no augmentation\)"):
        training_augmentation("mixup", CIFAR10)


def test_a_batch_that_is_not_images_is_a_clear_error() -> None:
    augment = training_augmentation("crop_flip", {})
    with pytest.raises(ValueError, match=r"train.augmentation=crop_flip augments images .* shape \[8, 2\]: set "):
        augment(batch(8, 2), generator=torch.Generator())

"""The image classifiers of SDE-BNN Table 1 as networks of the continuous-depth methods: SDE-BNN, ODEnet,
HyperODEnet and MFVI ODEnet / HyperODEnet with convolutional dynamics (multi-scale on CIFAR-10), ResNet32 and
MFVI ResNet32 (SDE-BNN paper §5 and Table 1, settings in App. B Table 2). Each is a network x -> (logits [S, B, K],
KL [S]) that `ContinuousDepthMethod` trains on the per-datum negative ELBO with a softmax likelihood."""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import nn

from bnnrepro.models.conv_dynamics import ImageSetting, image_sdebnn, image_weight_odenet
from bnnrepro.models.image_layout import channels_first
from bnnrepro.models.mean_field import SampledNetwork, to_mean_field
from bnnrepro.models.resnet import ResNet
from bnnrepro.models.weight_sde_solver import SolverSettings

IMAGE_SHAPES = {  # (C, H, W) of each image dataset
    "mnist": (1, 28, 28),
    "fashion_mnist": (1, 28, 28),
    "cifar10": (3, 32, 32),
    "cifar100": (3, 32, 32),
    "cifar10c": (3, 32, 32),
    "svhn": (3, 32, 32),
}
HYPERNETWORKS = ("hyperodenet", "mfvi_hyperodenet")


class ChannelsFirst(nn.Module):
    """Feeds the datasets' images, [B, H, W] (grey) or [B, H, W, C], to `network` as [B, C, H, W]."""

    def __init__(self, network: nn.Module):
        super().__init__()
        self.network = network

    def forward(self, x: torch.Tensor, num_samples: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        return self.network(channels_first(x), num_samples)


def image_network(cfg: DictConfig, dataset: str, num_classes: int) -> ChannelsFirst:
    """The network of a `method` config with `architecture: conv` (continuous depth) or `resnet`."""
    shape = IMAGE_SHAPES[dataset]
    if cfg.architecture == "resnet":
        model = ResNet(shape[0], num_classes, cfg.blocks_per_stage, cfg.width_multiplier, cfg.activation)
        if cfg.mean_field:
            to_mean_field(model, cfg.prior_variance, cfg.initial_log_std)
        return ChannelsFirst(SampledNetwork(model))
    if cfg.architecture != "conv":
        raise ValueError(f"unknown image architecture {cfg.architecture!r}; known: conv, resnet")
    setting = ImageSetting(
        shape, tuple(cfg.blocks), cfg.fx_width, tuple(cfg.drift_widths), cfg.sigma, cfg.solver.num_steps,
        cfg.augment, cfg.activation, num_classes,
    )  # fmt: skip
    if cfg.name == "sdebnn":
        network = image_sdebnn(
            setting, solver=SolverSettings(**cfg.solver), kl_estimator=cfg.kl_estimator, infer_w0=cfg.infer_w0,
            w0_prior_variance=cfg.w0_prior_variance,
        )  # fmt: skip
    else:
        network = image_weight_odenet(
            setting, hyper=cfg.name in HYPERNETWORKS, mean_field=cfg.mean_field, prior_variance=cfg.prior_variance,
            initial_log_std=cfg.initial_log_std,
        )  # fmt: skip
    return ChannelsFirst(network)

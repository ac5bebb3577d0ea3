"""The SDE-BNN Table 1 image classifiers as Hydra method configs: each of the 12 configs composes with its
dataset, builds through `build_method` at a tiny size, and takes one loss/backward step."""

from __future__ import annotations

import pytest
import torch

from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import build_method
from bnnrepro.train import compose_config

CONTINUOUS = ("odenet", "hyperodenet", "mfvi_odenet", "mfvi_hyperodenet", "sdebnn")
POINT_ESTIMATES = {"resnet32", "odenet", "hyperodenet"}  # one sample, KL 0
IMAGES = {"mnist": (28, 28), "cifar10": (32, 32, 3)}  # the loaders' layouts
CASES = [
    *((f"{name}_{dataset}", dataset) for name in CONTINUOUS for dataset in IMAGES),
    ("resnet32", "mnist"),
    ("mfvi_resnet32", "cifar10"),
]


def tiny_overrides(config: str, dataset: str) -> list[str]:
    if config.endswith("resnet32"):
        return ["method.blocks_per_stage=1", "method.width_multiplier=0.25"]
    drift = "[2,4,2]" if config == "sdebnn_cifar10" else "[1,4,1]"
    blocks = ["method.blocks=[1,1]"] if dataset == "cifar10" else []
    return ["method.fx_width=4", "method.solver.num_steps=2", f"method.drift_widths={drift}", *blocks]


@pytest.mark.parametrize(("config", "dataset"), CASES)
def test_each_image_method_config_builds_and_trains_one_step(config: str, dataset: str) -> None:
    cfg = compose_config([f"method={config}", f"dataset={dataset}", "run_dir=unused", *tiny_overrides(config, dataset)])
    torch.manual_seed(0)
    method = build_method(cfg, DataSpec("classification", IMAGES[dataset][0], 10))
    x, y = torch.rand(3, *IMAGES[dataset]), torch.tensor([0, 4, 9])

    logits, kl = method.network(x, num_samples=2)
    samples = 1 if cfg.method.name in POINT_ESTIMATES else 2
    assert logits.shape == (samples, 3, 10) and kl.shape == (samples,)
    # KL 0 for point estimates and for the SDE-BNN at initialisation (its posterior drift starts at the prior's)
    assert (kl > 0).all() if cfg.method.mean_field else (kl == 0).all()

    method.loss(x, y, num_train=100).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in method.parameters())
    probs = method.predict(x)
    assert probs.shape == (3, 10) and torch.allclose(probs.sum(-1), torch.ones(3))

"""One CIFAR-shaped training step of the UDN (Nazaret & Blei 2022, §6.2) against the finite ResNet of the depth it
currently has, on CPU: the UDN's overhead over the network it is at that moment.

Both are built by the study's method variants (config/studies/udn_images.yaml: the bottleneck-ResNet generator of
§4.2, SGD with momentum 0.9 and weight decay 1e-4): `udn` at lambda_0 = 5, whose truncated Poisson reaches m = 10
layers (a stem and 9 bottleneck blocks, all with a head), and `finite_10`, the same 10 layers with one head. One step
is the whole training step of the pipeline: the loss (eq. 10; for the finite net its point-mass special case), the
backward pass and the SGD update, on a batch of random 32 x 32 x 3 images. The UDN computes every truncation's head
and the q(l)-weighted ELBO in the same pass (§4, "linear complexity in m(q)"); the difference is that cost.

Width multipliers 0.125 (the `default` scale) and 1.0 (the paper's); the variants run in turns, the medians are
reported. The batch is 32 (the paper's 256 takes about 8 x longer at width 1.0 on CPU; the ratio is what matters).

Usage: python -m benchmarks.udn_cifar_step [--repeats N] [--batch B] [--threads T]
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.timing import Step, interleaved_medians, machine
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import build_method
from bnnrepro.optim import build_optimizer
from bnnrepro.pipeline.studies import load_study

WIDTHS = (0.125, 1.0)
VARIANTS = {"UDN (m = 10)": "udn", "finite ResNet, 10 layers": "finite_10"}
CIFAR = DataSpec("classification", 32, 10, (32, 32, 3))


def training_step(variant: str, width: float, batch: int) -> Step:
    """One SGD step of the study's method `variant` at `width` on a fixed random batch."""
    cfg = load_study("udn_images").variant_config(variant, "cifar10")
    cfg.method.generator.width_multiplier = width
    torch.manual_seed(0)
    method = build_method(cfg, CIFAR)
    method.train()
    optimizer = build_optimizer(cfg.optim, method.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    x, y = torch.randn(batch, 32, 32, 3), torch.randint(0, 10, (batch,))

    def step() -> None:
        method.adapt_architecture(optimizer)
        method.training_step(x, y, 50_000, optimizer)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed steps of each variant per width")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}; torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}")
    for width in WIDTHS:
        steps = {name: training_step(variant, width, args.batch) for name, variant in VARIANTS.items()}
        medians = interleaved_medians(steps, args.repeats)
        udn, finite = medians["UDN (m = 10)"], medians["finite ResNet, 10 layers"]
        print(f"width multiplier {width}: UDN {udn * 1e3:8.1f} ms   finite {finite * 1e3:8.1f} ms   "
              f"UDN / finite {udn / finite:5.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

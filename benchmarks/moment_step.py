"""One training step (loss, backward, Adam step) of VBP and of BEDL against the deterministic network of the same
shapes, side by side, in named settings (`--settings`, default all):

  mnist_lenet5   the strided LeNet5 of thesis Table 3.4 on 28x28 grey images (conv 20, conv 50, 500, 10), batch 100
  cifar_lenet5   its CIFAR variant (conv 192, conv 192, 1000, 10) on 32x32x3 images, batch 100
  uci_mlp        the UCI net of Tables 3.1 and 5.1: 13-50-1 (boston's 13 features), batch 32

Variants, each the median over --repeats steps after one warm-up step, on random inputs:
  deterministic  `PlainNetwork`, cross-entropy (Gaussian log-likelihood for regression)
  vbp            `GaussianWeightVI` with Heaviside gates (C = 100): Taylor expected log-softmax (closed-form data
                 term for regression) + KL / N
  bedl           `BayesianEvidential` (type-II ML): CLT ReLU moments and the 5-draw marginal of eq. (5.8)
                 (closed-form marginal for regression)
The thesis' costs per step (Table 5.4 and §3.2.3): VBP about 2F, BEDL about 3F, for F the deterministic forward.
Targets of our project: VBP <= 2.5x and BEDL <= 3.5x the deterministic step.

Usage: python benchmarks/moment_step.py [--settings mnist_lenet5,cifar_lenet5,uci_mlp] [--repeats N] [--threads T]
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
import time
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from bnnrepro.methods.evidential import BayesianEvidential
from bnnrepro.methods.gaussian_weight_vi import GaussianWeightVI
from bnnrepro.models.moment_layers import MomentNetwork, PlainNetwork, activation_moments, network_shapes
from bnnrepro.optim import Adam


@dataclass(frozen=True)
class Setting:
    input_shape: tuple[int, ...]  # one input as the datasets store it ([H, W], [H, W, C] or [D])
    convolutions: list[list[int]]
    hidden_widths: list[int]
    num_outputs: int  # classes, or 1 for regression
    batch: int
    num_train: int

    @property
    def task(self) -> str:
        return "regression" if self.num_outputs == 1 else "classification"


SETTINGS = {
    "mnist_lenet5": Setting((28, 28), [[20, 5, 2], [50, 5, 2]], [500], 10, 100, 60000),
    "cifar_lenet5": Setting((32, 32, 3), [[192, 5, 2], [192, 5, 2]], [1000], 10, 100, 50000),
    "uci_mlp": Setting((13,), [], [50], 1, 32, 455),
}


def shapes(setting: Setting, num_outputs: int):
    config = argparse.Namespace(
        convolutions=setting.convolutions, hidden_widths=setting.hidden_widths, width_multiplier=1.0
    )
    return network_shapes(config, setting.input_shape, num_outputs)


def deterministic_loss(network: PlainNetwork, setting: Setting):
    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        outputs = network(x)
        return F.cross_entropy(outputs, y) if setting.task == "classification" else F.mse_loss(outputs, y)

    return network, loss


def vbp_method(setting: Setting) -> GaussianWeightVI:
    network = MomentNetwork(shapes(setting, setting.num_outputs), activation_moments("heaviside_relu", sharpness=100))
    return GaussianWeightVI(network, setting.task, False, "taylor", 100.0, 1.0, True, 5, 5)


def bedl_method(setting: Setting) -> BayesianEvidential:
    outputs = setting.num_outputs if setting.task == "classification" else 2
    network = MomentNetwork(shapes(setting, outputs), activation_moments("relu"))
    return BayesianEvidential(network, setting.task, "type2_ml", 5, 5, 100.0, 0.05, "thesis", 1.0, None)


def time_steps(module, loss, x, y, repeats: int) -> float:
    optimizer = Adam([{"params": list(module.parameters()), "lr": 1e-3}])
    times = []
    for repeat in range(repeats + 1):
        started = time.perf_counter()
        value = loss(x, y)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        if repeat:  # the first step warms up
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")
    for name in args.settings.split(","):
        setting = SETTINGS[name]
        torch.manual_seed(0)
        x = torch.randn(setting.batch, *setting.input_shape)
        if setting.task == "classification":
            y = torch.randint(0, setting.num_outputs, (setting.batch,))
        else:
            y = torch.randn(setting.batch, 1)
        plain, plain_loss = deterministic_loss(PlainNetwork(shapes(setting, setting.num_outputs)), setting)
        base = time_steps(plain, plain_loss, x, y, args.repeats)
        line = f"{name:13s} deterministic {1000 * base:8.2f} ms"
        for label, method in (("vbp", vbp_method(setting)), ("bedl", bedl_method(setting))):
            loss = functools.partial(lambda x, y, m, n: m.loss(x, y, n), m=method, n=setting.num_train)
            seconds = time_steps(method, loss, x, y, args.repeats)
            line += f"  {label} {1000 * seconds:8.2f} ms ({seconds / base:.2f}x)"
        print(line, flush=True)


if __name__ == "__main__":
    main()

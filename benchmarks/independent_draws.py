"""S draws of a network whose noise is drawn per input row, taken as one pass over the batch repeated S times
(`bnnrepro.models.moment_layers.independent_draws`, what VarOut and MC dropout do) against S passes over the batch
(a loop, as they did before), in named settings (`--settings`, default all):

  varout_uci       a VarOut training step (loss, backward, Adam step): the UCI net 13-50-1, batch 16, 5 draws
                   (thesis Table 3.1's batch on boston and yacht)
  varout_lenet5    the same on the strided LeNet5 of thesis Table 3.4, MNIST-shaped, batch 128
  dropout_uci      an MC dropout training step: 13-50-1, p = 0.05, batch 32, 5 masks
  dropout_predict  MC dropout's predictive on a UCI test split (51 rows): 10,000 masks, Gal & Ghahramani's count

Each the median over --repeats after one warm-up, the two variants in turns, one thread.
Usage: python -m benchmarks.independent_draws [--settings varout_uci,dropout_predict] [--repeats N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from benchmarks.moment_step import SETTINGS, Setting, shapes
from benchmarks.timing import interleaved_medians, machine
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.methods.gaussian_weight_vi import GaussianWeightVI
from bnnrepro.methods.mc_dropout import MonteCarloDropout
from bnnrepro.models.moment_layers import MomentNetwork, PlainNetwork, activation_moments
from bnnrepro.optim import Adam

UCI, LENET5 = SETTINGS["uci_mlp"], SETTINGS["mnist_lenet5"]  # the batch is each setup's own (SETUPS)


def varout(setting: Setting) -> GaussianWeightVI:
    network = MomentNetwork(shapes(setting, setting.num_outputs), activation_moments("heaviside_relu", sharpness=100))
    return GaussianWeightVI(network, setting.task, True, "sampled", 100.0, 1.0, True, 5, 5)


def dropout() -> MonteCarloDropout:
    return MonteCarloDropout(PlainNetwork(shapes(UCI, 1), dropout=0.05), 5, 10_000, noise=RegressionLikelihood(1.0))


Step = Callable[[], object]


def training_step(method, setting: Setting, batch: int) -> Step:
    x = torch.randn(batch, *setting.input_shape)
    y = torch.randint(0, 10, (batch,)) if setting.task == "classification" else torch.randn(batch, 1)
    optimizer = Adam([{"params": list(method.parameters()), "lr": 1e-3}])

    def step() -> None:
        optimizer.zero_grad()
        method.loss(x, y, setting.num_train).backward()
        optimizer.step()

    return step


def predictive(method: MonteCarloDropout, setting: Setting, batch: int) -> Step:
    x = torch.randn(batch, *setting.input_shape)
    return lambda: method.predict(x)


SETUPS = {  # name: (the method, how it is timed, its setting, the batch)
    "varout_uci": (lambda: varout(UCI), training_step, UCI, 16),
    "varout_lenet5": (lambda: varout(LENET5), training_step, LENET5, 128),
    "dropout_uci": (dropout, training_step, UCI, 32),
    "dropout_predict": (dropout, predictive, UCI, 51),
}


def looped(method) -> Callable[[torch.Tensor, int], torch.Tensor]:
    """The method's `_draws` as S passes over the batch."""
    draw = method.network.sample if isinstance(method, GaussianWeightVI) else (lambda x: method.network(x, True))
    return lambda x, num_samples: torch.stack([draw(x) for _ in range(num_samples)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default=",".join(SETUPS))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    print(machine(), f"torch {torch.__version__}, 1 thread")
    for name in args.settings.split(","):
        build, timed, setting, batch = SETUPS[name]
        steps = {}
        for variant in ("one pass", "loop"):
            torch.manual_seed(0)
            method = build()
            if variant == "loop":
                method._draws = looped(method)
            steps[variant] = timed(method, setting, batch)
        seconds = interleaved_medians(steps, args.repeats)
        print(
            f"{name:16s} one pass {1000 * seconds['one pass']:9.2f} ms  loop {1000 * seconds['loop']:9.2f} ms "
            f"({seconds['loop'] / seconds['one pass']:.1f}x)",
            flush=True,
        )


if __name__ == "__main__":
    main()

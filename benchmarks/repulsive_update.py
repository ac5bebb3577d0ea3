"""One repulsive-ensemble update step for an ensemble of MLPs on a minibatch, batched (torch.func) vs a loop, in
named settings reported side by side (`--settings`, default all):

  fashion_mnist  our tiny-CPU FashionMNIST model (the paper does not state Table 1's MLP): 784-100-10, ReLU (79,510
                 weights per particle), 10 particles, batch 128 of N = 60,000, categorical likelihood on the logits
  toy_1d         the authors' 1D regression toy (Fig. 1; their README run): 1-10-10-1, ReLU (141 weights),
                 100 particles, batch 32 of N = 90, Gaussian likelihood with std 1 (their --pred_dist_std default)
  toy_2d         the authors' 2D classification toy (Fig. 3): 2-10-10-5, 100 particles, batch 128 of N = 200

All use the Gaussian prior N(0, I) and the RBF kernel with the median heuristic. The step is kde-WGD (eq. 15) or
kde-fWGD (eqs. 5, 20; the functional prior's score is SSGE fitted on as many push-forward prior draws as particles,
on the same batch, §3.3), then an Adam step on -phi.

Variants, each timed as the median over --repeats steps after one warm-up step, on random inputs:
  batched   bnnrepro.inference.repulsive: one vmapped functional_call for all particles (and its vjp)
  loop      one functional_call per particle in a Python loop and one backward through the stacked outputs,
            as the authors' code does (`ratschlab/repulsive_ensembles`, models/ensemble.py loops over particles)
Both compute the same direction (checked before timing, to float32 rounding); the repulsion and score code is shared.

Usage: python benchmarks/repulsive_update.py [--settings fashion_mnist,toy_1d,toy_2d] [--repeats N] [--threads T]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils import parameters_to_vector

from bnnrepro.inference.posterior_targets import GaussianLogLikelihood
from bnnrepro.inference.repulsive import (
    LogLikelihood,
    ensemble_forward,
    ensemble_vjp,
    function_space_scores,
    fwgd_direction,
    log_posterior_grads,
    wgd_direction,
)
from bnnrepro.inference.score_estimators import kde_score
from bnnrepro.optim import Adam

PRIOR_VARIANCE = 1.0
TOLERANCE = 1e-4
"""Largest relative difference of the batched and loop directions: float32 rounding, amplified for kde-fWGD with 100
particles by SSGE's 1 / lambda_j^2 (eq. 17; measured 3e-5 on the 1D toy)."""


@dataclass(frozen=True)
class Setting:
    widths: list[int]  # MLP layer widths, input first
    particles: int
    batch: int
    num_train: int
    task: str  # classification | regression


SETTINGS = {
    "fashion_mnist": Setting([784, 100, 10], 10, 128, 60000, "classification"),
    "toy_1d": Setting([1, 10, 10, 1], 100, 32, 90, "regression"),
    "toy_2d": Setting([2, 10, 10, 5], 100, 128, 200, "classification"),
}


@dataclass(frozen=True)
class Problem:
    model: nn.Module  # the architecture; its own parameters are not used
    particles: torch.Tensor  # [n, d]
    x: torch.Tensor
    y: torch.Tensor
    prior_weights: torch.Tensor  # [n, d] draws from N(0, PRIOR_VARIANCE I), the same for both variants
    log_likelihood: LogLikelihood
    num_train: int


Direction = Callable[[Problem, torch.Tensor], torch.Tensor]


def categorical_log_likelihood(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return -nn.functional.cross_entropy(logits, labels, reduction="none")


def loop_forward(model: nn.Module, particles: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """One functional_call per particle: the baseline."""
    names, params = zip(*model.named_parameters(), strict=True)
    sizes = [p.numel() for p in params]
    outputs = []
    for w in particles:
        weights = {name: chunk.view(p.shape) for name, p, chunk in zip(names, params, w.split(sizes), strict=True)}
        outputs.append(functional_call(model, weights, (x,)))
    return torch.stack(outputs)


def batched_wgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    grads, _ = log_posterior_grads(
        problem.model, particles, problem.x, problem.y, problem.log_likelihood, problem.num_train, PRIOR_VARIANCE
    )
    return wgd_direction(particles, grads, kde_score)


def loop_wgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    leaf = particles.detach().requires_grad_(True)
    outputs = loop_forward(problem.model, leaf, problem.x)
    targets = problem.y.expand(len(leaf), *problem.y.shape).flatten(0, 1)
    likelihood = problem.log_likelihood(outputs.flatten(0, 1), targets).sum() / len(problem.y)
    log_posterior = problem.num_train * likelihood - leaf.square().sum() / (2 * PRIOR_VARIANCE)
    (grads,) = torch.autograd.grad(log_posterior, leaf)
    return wgd_direction(particles, grads, kde_score)


def batched_fwgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    outputs, pull_back = ensemble_vjp(problem.model, particles, problem.x)
    prior = ensemble_forward(problem.model, problem.prior_weights, problem.x)
    scores = function_space_scores(outputs, problem.y, problem.log_likelihood, problem.num_train, prior)
    return fwgd_direction(outputs, scores, pull_back, kde_score)


def loop_fwgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    leaf = particles.detach().requires_grad_(True)
    outputs = loop_forward(problem.model, leaf, problem.x)
    with torch.no_grad():
        prior = loop_forward(problem.model, problem.prior_weights, problem.x)
    scores = function_space_scores(outputs.detach(), problem.y, problem.log_likelihood, problem.num_train, prior)

    def pull_back(cotangents: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(outputs, leaf, cotangents)[0]

    return fwgd_direction(outputs.detach(), scores, pull_back, kde_score)


VARIANTS: dict[str, tuple[Direction, Direction]] = {
    "kde-WGD": (batched_wgd, loop_wgd),
    "kde-fWGD": (batched_fwgd, loop_fwgd),
}


def make_problem(setting: Setting) -> Problem:
    """Particles from PyTorch's default initialisation of independent MLPs (as the authors' image tasks), random
    inputs and targets."""
    torch.manual_seed(0)
    widths = setting.widths

    def mlp() -> nn.Sequential:
        layers = [(nn.Linear(i, o), nn.ReLU()) for i, o in zip(widths[:-1], widths[1:], strict=True)]
        return nn.Sequential(*[module for layer in layers for module in layer][:-1])

    model = mlp()
    particles = torch.stack([parameters_to_vector(mlp().parameters()) for _ in range(setting.particles)]).detach()
    prior_weights = PRIOR_VARIANCE**0.5 * torch.randn_like(particles)
    x = torch.rand(setting.batch, widths[0])
    if setting.task == "regression":
        y, log_likelihood = torch.randn(setting.batch, widths[-1]), GaussianLogLikelihood(1.0)
    else:
        y, log_likelihood = torch.randint(widths[-1], (setting.batch,)), categorical_log_likelihood
    return Problem(model, particles, x, y, prior_weights, log_likelihood, setting.num_train)


def relative_difference(variant: str, problem: Problem) -> float:
    """||phi_batched - phi_loop|| / ||phi_loop|| of one variant's directions at the problem's particles."""
    batched, loop = VARIANTS[variant]
    expected = loop(problem, problem.particles)
    return float((batched(problem, problem.particles) - expected).norm() / expected.norm())


def seconds_per_step(direction: Direction, problem: Problem, repeats: int) -> float:
    """Median time of direction + Adam step on -phi, after one warm-up step."""
    particles = problem.particles.clone()
    optimiser = Adam([{"params": [particles], "lr": 1e-3}])
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        particles.grad = -direction(problem, particles)
        optimiser.step()
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats} steps")
    for name in args.settings.split(","):
        setting = SETTINGS[name]
        problem = make_problem(setting)
        print(f"{name}: MLP {'-'.join(map(str, setting.widths))} ({problem.particles.shape[1]} weights), "
              f"{setting.particles} particles, batch {setting.batch}, {setting.task}")  # fmt: skip
        for variant, (batched, loop) in VARIANTS.items():
            difference = relative_difference(variant, problem)
            assert difference < TOLERANCE, f"{variant}: batched and loop directions differ by {difference:.1e}"
            batched_seconds = seconds_per_step(batched, problem, args.repeats)
            loop_seconds = seconds_per_step(loop, problem, args.repeats)
            print(f"  {variant:9s} batched {1e3 * batched_seconds:8.2f} ms/step   loop {1e3 * loop_seconds:8.2f} "
                  f"ms/step   loop / batched {loop_seconds / batched_seconds:5.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

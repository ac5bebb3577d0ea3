"""One repulsive-ensemble update step for an ensemble of MLPs on a minibatch, batched (torch.func) vs a loop.

Default configuration: the paper does not state the FashionMNIST MLP of Table 1; this is our tiny-CPU
FashionMNIST model, 784-100-10 with ReLU (79,510 weights per particle), with 10 particles, batch 128
of N = 60,000 training points, the Gaussian prior N(0, I), a categorical likelihood on the logits and the RBF kernel
with the median heuristic. `--widths 2,10,10,5 --particles 100` gives the authors' 2-D classification toy (Fig. 3).
The step is kde-WGD (eq. 15) or kde-fWGD (eqs. 5, 20; the functional prior's score is SSGE fitted on as many
push-forward prior draws as particles, on the same batch, §3.3), then an Adam step on -phi.

Variants, each timed as the median over --repeats steps after one warm-up step, on random inputs:
  batched   bnnrepro.inference.repulsive: one vmapped functional_call for all particles (and its vjp)
  loop      one functional_call per particle in a Python loop and one backward through the stacked outputs,
            as the authors' code does (models/ensemble.py loops over particles)
Both compute the same direction (checked before timing, to float32 rounding); the repulsion and score code is shared.

Usage: python benchmarks/repulsive_update.py [--repeats N] [--particles P] [--widths 784,100,10] [--batch B]
                                              [--threads T]
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

from bnnrepro.inference.repulsive import (
    ensemble_forward,
    ensemble_vjp,
    function_space_scores,
    fwgd_direction,
    log_posterior_grads,
    wgd_direction,
)
from bnnrepro.inference.score_estimators import kde_score
from bnnrepro.optim import Adam

NUM_TRAIN, PRIOR_VARIANCE = 60000, 1.0
Forward = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Problem:
    model: nn.Module  # the architecture; its own parameters are not used
    particles: torch.Tensor  # [n, d]
    x: torch.Tensor
    y: torch.Tensor
    prior_weights: torch.Tensor  # [n, d] draws from N(0, PRIOR_VARIANCE I), the same for both variants


Direction = Callable[[Problem, torch.Tensor], torch.Tensor]


def log_likelihood(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
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
        problem.model, particles, problem.x, problem.y, log_likelihood, NUM_TRAIN, PRIOR_VARIANCE
    )
    return wgd_direction(particles, grads, kde_score)


def loop_wgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    leaf = particles.detach().requires_grad_(True)
    outputs = loop_forward(problem.model, leaf, problem.x)
    likelihood = log_likelihood(outputs.flatten(0, 1), problem.y.repeat(len(leaf))).sum() / len(problem.y)
    log_posterior = NUM_TRAIN * likelihood - leaf.square().sum() / (2 * PRIOR_VARIANCE)
    (grads,) = torch.autograd.grad(log_posterior, leaf)
    return wgd_direction(particles, grads, kde_score)


def batched_fwgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    outputs, pull_back = ensemble_vjp(problem.model, particles, problem.x)
    prior = ensemble_forward(problem.model, problem.prior_weights, problem.x)
    scores = function_space_scores(outputs, problem.y, log_likelihood, NUM_TRAIN, prior)
    return fwgd_direction(outputs, scores, pull_back, kde_score)


def loop_fwgd(problem: Problem, particles: torch.Tensor) -> torch.Tensor:
    leaf = particles.detach().requires_grad_(True)
    outputs = loop_forward(problem.model, leaf, problem.x)
    with torch.no_grad():
        prior = loop_forward(problem.model, problem.prior_weights, problem.x)
    scores = function_space_scores(outputs.detach(), problem.y, log_likelihood, NUM_TRAIN, prior)

    def pull_back(cotangents: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(outputs, leaf, cotangents)[0]

    return fwgd_direction(outputs.detach(), scores, pull_back, kde_score)


VARIANTS: dict[str, tuple[Direction, Direction]] = {
    "kde-WGD": (batched_wgd, loop_wgd),
    "kde-fWGD": (batched_fwgd, loop_fwgd),
}


def make_problem(widths: list[int], num_particles: int, batch: int) -> Problem:
    """Particles from PyTorch's default initialisation of independent MLPs (as the authors' image tasks)."""
    torch.manual_seed(0)

    def mlp() -> nn.Sequential:
        layers = [(nn.Linear(i, o), nn.ReLU()) for i, o in zip(widths[:-1], widths[1:], strict=True)]
        return nn.Sequential(*[module for layer in layers for module in layer][:-1])

    model = mlp()
    particles = torch.stack([parameters_to_vector(mlp().parameters()) for _ in range(num_particles)]).detach()
    prior_weights = PRIOR_VARIANCE**0.5 * torch.randn_like(particles)
    return Problem(model, particles, torch.rand(batch, widths[0]), torch.randint(widths[-1], (batch,)), prior_weights)


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
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--particles", type=int, default=10)
    parser.add_argument("--widths", default="784,100,10", help="MLP layer widths, input first")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    widths = [int(width) for width in args.widths.split(",")]
    problem = make_problem(widths, args.particles, args.batch)
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")
    print(f"MLP {args.widths.replace(',', '-')} ({problem.particles.shape[1]} weights), {args.particles} particles, "
          f"batch {args.batch}, median of {args.repeats} steps")  # fmt: skip
    for name, (batched, loop) in VARIANTS.items():
        expected = loop(problem, problem.particles)
        difference = float((batched(problem, problem.particles) - expected).norm() / expected.norm())
        assert difference < 1e-5, f"{name}: batched and loop directions differ by {difference:.1e} (relative)"
        batched_seconds = seconds_per_step(batched, problem, args.repeats)
        loop_seconds = seconds_per_step(loop, problem, args.repeats)
        print(f"{name:9s} batched {1e3 * batched_seconds:8.2f} ms/step   loop {1e3 * loop_seconds:8.2f} ms/step   "
              f"loop / batched {loop_seconds / batched_seconds:5.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

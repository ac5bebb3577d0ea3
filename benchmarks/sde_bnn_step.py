"""One SDE-BNN training step (forward + backward of the per-datum negative ELBO) at the MNIST size of Table 2, on CPU.

Configuration (Table 2, MNIST column): batch 128, 28x28 inputs plus 2 zero augmentation dims, f_x width 32,
f_w 1-64-1, sigma 0.1, tanh, 20 fixed Euler steps over t in [0, 1], 1 posterior sample (--samples to change).
The hidden dynamics are the fully connected MLPHiddenDynamics (786 -> 32 -> 786, 51,940 weights), NOT the
paper's conv block, which is not written yet.

Variants, each timed as the median over --repeats steps after one warm-up step:
  ours, backprop       one torchsde.sdeint over [w, h, KL] (bnnrepro.models.weight_sde), backprop through it
  ours, adjoint        the same with torchsde.sdeint_adjoint (the stochastic adjoint)
  ours, STL            the STL estimator (eq. 12) through the fixed-step Euler-Maruyama loop, backprop
  obvious two-pass     torchsde.sdeint of [w, KL] alone, returning w on the step grid, then the hidden units
                       re-integrated by Euler on that grid, one Python iteration per weight sample
                       (torch.func.functional_call of an nn.Sequential built for one weight vector)

Peak memory: torch's CPU tensors are not allocated through Python, so tracemalloc does not see them, and
ru_maxrss (resource.getrusage) cannot be reset after the warm-up step's one-time allocations. So a thread samples
the resident set (/proc/self/statm) every 0.5 ms during one step after the warm-up, and the peak is reported above
the resident set before that step. Timing and memory each run in a fresh process per variant (see
`in_fresh_process` for the allocator settings of the memory run). `gc.collect(1)` runs after every timed step
(0.1 ms): each torchsde.BrownianInterval is a reference cycle that holds its cached noise, which would otherwise
wait for a full garbage collection and pile up (in a training loop too, and on GPU with GPU memory).

Usage: python benchmarks/sde_bnn_step.py [--repeats N] [--samples S] [--steps K] [--threads T]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import platform
import resource
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torchsde
from torch import nn
from torch.func import functional_call

from bnnrepro.distributions import categorical_log_likelihood
from bnnrepro.models.weight_sde import (
    DriftNet,
    mlp_sdebnn,
    negative_elbo,
    with_time,
)
from bnnrepro.models.weight_sde_solver import SolverSettings

BATCH, NUM_DATA, WIDTH, DRIFT_WIDTHS, SIGMA = 128, 54000, 32, (1, 64, 1), 0.1
Step = Callable[[torch.Tensor, torch.Tensor], None]
VARIANTS = ("ours, backprop", "ours, adjoint", "ours, STL", "obvious two-pass")


class TimeLinear(nn.Module):
    """Linear on [x, t], the per-layer time conditioning of the hidden dynamics."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.linear = nn.Linear(n_in + 1, n_out)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.linear(with_time(x, t))


class ObviousDynamics(nn.Module):
    """The same f_h as MLPHiddenDynamics, as an ordinary module whose weights are swapped in per sample."""

    def __init__(self, dim: int):
        super().__init__()
        self.first, self.second = TimeLinear(dim, WIDTH), TimeLinear(WIDTH, dim)

    def forward(self, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.second(torch.tanh(self.first(h, t)), t)


class WeightSDE(nn.Module):
    """[w, KL] alone: dw = (NN_phi(w, t) - w) dt + sigma dB, dKL = 1/2 ||NN_phi / sigma||^2 dt."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, num_weights: int):
        super().__init__()
        self.net = DriftNet(num_weights, DRIFT_WIDTHS, "tanh")
        nn.init.normal_(self.net.layers[-1].weight, std=1e-3)

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w = y[:, :-1]
        residual = self.net(t, w)
        return torch.cat([residual - w, 0.5 * (residual / SIGMA).square().sum(-1, keepdim=True)], -1)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.full_like(y[:, :-1], SIGMA), torch.zeros_like(y[:, -1:])], -1)


def ours(settings: SolverSettings, kl_estimator: str, samples: int) -> Step:
    model = mlp_sdebnn(784, 10, width=WIDTH, drift_widths=DRIFT_WIDTHS, sigma=SIGMA, activation="tanh",
                       solver=settings, kl_estimator=kl_estimator)  # fmt: skip
    nn.init.normal_(model.sde.posterior.net.layers[-1].weight, std=1e-3)  # q != p, as after some training

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        model.zero_grad()
        logits, kl = model(x, samples)
        negative_elbo(categorical_log_likelihood(logits, y), kl, NUM_DATA).backward()

    return step


def obvious(samples: int, steps: int) -> Step:
    dynamics = ObviousDynamics(786)
    names, shapes = zip(*((name, p.shape) for name, p in dynamics.named_parameters()), strict=True)
    w0 = nn.Parameter(torch.cat([p.detach().flatten() for p in dynamics.parameters()]))
    sde, readout = WeightSDE(w0.numel()), nn.Linear(786, 10)
    grid = torch.linspace(0, 1, steps + 1)

    def as_parameters(w: torch.Tensor) -> dict[str, torch.Tensor]:
        chunks = w.split([shape.numel() for shape in shapes])
        return {name: chunk.view(shape) for name, chunk, shape in zip(names, chunks, shapes, strict=True)}

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        for module in (sde, readout):
            module.zero_grad()
        w0.grad = None
        y0 = torch.cat([w0.expand(samples, -1), torch.zeros(samples, 1)], -1)
        path = torchsde.sdeint(sde, y0, grid, method="euler", dt=1 / steps)  # [steps + 1, S, P + 1]
        h0 = torch.cat([x.flatten(1), torch.zeros(len(x), 2)], -1)
        log_likelihood = []
        for s in range(samples):
            h = h0
            for i in range(steps):
                drift = functional_call(dynamics, as_parameters(path[i, s, :-1]), (grid[i], h))
                h = h + drift * (grid[i + 1] - grid[i])
            log_likelihood.append(categorical_log_likelihood(readout(h), y))
        negative_elbo(torch.stack(log_likelihood), path[-1, :, -1], NUM_DATA).backward()

    return step


def build(variant: str, samples: int, steps: int) -> Step:
    if variant == "obvious two-pass":
        return obvious(samples, steps)
    settings = SolverSettings(method="euler", num_steps=steps, adjoint=variant == "ours, adjoint")
    return ours(settings, "stl" if variant == "ours, STL" else "ckl", samples)


def resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


class PeakResident:
    """The largest resident set seen by a thread that samples /proc/self/statm every 0.5 ms while active."""

    def __enter__(self) -> PeakResident:
        self.peak, self.running = resident_mib(), True
        self.thread = threading.Thread(target=self.sample)
        self.thread.start()
        return self

    def sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, resident_mib())
            time.sleep(5e-4)

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()


def seconds_per_step(step: Step, x: torch.Tensor, y: torch.Tensor, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - started)
        gc.collect(1)  # each torchsde.BrownianInterval is a reference cycle that holds the step's noise
    return statistics.median(times)


def peak_step_mib(step: Step, x: torch.Tensor, y: torch.Tensor) -> float:
    """The peak resident set during one step, above the resident set before it."""
    before = resident_mib()
    with PeakResident() as memory:
        step(x, y)
    return memory.peak - before


def worker(variant: str, args: argparse.Namespace, memory: bool, results: multiprocessing.Queue) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    step = build(variant, args.samples, args.steps)
    x, y = torch.rand(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))
    step(x, y)  # warm-up: one-time allocations (thread pools, autograd engine) are not the step's
    gc.collect(1)
    results.put(peak_step_mib(step, x, y) if memory else seconds_per_step(step, x, y, args.repeats))


def in_fresh_process(variant: str, args: argparse.Namespace, memory: bool) -> float:
    """Run `worker` in a new interpreter; for memory, glibc returns every freed block of >= 64 KiB to the OS at
    once, so that the resident set follows the live tensors (this slows the step down, hence two processes)."""
    context, results = multiprocessing.get_context("spawn"), multiprocessing.get_context("spawn").Queue()
    saved = dict(os.environ)
    if memory:
        os.environ.update(MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    try:
        process = context.Process(target=worker, args=(variant, args, memory, results))
        process.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    value = results.get()
    process.join()
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1, help="weight paths per step (Table 2, MNIST: 1)")
    parser.add_argument("--steps", type=int, default=20, help="fixed Euler steps over [0, 1] (Table 2, MNIST: 20)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")
    print(f"MNIST-sized SDE-BNN with MLP dynamics, batch {BATCH}, {args.steps} Euler steps, {args.samples} sample(s), "
          f"median of {args.repeats}")  # fmt: skip
    reference = None
    for variant in VARIANTS:
        seconds = in_fresh_process(variant, args, memory=False)
        peak = in_fresh_process(variant, args, memory=True)
        reference = reference or seconds
        print(f"{variant:18s} {seconds:7.3f} s/step  {seconds / reference:5.2f} x ours-backprop  peak +{peak:6.1f} MiB")


if __name__ == "__main__":
    main()

"""One SDE-BNN training step on the toy 1D regression (forward + backward of the per-datum negative ELBO), ours
against plain torchsde on the same SDE, on CPU.

Configuration: the sdebnn_toy study's models on its 40 training points (full batch). `--model ws` (default): the
workshop model ws_sdebnn (Xu et al. 2020 §4: f_h and f_w two-layer 64-unit swish nets, sigma 0.5) at the default
scale's 20 Euler steps and 20 weight samples (config/studies/sdebnn_toy.yaml), 4742 weights; `--model p1`: the
SDE-BNN paper's 1D model (Xu et al. 2022 Table 2: f_x 32, f_w 32, sigma 0.2, 10 steps, 20 samples), 262 weights.
Both: 2 augmented dims, Laplace likelihood with learned scale, KL coef. 1e-3, the "ckl" path KL (eq. 11).

Variants, timed in turns in one process (one step of each per round, so that a busy machine slows all alike),
the median over --repeats rounds after --warmup rounds:
  ours                   the method as the training job builds it (bnnrepro.methods.continuous_depth.build from
                         the composed Hydra config): one torchsde.sdeint over [w, h, KL, clock] with the weights'
                         Brownian motion BrownianBridgeTree (bnnrepro.models.brownian), zero-padded to the state
  torchsde, default bm   the same SDE written the obvious way (DriftNet-like MLP on [w, t], hidden MLP with
                         per-sample weights by torch.bmm, f and g of the whole state) through torchsde.sdeint with
                         the Brownian motion it makes itself (a BrownianInterval over every state channel, no dt)
  torchsde, dt bm        the same with BrownianInterval(dt=1/steps) over every state channel, as torchsde's
                         documentation advises for fixed steps (torchsde issue #109)
All three solve the same Euler grid with the same networks (same initial parameters, copied from ours) and
backpropagate through the solver. `gc.collect(1)` follows every step, as in the training loop (each
BrownianInterval is a reference cycle that holds its noise). `--profile` adds torch.profiler's top operators of
each variant (self CPU per step).

Usage: python benchmarks/sdebnn_toy_step.py [--model ws|p1] [--repeats N] [--warmup N] [--threads T] [--profile]
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import time
from collections.abc import Callable

import torch
import torchsde
from torch import nn
from torch.nn import functional as F

from bnnrepro.data.toy_regression import generate_sdebnn_toy
from bnnrepro.methods.continuous_depth import ContinuousDepthMethod, build
from bnnrepro.train import compose_config

MODELS = {
    "ws": ["method.sigma=0.5", "method.hidden_widths=[64,64]", "method.drift_widths=[64,64]",
           "method.solver.num_steps=20", "method.num_samples=20"],
    "p1": [],
}  # fmt: skip
"""Hydra overrides of method=sdebnn: the study's ws_sdebnn at the default scale, and p1_toy's sdebnn."""
VARIANTS = ("ours", "torchsde, default bm", "torchsde, dt bm")
Step = Callable[[], None]


class PlainSDE(nn.Module):
    """The augmented SDE written the obvious way for torchsde: state [w, h, KL, clock] and

    dw = (NN_phi([w, t]) - w) dt + sigma dB,  dh = f_h([h, t]; w) dt,  dKL = 1/2 |NN_phi / sigma|^2 dt,  dc = dt.
    """

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, method: ContinuousDepthMethod, batch: int):
        super().__init__()
        sde = method.network.sde
        layers = sde.posterior.net.layers
        self.drift = nn.ModuleList(nn.Linear(layer.in_features, layer.out_features) for layer in layers)
        self.drift.load_state_dict(layers.state_dict())
        self.shapes = sde.dynamics.shapes  # (out, in + 1) of each hidden layer, weights then bias in w
        self.sigma, self.num_weights, self.batch = sde.posterior.prior.sigma, sde.num_weights, batch

    def hidden_drift(self, t: torch.Tensor, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """f_h of each sample s with its weights w[s]: h [S, B, d] -> [S, B, d]."""
        offset = 0
        for i, (n_out, n_in) in enumerate(self.shapes):
            weight = w[:, offset : offset + n_out * n_in].reshape(-1, n_out, n_in)
            bias = w[:, offset + n_out * n_in : offset + n_out * n_in + n_out]
            offset += n_out * n_in + n_out
            x = torch.cat([F.silu(h) if i else h, t.expand(*h.shape[:-1], 1)], -1)
            h = torch.bmm(x, weight.transpose(1, 2)) + bias.unsqueeze(1)
        return h

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w, h = y[:, : self.num_weights], y[:, self.num_weights : -2]
        x = w
        for i, layer in enumerate(self.drift):
            x = layer(torch.cat([F.silu(x) if i else x, t.expand(x.shape[0], 1)], -1))
        drift_h = self.hidden_drift(t, h.reshape(y.shape[0], self.batch, -1), w).flatten(1)
        kl_rate = 0.5 * (x / self.sigma).square().sum(-1, keepdim=True)
        return torch.cat([x - w, drift_h, kl_rate, torch.ones_like(kl_rate)], -1)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        sigma = torch.full_like(y[:, : self.num_weights], self.sigma)
        return torch.cat([sigma, torch.zeros_like(y[:, self.num_weights :])], -1)


def check_same_drift(method: ContinuousDepthMethod, batch: int) -> None:
    """PlainSDE's f and g equal ours on a random augmented state: the variants solve the same SDE."""
    sde, plain_sde = method.network.sde, PlainSDE(method, batch)
    y, t = torch.randn(method.num_samples, sde.num_weights + batch * sde.dynamics.state_shape[0] + 2), torch.tensor(0.3)
    with torch.no_grad():
        torch.testing.assert_close(plain_sde.f(t, y), sde.f(t, y))
        torch.testing.assert_close(plain_sde.g(t, y), sde.g(t, y))


def ours(method: ContinuousDepthMethod, x: torch.Tensor, y: torch.Tensor) -> Step:
    def step() -> None:
        method.zero_grad()
        method.loss(x, y, len(x)).backward()

    return step


def plain(method: ContinuousDepthMethod, x: torch.Tensor, y: torch.Tensor, dt_hint: bool) -> Step:
    """torchsde.sdeint on PlainSDE, the readout and Laplace likelihood of ours, the per-datum negative ELBO."""
    network, samples = method.network, method.num_samples
    sde = PlainSDE(method, len(x))
    w0 = nn.Parameter(network.initial_weights.w0.detach().clone())
    readout = nn.Linear(network.output_layer.in_features, network.output_layer.out_features)
    readout.load_state_dict(network.output_layer.state_dict())
    log_scale = nn.Parameter(method.likelihood.log_scale.detach().clone())
    steps = network.solver.num_steps
    ts = torch.tensor([0.0, 1.0])

    def step() -> None:
        for module in (sde, readout):
            module.zero_grad()
        w0.grad = log_scale.grad = None
        h0 = torch.cat([x, x.new_zeros(len(x), 2)], -1)
        y0 = torch.cat([w0.expand(samples, -1), h0.flatten().expand(samples, -1), x.new_zeros(samples, 2)], -1)
        bm = None
        if dt_hint:
            bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=y0.shape, dtype=y0.dtype, dt=1 / steps)
        y1 = torchsde.sdeint(sde, y0, ts, method="euler", dt=1 / steps, bm=bm)[-1]
        h1 = y1[:, sde.num_weights : -2].reshape(samples, len(x), -1)
        log_likelihood = torch.distributions.Laplace(readout(h1), log_scale.exp()).log_prob(y).sum(-1)
        loss = -log_likelihood.mean() + method.kl_weight * y1[:, -2].mean() / len(x)
        loss.backward()

    return step


def profile(step: Step, repeats: int) -> str:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            step()
            gc.collect(1)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:12]
    total = sum(e.self_cpu_time_total for e in prof.key_averages()) / repeats / 1e3
    lines = [f"    {e.key:40s} {e.count // repeats:5d} calls {e.self_cpu_time_total / repeats / 1e3:7.2f} ms"
             for e in rows]  # fmt: skip
    return "\n".join([f"    operators' self CPU: {total:.2f} ms/step", *lines])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS), default="ws")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (the training jobs use 1)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    overrides = ["method=sdebnn", "dataset=sdebnn_toy", "scale=default", "run_dir=unused", *MODELS[args.model]]
    cfg = compose_config(overrides)
    splits = generate_sdebnn_toy(0)
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    method = build(cfg, splits.spec("regression"))
    nn.init.normal_(method.network.sde.posterior.net.layers[-1].weight, std=1e-3)  # q != p, as after some training
    method.train()
    steps = {"ours": ours(method, x, y)}
    steps["torchsde, default bm"] = plain(method, x, y, dt_hint=False)
    steps["torchsde, dt bm"] = plain(method, x, y, dt_hint=True)
    check_same_drift(method, len(x))
    m = cfg.method
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"torchsde {torchsde.__version__}, {args.threads} thread(s)")  # fmt: skip
    print(f"toy SDE-BNN '{args.model}': {method.network.sde.num_weights} weights, f_x {list(m.hidden_widths)}, "
          f"f_w {list(m.drift_widths)}, batch {len(x)}, {m.solver.num_steps} Euler steps, {m.num_samples} samples; "
          f"median of {args.repeats} after {args.warmup} warm-up")  # fmt: skip
    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for round_ in range(args.warmup + args.repeats):
        for variant in VARIANTS:
            started = time.perf_counter()
            steps[variant]()
            elapsed = time.perf_counter() - started
            gc.collect(1)
            if round_ >= args.warmup:
                times[variant].append(elapsed)
    reference = statistics.median(times["ours"])
    for variant in VARIANTS:
        seconds = statistics.median(times[variant])
        print(f"{variant:22s} {1e3 * seconds:7.2f} ms/step  {seconds / reference:5.2f} x ours")
        if args.profile:
            print(profile(steps[variant], args.repeats))


if __name__ == "__main__":
    main()

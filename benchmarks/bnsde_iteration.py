"""One BNSDE training iteration (thesis ch. 6: E-PAC-Bayes-Hybrid, Algorithm 2, on the stochastic Lorenz attractor)
against the same model solved by plain torchsde, and a batched forecast, on CPU.

Model: the study's `e_pac_bayes_hybrid@z` on Lorenz (config/studies/thesis_bnsde.yaml, built by
`bnnrepro.artifacts.thesis_bnsde_costs.row_config`): the 3-100-100-3 softplus BNN drift with local
reparameterisation, prior knowledge of dz (gamma = [0, 0, 1], noisy parameters), G = I, the unit-variance Gaussian
likelihood and the PAC loss -mll + sqrt((KL + log(4 sqrt(N) / delta)) / 2N), N = 20 training windows.

Variants of one iteration (loss + backward pass, no optimiser update), on random sequences with Lorenz's dt = 0.01:
  ours       BNSDEMethod.loss: bnnrepro.models.hybrid_sde's Euler-Maruyama loop on the observation grid in plain
             torch, the path KL of Lemma 1 accumulated in the loop
  torchsde   torchsde.sdeint(sde, y0, ts, method="euler", dt=0.01, logqp=True) with posterior drift
             f_theta + gamma r, prior drift gamma r and diagonal diffusion G (the same modules), then the same
             likelihood, KL and PAC loss
Settings: 2 sequences of 24 observations, S = 1 trajectory each (the study's Lorenz training), and 20 sequences
(all of Lorenz's training windows), S = 4. Forecast: 21 trajectories x 1000 steps of one start state (the 21
forecasts of Figs. 6.5-6.9) in one batched solve, without gradients, the drift's output layer shrunk to a small
residual (`quieten_output_layer`: the untrained drift diverges over 1000 steps).

Variants run in turns in one process (one repetition of each per round, the order alternating, so that a busy
machine slows all alike); the medians are reported. `gc.collect(1)` runs after every repetition, outside the timing:
each torchsde.BrownianInterval is a reference cycle. Before timing, the two solvers are checked to agree on one
Brownian path (posterior-mean weights; a step of 2^-7, exact in floating point, so that torchsde's own time stepping
lands on the grid).

Usage: python -m benchmarks.bnsde_iteration [--repeats N] [--forecast-repeats N] [--threads T]
"""

from __future__ import annotations

import argparse
import math

import torch
import torchsde
from omegaconf import OmegaConf
from torch import nn

from benchmarks.timing import Step, interleaved_medians, machine
from bnnrepro.artifacts.thesis_bnsde_costs import build_model, row_config, sequences
from bnnrepro.inference.pac_bayes import mean_log_data_term, pac_complexity
from bnnrepro.methods.bnsde import BNSDEMethod
from bnnrepro.models.bayesian_drift import DriftFunction
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.models.sequence_observation import gaussian_log_likelihood

ROW = "E-PAC-Bayes-Hybrid"
SETTINGS = {"batch 2, S=1": (2, 1), "batch 20, S=4": (20, 4)}  # (sequences, trajectories per sequence)
LENGTH, DT = 24, 0.01  # Lorenz's training windows and observation spacing
FORECAST_TRAJECTORIES, FORECAST_STEPS = 21, 1000


class TorchsdeHybrid(nn.Module):
    """The hybrid SDE of `sde` in torchsde's interface: posterior drift f = f_theta + gamma r, prior drift h = gamma r,
    diagonal G. `f_theta` is set before each solve (`BayesianDrift.draw`)."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, sde: HybridSDE):
        super().__init__()
        self.sde = sde
        self.f_theta: DriftFunction | None = None

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.f_theta(y) + self.sde.knowledge(y)

    def h(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.sde.knowledge(y)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.sde.diffusion.expand_as(y)


class GridBrownian(torchsde.BaseBrownian):
    """Given Brownian increments [K, B, C] on the grid k * dt (the agreement check's shared noise)."""

    def __init__(self, increments: torch.Tensor, dt: float):
        self.increments, self.dt = increments, dt

    def __call__(self, ta, tb=None, return_U=False, return_A=False):
        k = round(float(ta) / self.dt)
        if tb is None or round(float(tb) / self.dt) != k + 1:
            raise ValueError(f"GridBrownian gives increments over one grid step only, not [{ta}, {tb}]")
        return self.increments[k]

    def __repr__(self) -> str:
        return f"GridBrownian(steps={len(self.increments)}, dt={self.dt})"

    dtype = property(lambda self: self.increments.dtype)
    device = property(lambda self: self.increments.device)
    shape = property(lambda self: self.increments.shape[1:])
    levy_area_approximation = property(lambda self: "none")


def model(samples: int) -> BNSDEMethod:
    cfg = row_config(ROW)
    OmegaConf.update(cfg, "method.num_samples", samples)
    torch.manual_seed(0)
    return build_model(cfg, LENGTH)


def torchsde_loss(method: BNSDEMethod, wrapper: TorchsdeHybrid, x: torch.Tensor, y: torch.Tensor, num_train: int):
    """BNSDEMethod.loss's PAC objective (bnnrepro.methods.bnsde) with the solve done by torchsde.sdeint."""
    batch, samples, states = x.shape[0], method.num_samples, y.shape[-1]
    h0 = x[:, 0, :states].repeat(samples, 1)
    wrapper.f_theta = method.sde.drift.draw(len(h0), method.weight_sampling)
    path, log_ratio = torchsde.sdeint(wrapper, h0, x[0, :, -1], method="euler", dt=DT, logqp=True)
    prediction = path.unflatten(1, (samples, batch)).transpose(0, 1)
    log_likelihoods = gaussian_log_likelihood(prediction, y.transpose(0, 1), method.likelihood_variance)
    path_kl = log_ratio.sum(0).view(samples, batch)
    kl = path_kl.mean(0).sum() * (num_train / batch) + method.sde.drift.kl(method.prior_precision)
    return mean_log_data_term(log_likelihoods) + pac_complexity(kl, num_train, method.delta)


def agreement(method: BNSDEMethod, wrapper: TorchsdeHybrid, batch: int = 4, steps: int = 23) -> tuple[float, float]:
    """Max |difference| of the paths and of the path KLs of our solve and torchsde's on one Brownian path."""
    dt = 2.0**-7
    h0, noise = torch.randn(batch, 3), torch.randn(steps, batch, 3)
    with torch.no_grad():
        path, kl = method.sde.solve(h0, torch.full((steps,), dt), "mean", noise=noise)
        wrapper.f_theta = method.sde.drift.draw(batch, "mean")
        increments = torch.cat([noise, torch.zeros(steps, batch, 1)], -1) * math.sqrt(dt)  # the KL channel: g = 0
        ts = dt * torch.arange(steps + 1, dtype=torch.float32)
        ys, log_ratio = torchsde.sdeint(wrapper, h0, ts, method="euler", dt=dt, logqp=True,
                                        bm=GridBrownian(increments, dt))  # fmt: skip
    return (path - ys).abs().max().item(), (kl - log_ratio.sum(0)).abs().max().item()


def iteration_steps(batch: int, samples: int) -> dict[str, Step]:
    method = model(samples)
    wrapper = TorchsdeHybrid(method.sde)
    x, y = sequences(LENGTH, 3, batch=batch)
    num_train = 20  # the Lorenz training windows (config/train/dataset/lorenz.yaml: n_train)

    def ours() -> None:
        method.zero_grad()
        method.loss(x, y, num_train).backward()

    def plain_torchsde() -> None:
        method.zero_grad()
        torchsde_loss(method, wrapper, x, y, num_train).backward()

    return {"ours": ours, "torchsde": plain_torchsde}


def quieten_output_layer(method: BNSDEMethod, scale: float = 1e-3) -> None:
    """Shrink the drift's output layer (means by `scale`, standard deviations to `scale`**2) so that f_theta is a small
    residual, as after training: the untrained network's drift blows a 1000-step forecast up (to inf and NaN from
    step 255 of 1000, measured), and the non-finite arithmetic is slower (5.3 s against 0.38 s per forecast)."""
    last = method.sde.drift.layers[-1]
    with torch.no_grad():
        last.weight_mean.mul_(scale)
        last.bias_mean.mul_(scale)
        for log_variance in (last.weight_log_variance, last.bias_log_variance):
            log_variance.fill_(4 * math.log(scale))


def forecast_steps() -> dict[str, Step]:
    method = model(1).eval()
    quieten_output_layer(method)
    wrapper = TorchsdeHybrid(method.sde)
    x = torch.zeros(1, FORECAST_STEPS + 1, 4)
    x[0, 0, :3] = torch.tensor([1.0, 1.0, 28.0])  # the Lorenz series' start state (§6.4.2)
    x[0, :, -1] = DT * torch.arange(FORECAST_STEPS + 1)
    h0 = x[:, 0, :3].repeat(FORECAST_TRAJECTORIES, 1)

    @torch.no_grad()
    def ours() -> torch.Tensor:
        return method.forecast(x, FORECAST_TRAJECTORIES, with_kl=False)[0]

    @torch.no_grad()
    def plain_torchsde() -> torch.Tensor:
        wrapper.f_theta = method.sde.drift.draw(FORECAST_TRAJECTORIES, method.weight_sampling)
        return torchsde.sdeint(wrapper, h0, x[0, :, -1], method="euler", dt=DT)

    return {"ours": ours, "torchsde": plain_torchsde}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed iterations of each variant per setting")
    parser.add_argument("--forecast-repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}; torch {torch.__version__}, torchsde {torchsde.__version__}, "
          f"{torch.get_num_threads()} thread(s)")  # fmt: skip
    method = model(1)
    path_error, kl_error = agreement(method, TorchsdeHybrid(method.sde))
    print(f"agreement on one Brownian path (mean weights): max |path difference| {path_error:.1e}, "
          f"max |path KL difference| {kl_error:.1e}")  # fmt: skip
    print(f"\none {ROW} training iteration on Lorenz (loss + backward, {LENGTH} observations, dt = {DT}), "
          f"median of {args.repeats}, interleaved:")  # fmt: skip
    for setting, (batch, samples) in SETTINGS.items():
        medians = interleaved_medians(iteration_steps(batch, samples), args.repeats)
        ours, other = medians["ours"], medians["torchsde"]
        print(f"  {setting:<14} ours {ours * 1e3:7.2f} ms   torchsde {other * 1e3:7.2f} ms   "
              f"torchsde / ours {other / ours:5.2f}")  # fmt: skip
    forecasts = forecast_steps()
    finite = all(bool(torch.isfinite(forecast()).all()) for forecast in forecasts.values())
    medians = interleaved_medians(forecasts, args.forecast_repeats)
    ours, other = medians["ours"], medians["torchsde"]
    print(f"\nforecast: {FORECAST_TRAJECTORIES} trajectories x {FORECAST_STEPS} steps in one batched solve, no "
          f"gradients, median of {args.forecast_repeats} (forecasts finite: {finite}):")  # fmt: skip
    print(f"  ours {ours * 1e3:7.1f} ms   torchsde {other * 1e3:7.1f} ms   torchsde / ours {other / ours:5.2f}")


if __name__ == "__main__":
    main()

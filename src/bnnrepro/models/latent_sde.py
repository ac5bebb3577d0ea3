"""A 1-D latent SDE with an Ornstein-Uhlenbeck prior and a neural posterior drift (Xu et al. 2022, Figs. 3, 4).

    prior      dz = -rate z dt + sigma dB                      (SDE-BNN paper eq. 9 with a rate; the authors'
    posterior  dz = (NN_phi(z, t) - rate z) dt + sigma dB       scripts: 0.1 for Fig. 3, 0 = Brownian motion for Fig. 4)

on [t_start, t_end] from z_0 ~ N(z0_mean, z0_std^2) under both (so z_0 adds no KL). The pieces are SDE-BNN's
(bnnrepro.models.weight_sde, inference.ou_prior): the posterior drift `PosteriorDrift` around the prior's,
with u = NN_phi / sigma, and the three path-KL estimators of the SDE-BNN paper's Fig. 4 (§4):

    ckl  int 1/2 |u|^2 dt                          (Li et al. 2020)
    fmc  int 1/2 |u|^2 dt + int u(z, t, phi) dB     (App. A eq. 20, "full Monte Carlo")
    stl  int 1/2 |u|^2 dt + int u(z, t, ⊥phi) dB    (eq. 12, sticking the landing)

The dB of the martingale terms are the increments that drive z (Ito Euler-Maruyama, App. A eq. 13).
`models.weight_sde_solver.euler_maruyama` integrates SDE-BNN's augmented state over [0, 1] only and returns the
final state; a latent SDE needs another interval and the path at the observation times, hence the loop here.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.models.weight_sde import KL_ESTIMATORS, PosteriorDrift


def solver_grid(times: np.ndarray, t_start: float, t_end: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """(grid [G], index [T]): Euler-Maruyama times from t_start to t_end that contain every time of `times` [T],
    with equal steps of at most dt between consecutive required times (as the authors' `em`, which shortens
    the step that would pass an observation); grid[index] == times."""
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    if times.size and (times.min() < t_start or times.max() > t_end):
        raise ValueError(f"times in [{times.min()}, {times.max()}] leave the model's interval [{t_start}, {t_end}]")
    knots = np.unique(np.concatenate([[t_start, t_end], times]))
    pieces = [np.linspace(a, b, max(1, math.ceil((b - a) / dt - 1e-9)) + 1)[:-1] for a, b in pairwise(knots)]
    grid = np.concatenate([*pieces, [t_end]])
    return grid, np.searchsorted(grid, times)


class LatentSDE(nn.Module):
    """z_t under the posterior SDE above, and the path KL to the prior by `kl_estimator`.

    `net` is NN_phi(t, z) [S, 1] -> [S, 1] (a `DriftNet` with its last layer at zero: q = p at initialisation).
    """

    def __init__(
        self,
        prior: OrnsteinUhlenbeckPrior,
        net: nn.Module,
        *,
        t_start: float,
        t_end: float,
        dt: float,
        z0_mean: float = 0.0,
        z0_std: float = 0.0,
        kl_estimator: str = "ckl",
    ):
        super().__init__()
        if kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {kl_estimator!r}")
        if not t_end > t_start or not dt > 0:
            raise ValueError(f"need t_start < t_end and dt > 0, got [{t_start}, {t_end}] and dt={dt}")
        self.posterior = PosteriorDrift(prior, net)
        self.t_start, self.t_end, self.dt = t_start, t_end, dt
        self.z0_mean, self.z0_std, self.kl_estimator = z0_mean, z0_std, kl_estimator

    @property
    def prior(self) -> OrnsteinUhlenbeckPrior:
        return self.posterior.prior

    def grid(self, times: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(solver grid [G], index [T] of `times` in it), see `solver_grid`."""
        grid, index = solver_grid(times.detach().cpu().numpy(), self.t_start, self.t_end, self.dt)
        return torch.as_tensor(grid, dtype=times.dtype, device=times.device), torch.as_tensor(index)

    def draw_noise(self, grid: torch.Tensor, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(z_0 [S, 1] ~ N(z0_mean, z0_std^2), standard normals [G - 1, S, 1] for the Brownian increments)."""
        z0 = self.z0_mean + self.z0_std * torch.randn(num_samples, 1, dtype=grid.dtype, device=grid.device)
        return z0, torch.randn(len(grid) - 1, num_samples, 1, dtype=grid.dtype, device=grid.device)

    def forward(
        self, grid: torch.Tensor, z0: torch.Tensor, noise: torch.Tensor, kl_estimator: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(path z [G, S, 1] on `grid`, KL estimate [S]) from z_0 [S, 1] and the standard normals noise [G - 1, S, 1]:
        Ito Euler-Maruyama, dB_i = noise_i sqrt(dt_i) drives z and the KL's martingale term alike."""
        estimator = self.kl_estimator if kl_estimator is None else kl_estimator
        if estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {estimator!r}")
        z, kl, path = z0, z0.new_zeros(z0.shape[0]), [z0]
        for t, step, eps in zip(grid[:-1], grid.diff(), noise, strict=True):
            drift, u = self.posterior.drift_and_control(t, z)
            d_b = eps * step.sqrt()
            kl = kl + 0.5 * u.square().sum(-1) * step
            if estimator == "fmc":
                kl = kl + (u * d_b).sum(-1)
            elif estimator == "stl":
                kl = kl + (self.posterior.control(t, z, stop_gradient=True) * d_b).sum(-1)
            z = z + drift * step + self.prior.diffusion(t, z) * d_b
            path.append(z)
        return torch.stack(path), kl

    def sample(
        self, times: torch.Tensor, num_samples: int, kl_estimator: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(z at `times` [T, S, 1], KL [S]) for S fresh paths; times [T] in [t_start, t_end], any order."""
        grid, index = self.grid(times)
        path, kl = self(grid, *self.draw_noise(grid, num_samples), kl_estimator)
        return path[index.to(path.device)], kl

"""A latent SDE fitted to observations of a 1-D process as a training-loop method (Xu et al. 2022, Figs. 3, 4).

The model is `bnnrepro.models.latent_sde.LatentSDE`. A datum is an observation y of z at time x; the minibatch is
the whole set of observations (full batch), and the loss is the per-datum negative ELBO

    -(1/N) ( sum_n E_q log p(y_n | z_{x_n}) - kl_weight E_q KL(q || p) )

with the KL estimated by `kl_estimator` (ckl | fmc | stl, the three estimators of the SDE-BNN paper's §4 and Fig. 4)
and a Cauchy (Fig. 3) or Gaussian (Fig. 4)
likelihood. Its figures' evaluations: `bnnrepro.evaluations.latent_paths` (Fig. 3) and
`bnnrepro.evaluations.gradient_variance` (Fig. 4).
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch.func import functional_call, grad, vmap

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.latent_sde import LatentSDE
from bnnrepro.models.weight_sde import DriftNet, negative_elbo

METHODS = ("latent_sde",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("regression",)
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"classification": "a latent SDE fits observations of one path over time (SDE-BNN §4)"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""
NOT_ON_TABLES = "its inputs are the times of one path's observations (SDE-BNN §4), not a table's rows of features"
"""Why it does not train on a table (bnnrepro.pipeline.method_tasks), for the error a study that pairs them gets."""

GRADIENT_CHUNK = 250  # gradient draws vectorised at once (bounds the memory of the per-draw backward passes)


class LatentSDEMethod(LossMinimiser, FixedArchitectureMethod):
    """A `LatentSDE` with its observation likelihood, trained on the per-datum negative ELBO."""

    def __init__(self, model: LatentSDE, likelihood: RegressionLikelihood, cfg: DictConfig):
        super().__init__()
        self.model, self.likelihood = model, likelihood
        self.num_samples, self.eval_samples, self.kl_weight = cfg.num_samples, cfg.eval_samples, cfg.kl_weight
        self.gradient_samples = cfg.gradient_samples
        self.register_buffer("iterations", torch.zeros((), dtype=torch.long))  # optimiser steps taken (Fig. 4's x)
        self.last_step: dict[str, float] = {}

    def objective(self, z: torch.Tensor, kl: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """The per-datum negative ELBO from z at the observation times [N, S, 1], KLs [S] and observations [N, 1]."""
        return negative_elbo(self.likelihood(z.transpose(0, 1), y), kl, num_train, self.kl_weight)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        z, kl = self.model.sample(x[:, 0], self.num_samples)
        if self.training:
            self.iterations += 1
        self.last_step = {"kl": kl.mean().item()}
        return self.objective(z, kl, y, num_train)

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Posterior samples of z at the times x [N, 1]: [S, N, 1]."""
        return self.model.sample(x[:, 0], self.eval_samples)[0].transpose(0, 1)

    def noise_variance(self) -> float:
        """The variance of the observation likelihood's noise (inf for the Cauchy likelihood of Fig. 3)."""
        return self.likelihood.variance

    def diagnostics(self) -> dict[str, float]:
        """The KL estimate of the last training step."""
        return dict(self.last_step)

    @torch.no_grad()
    def latent_paths(self, num_times: int, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(times [T], z [T, S]): `num_samples` posterior paths of z on `num_times` times over the model's interval."""
        times = torch.linspace(self.model.t_start, self.model.t_end, num_times)
        return times, self.model.sample(times, num_samples)[0][..., 0]

    def gradient_draws(
        self, x: torch.Tensor, y: torch.Tensor, estimators: tuple[str, ...], draws: int
    ) -> dict[str, torch.Tensor]:
        """Single-path gradients of the per-datum negative ELBO w.r.t. the drift net's parameters phi, one per
        (z_0, Brownian path) draw, under each KL estimator: {estimator: [draws, P]}. Every estimator sees the same
        draws (paired comparison); the draws are vectorised with torch.func (the authors' script, xwinxu/bayeSDE
        `examples/grad_check/stl.py`, loops)."""
        grid, index = self.model.grid(x[:, 0])
        z0, noise = self.model.draw_noise(grid, draws)
        phi = {f"posterior.net.{name}": p.detach() for name, p in self.model.posterior.net.named_parameters()}

        def one_draw(
            params: dict[str, torch.Tensor], z0: torch.Tensor, noise: torch.Tensor, kl_estimator: str
        ) -> torch.Tensor:
            path, kl = functional_call(self.model, params, (grid, z0, noise, kl_estimator))
            return self.objective(path[index], kl, y, len(x))

        gradients = {}
        for kl_estimator in estimators:
            per_draw = vmap(grad(one_draw), in_dims=(None, 0, 1, None), chunk_size=GRADIENT_CHUNK)
            draws_of_phi = per_draw(phi, z0[:, None], noise[:, :, None], kl_estimator)
            gradients[kl_estimator] = torch.cat([g.flatten(1) for g in draws_of_phi.values()], dim=1)
        return gradients


def build(run_cfg: DictConfig, spec: DataSpec) -> LatentSDEMethod:
    """The latent SDE of `run_cfg.method` for observations (time x [N, 1], value y [N, 1])."""
    cfg = run_cfg.method
    if spec.task != "regression" or spec.num_features != 1:
        raise ValueError(f"a latent SDE needs observation times as its one input (regression), got {spec}")
    model = LatentSDE(
        OrnsteinUhlenbeckPrior(cfg.sigma, cfg.prior_rate),
        DriftNet(1, cfg.drift_widths, cfg.activation),
        t_start=cfg.t_start,
        t_end=cfg.t_end,
        dt=cfg.dt,
        z0_mean=cfg.z0_mean,
        z0_std=cfg.z0_std,
        kl_estimator=cfg.kl_estimator,
    )
    likelihood = RegressionLikelihood(cfg.likelihood.scale, cfg.likelihood.family, cfg.likelihood.learn_scale)
    return LatentSDEMethod(model, likelihood, cfg)

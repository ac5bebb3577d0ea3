"""HMC, the "gold standard" of repulsive deep ensembles' Figs. 1 and 3 (D'Angelo & Fortuin 2021, §4; settings not
stated in the paper):
Pyro's No-U-Turn sampler on the same network posterior the ensembles sample (bnnrepro.inference.posterior_targets).

The paper states no HMC setting and the authors' code (ratschlab/repulsive_ensembles) has none; the choices are in
config/train/method/hmc.yaml. Its training step samples: one step, on the whole training set, runs `num_chains` chains
one after another (each with its own warm-up, which adapts the step size and a diagonal mass matrix) and keeps their
draws as the method's state (the `samples` buffer, saved in the checkpoint). HMC has no trainable parameters and never
uses the optimiser; the step reports the draws' mean negative log posterior per datum. Before sampling, `samples` holds
prior draws, so the untrained method of an evaluation gives the prior predictive; each chain starts from the last
draw of its block of `samples` (a prior draw the first time; a run with more epochs continues its chains with a
fresh warm-up).
"""

from __future__ import annotations

import logging
import time

import torch
from omegaconf import DictConfig
from pyro.infer.mcmc import MCMC, NUTS

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.inference.posterior_targets import NetworkPosterior
from bnnrepro.methods.protocol import finite_loss
from bnnrepro.methods.weight_samples import WeightSamples, build_target
from bnnrepro.optim import Optimizer

METHODS = ("hmc",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("classification", "regression")
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"sampling": "a sampling dataset holds exact samples of its target already (its test split)"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""

LOG = logging.getLogger(__name__)
MIN_DRAWS = 4
"""Pyro's chain diagnostics (which count the divergent transitions) split each chain's draws into two halves of two."""


class HamiltonianMonteCarlo(WeightSamples):
    """`num_chains` NUTS chains of `num_samples` draws each after `warmup_steps` warm-up steps."""

    def __init__(
        self, target: NetworkPosterior, num_chains: int, warmup_steps: int, num_samples: int, max_tree_depth: int
    ):
        super().__init__(target)
        if num_samples < MIN_DRAWS:
            raise ValueError(f"HMC needs at least {MIN_DRAWS} draws per chain, got num_samples={num_samples}")
        self.num_chains, self.warmup_steps, self.num_samples = num_chains, warmup_steps, num_samples
        self.max_tree_depth = max_tree_depth
        self.register_buffer("samples", target.initial_particles(num_chains * num_samples))
        self.last_run: dict[str, float] = {}

    def weights(self) -> torch.Tensor:
        return self.samples

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return [{"params": [], "lr": lr}]

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """Sample the posterior given the whole training set (x, y); return the draws' mean negative log
        posterior per datum (the optimiser, which holds no parameters, is not used)."""
        if len(x) != num_train:
            raise ValueError(
                f"HMC samples the full-data posterior, got a batch of {len(x)} of {num_train} points: "
                "set train.batch_size >= the number of training points"
            )

        def potential(params: dict[str, torch.Tensor]) -> torch.Tensor:
            return -self.target.single_log_density(params["w"], x, y, num_train)

        draws, divergences, step_sizes = [], 0, []
        starts = self.samples.view(self.num_chains, self.num_samples, -1)[:, -1]
        for chain, start in enumerate(starts, 1):
            started = time.perf_counter()
            kernel = NUTS(potential_fn=potential, max_tree_depth=self.max_tree_depth)
            mcmc = MCMC(
                kernel,
                num_samples=self.num_samples,
                warmup_steps=self.warmup_steps,
                initial_params={"w": start.clone()},
                disable_progbar=True,
            )
            mcmc.run()
            draws.append(mcmc.get_samples()["w"])
            divergences += len(mcmc.diagnostics()["divergences"]["chain 0"])
            step_sizes.append(float(kernel.step_size))
            LOG.info(
                "HMC chain %d/%d: %d warm-up and %d kept draws in %.1f s (step size %.3g)", chain, self.num_chains,
                self.warmup_steps, self.num_samples, time.perf_counter() - started, step_sizes[-1],
            )  # fmt: skip
        self.samples = torch.cat(draws).to(self.samples)
        self.last_run = {
            "divergences": float(divergences),
            "mean_step_size": sum(step_sizes) / len(step_sizes),
        }
        with torch.no_grad():
            return finite_loss(-self.target.log_density(self.samples, x, y, num_train).mean() / num_train)

    def diagnostics(self) -> dict[str, float]:
        """The last sampling's divergent transitions (after warm-up) and mean adapted step size."""
        return {**self.last_run, **super().diagnostics()}


def build(run_cfg: DictConfig, spec: DataSpec, splits: Splits | None = None) -> HamiltonianMonteCarlo:
    """NUTS on the posterior of config/train/method/hmc.yaml's network (regression or classification data)."""
    cfg = run_cfg.method
    target = build_target(run_cfg, spec, splits)
    if not isinstance(target, NetworkPosterior):
        raise ValueError("hmc samples network posteriors; a sampling target's dataset holds exact samples already")
    return HamiltonianMonteCarlo(target, cfg.num_chains, cfg.warmup_steps, cfg.num_samples, cfg.max_tree_depth)

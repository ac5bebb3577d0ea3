"""Repulsive deep ensembles (D'Angelo & Fortuin 2021) as training-loop methods: n particles [n, d] of a target
(bnnrepro.inference.posterior_targets) moved by one update rule of the inference library.

Rules (config `rule`, with `estimator` kde | sge | ssge for the Wasserstein ones):
  de     eq. (2), independent MAP ascent (deep ensemble)         wgd    eqs. (13)-(17), kde/sge/ssge-WGD
  svgd   eq. (6), weight-space SVGD                              fwgd   eqs. (5), (18)-(20), kde/sge/ssge-fWGD
  fsvgd  eq. (7), function-space SVGD (on a training minibatch, §2.2)

The training step: the update w_i <- w_i + eps_t phi(w_i) of eq. (2) is not the gradient of a loss (the
repulsion is not, and neither is SVGD's kernel-averaged drive), so the step sets the particles' gradient to -phi
and takes an Adam step, as the authors' code does (ratschlab/repulsive_ensembles `methods/SVGD.py`: `W.grad = -phi;
optimizer.step()`; the paper states no step size). It reports the particles' mean negative log target (per datum for a
posterior); a non-finite direction or value stops the run (DivergedError).
"""

from __future__ import annotations

import functools

import torch
from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.errors import DivergedError
from bnnrepro.inference.posterior_targets import NetworkPosterior, SamplingTarget, Target
from bnnrepro.inference.repulsive import (
    deep_ensemble_direction,
    fsvgd_direction,
    fwgd_direction,
    svgd_direction,
    wgd_direction,
)
from bnnrepro.inference.score_estimators import ScoreEstimator, kde_score, sge_score, ssge_score
from bnnrepro.methods.protocol import finite_loss
from bnnrepro.methods.weight_samples import WeightSamples, build_target
from bnnrepro.optim import Optimizer

METHODS = ("repulsive_ensemble",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("classification", "regression", "sampling")
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""

WEIGHT_SPACE_RULES = ("de", "wgd", "svgd")
FUNCTION_SPACE_RULES = ("fwgd", "fsvgd")


def score_estimator(name: str, ridge: float, num_eigenfunctions: int | None) -> ScoreEstimator:
    """The estimator of grad log rho of the particles' own density: KDE (eq. 14), SGE (eq. 16, ridge eta) or SSGE
    (eq. 17, ridge eta and J = num_eigenfunctions eigenpairs, None for all)."""
    estimators = {
        "kde": kde_score,
        "sge": functools.partial(sge_score, ridge=ridge),
        "ssge": functools.partial(ssge_score, ridge=ridge, num_eigenfunctions=num_eigenfunctions),
    }
    if name not in estimators:
        raise ValueError(f"unknown score estimator {name!r}; known: {', '.join(estimators)}")
    return estimators[name]


class ParticleEnsemble(WeightSamples):
    """n particles of `target`, the only trainable parameter, updated by `rule` (`estimator` for wgd/fwgd)."""

    def __init__(self, target: Target, particles: torch.Tensor, rule: str, estimator: ScoreEstimator | None = None):
        super().__init__(target)
        if rule not in WEIGHT_SPACE_RULES + FUNCTION_SPACE_RULES:
            raise ValueError(f"unknown rule {rule!r}; known: {', '.join(WEIGHT_SPACE_RULES + FUNCTION_SPACE_RULES)}")
        if (estimator is None) == (rule in ("wgd", "fwgd")):
            raise ValueError(f"rule {rule!r} {'needs' if estimator is None else 'takes no'} score estimator")
        self.particles = nn.Parameter(particles)
        self.rule, self.estimator = rule, estimator

    def weights(self) -> torch.Tensor:
        return self.particles

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return [{"params": [self.particles], "lr": lr}]

    def direction(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ascent direction phi [n, d] of every particle on the batch, and the reported loss."""
        particles = self.particles.detach()
        if self.rule in FUNCTION_SPACE_RULES:
            outputs, scores, pull_back, value = self.target.function_scores(particles, x, y, num_train)
            if self.rule == "fwgd":
                return fwgd_direction(outputs, scores, pull_back, self.estimator), value
            return fsvgd_direction(outputs, scores, pull_back), value
        grads, value = self.target.weight_scores(particles, x, y, num_train)
        if self.rule == "wgd":
            return wgd_direction(particles, grads, self.estimator), value
        if self.rule == "svgd":
            return svgd_direction(particles, grads), value
        return deep_ensemble_direction(grads), value

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """The rule's update through the optimiser: particles.grad = -phi, then optimizer.step() (module docstring)."""
        direction, value = self.direction(x, y, num_train)
        if not torch.isfinite(direction).all():
            raise DivergedError(f"the update direction of rule {self.rule!r} is not finite")
        loss = finite_loss(value)
        self.particles.grad = -direction
        optimizer.step()
        return loss


def build(run_cfg: DictConfig, spec: DataSpec, splits: Splits | None = None) -> ParticleEnsemble:
    """The ensemble of config/train/method/<name>.yaml on the run's data `splits` (see weight_samples.build_target)."""
    cfg = run_cfg.method
    target = build_target(run_cfg, spec, splits, function_space=cfg.rule in FUNCTION_SPACE_RULES)
    if cfg.rule in FUNCTION_SPACE_RULES and not isinstance(target, NetworkPosterior):
        raise ValueError(f"rule {cfg.rule!r} needs a network: a sampling target has no function space")
    if cfg.member_prior_variances and cfg.rule != "de":
        raise ValueError(f"member_prior_variances (a hyper-deep ensemble) go with rule 'de', not {cfg.rule!r}")
    estimator = None
    if cfg.rule in ("wgd", "fwgd"):
        estimator = score_estimator(cfg.estimator, cfg.ridge, cfg.num_eigenfunctions)
    return ParticleEnsemble(target, initial_particles(target, cfg), cfg.rule, estimator)


def initial_particles(target: Target, cfg: DictConfig) -> torch.Tensor:
    """The particles' starting points: prior draws (`initialisation: prior`, the authors' toys) or each member's
    PyTorch initialisation (`pytorch`, their image tasks); a sampling target's are its dataset's."""
    if cfg.initialisation == "prior" or isinstance(target, SamplingTarget):
        return target.initial_particles(cfg.num_particles)
    if cfg.initialisation == "pytorch":
        return target.network_initialisations(cfg.num_particles)
    raise ValueError(f"method {cfg.name!r}: unknown initialisation {cfg.initialisation!r}; known: prior, pytorch")

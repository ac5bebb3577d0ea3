"""What an evaluation job (bnnrepro.evaluations) asks of a method beyond the training protocol
(`bnnrepro.methods.protocol`): each hook is a `typing.Protocol` that an evaluation checks with `isinstance` (never a
concrete class), so any method that defines the hook's functions takes the evaluation; `require` names the hook a
method lacks."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import nn


@runtime_checkable
class DepthPaths(Protocol):
    """A continuous-depth network's paths over depth t in [0, 1] (SDE-BNN Figs. 1, 8; workshop Figs. 1-3)."""

    def hidden_paths(self, x: torch.Tensor, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(times [T], hidden state h(t) [T, S, B, dim]) of `num_samples` posterior paths from each input of x."""
        ...

    def final_weights(self, x: torch.Tensor, num_samples: int) -> torch.Tensor | None:
        """The weights at t = 1 of `num_samples` posterior weight paths [S, d] (workshop Fig. 3), or None for a
        network whose weights do not follow an SDE."""
        ...


@runtime_checkable
class WeightSDEBlocks(Protocol):
    """A network whose weights follow SDEs, solved block by block (SDE-BNN §5.2: the solver sweep)."""

    def weight_sdes(self) -> list[nn.Module]:
        """The SDE-BNN blocks whose solver settings (`solver`) a sweep changes; [] for a network without one."""
        ...


@runtime_checkable
class ObservationForecasts(Protocol):
    """A sequence model that forecasts its observations (thesis §6.6: BNSDE on Lotka-Volterra and Lorenz)."""

    def forecast_observations(self, span: torch.Tensor, trajectories: int) -> torch.Tensor:
        """`trajectories` sample paths [trajectories, L, P] from the first state of `span` ([L, P + 1]: states, then
        time) over its time grid."""
        ...


@runtime_checkable
class LatentPaths(Protocol):
    """A latent SDE (SDE-BNN §4, Figs. 3, 4): posterior paths of z, single-path gradient draws under each KL
    estimator, the draws an evaluation takes (`gradient_samples`) and the optimiser steps taken (`iterations`)."""

    iterations: torch.Tensor
    gradient_samples: int

    def latent_paths(self, num_times: int, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(times [T], z [T, S]): `num_samples` posterior paths of z on `num_times` times over the model's interval."""
        ...

    def gradient_draws(
        self, x: torch.Tensor, y: torch.Tensor, estimators: tuple[str, ...], draws: int
    ) -> dict[str, torch.Tensor]:
        """{estimator: [draws, P]}: single-path gradients of the negative ELBO w.r.t. the posterior drift's
        parameters, the same draws under each estimator."""
        ...


@runtime_checkable
class TargetSamples(Protocol):
    """A method whose state is samples of a target (the particles of an ensemble, HMC draws; D'Angelo & Fortuin
    2021): the samples, each sample's class probabilities, and the target (its `task`, `reference` samples of a
    sampling target, `entropy_grid` of a 2-D classification)."""

    target: nn.Module

    def weights(self) -> torch.Tensor: ...

    def member_probabilities(self, x: torch.Tensor) -> torch.Tensor: ...


def require(method: object, hook: type, evaluation: str) -> None:
    """A clear error where `method` lacks `hook` (one of the protocols above), naming the evaluation and the hook."""
    if not isinstance(method, hook):
        functions = ", ".join(name for name in vars(hook) if not name.startswith("_"))
        raise ValueError(
            f"evaluation {evaluation!r} needs a method with the {hook.__name__} hook ({hook.__doc__.split(':')[0]}); "
            f"{type(method).__name__} has none: define {functions} on it (bnnrepro.methods.evaluation_hooks), or "
            f"remove the evaluation from the figures that request it for this method"
        )

"""Evaluation "forecast_paths" of a trained BNSDE (thesis ch. 6, Figs. 6.3 and 6.5-6.9): sample paths forecast from
one observed state of a split's series, with the observed series over the same span.

The series of a split is its windows in order (bnnrepro.data.dynamics: contiguous, non-overlapping windows, time
the last column of x). The settings at the run's scale (config/evaluations/forecast_paths.yaml) are keyed by the
run's dataset: the `split`, the observation index `start` of the start state, the `horizon` in Euler-Maruyama steps
(of the series' own spacing) and the number of sample paths, `trajectories`. Fig. 6.3 starts "from the true value at
t = 1" of Lotka-Volterra; Figs. 6.5-6.9 start the Lorenz forecasts at T = 10, the first test observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods.evaluation_hooks import ObservationForecasts, require

EVALUATION = "forecast_paths"


@dataclass(frozen=True)
class ForecastSetting:
    """Where and how far to forecast: `trajectories` paths of `horizon` steps from observation `start` of `split`."""

    split: str
    start: int
    horizon: int
    trajectories: int


def forecast_setting(settings: Mapping, dataset: str) -> ForecastSetting:
    """The setting of the run's dataset; an error names the datasets that have one."""
    if dataset not in settings:
        raise ValueError(
            f"evaluation {EVALUATION!r} has no setting for dataset {dataset!r} at this scale "
            f"(config/evaluations/{EVALUATION}.yaml gives {', '.join(sorted(settings)) or 'none'}): add its split, "
            "start, horizon and trajectories there"
        )
    return ForecastSetting(**settings[dataset])


def observed_series(splits: Splits, split: str) -> np.ndarray:
    """The observed series of a split, [N, P + 1] (states, then time): its windows concatenated in order."""
    windows = splits.x(split)
    series = windows.reshape(-1, windows.shape[-1])
    if len(series) > 1 and not np.all(np.diff(series[:, -1]) > 0):
        raise ValueError(
            f"the {split} windows are not one series: their times do not increase from window to window (the "
            "dynamics generators write contiguous windows; bnnrepro.data.dynamics)"
        )
    return series


def forecast_span(series: np.ndarray, setting: ForecastSetting) -> np.ndarray:
    """The observations from the start state to the end of the horizon, [horizon + 1, P + 1]; a clear error where
    the series ends earlier."""
    start, horizon = setting.start, setting.horizon
    if horizon < 1 or setting.trajectories < 1:
        raise ValueError(f"forecast_paths: horizon ({horizon}) and trajectories ({setting.trajectories}) must be ≥ 1")
    available = len(series) - 1 - start
    if not 0 <= start < len(series) or horizon > available:
        raise ValueError(
            f"forecast horizon of {horizon} steps from observation {start} of the {setting.split} series needs "
            f"{start + horizon + 1} observations, but the series has {len(series)} ({max(available, 0)} steps after "
            f"the start): lower `horizon` (or `start`) of evaluation {EVALUATION!r} in "
            f"config/evaluations/{EVALUATION}.yaml to fit, or train on windows that cover more of the series"
        )
    return series[start : start + horizon + 1]


def forecast_paths(method: ObservationForecasts, span: torch.Tensor, trajectories: int) -> torch.Tensor:
    """`trajectories` sample paths from the span's first state over its time grid, [trajectories, L, P]."""
    require(method, ObservationForecasts, EVALUATION)
    return method.forecast_observations(span, trajectories)


def evaluation_arrays(
    method: ObservationForecasts, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    """times [L], observed [L, P] and paths [trajectories, L, P] (paths[:, 0] = observed[0]), L = horizon + 1."""
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    setting = forecast_setting(inputs.settings, inputs.run_dataset["name"])
    span = torch.as_tensor(forecast_span(observed_series(splits, setting.split), setting))
    paths = forecast_paths(method, span, setting.trajectories)
    return {"times": span[:, -1].numpy(), "observed": span[:, :-1].numpy(), "paths": paths.numpy()}

"""Evaluation "toy_paths" of a 1D regression method: the data and predictive samples of the trained (posterior)
and the untrained (as initialised) method on the test grid (SDE-BNN Figs. 2, 10); for a continuous-depth network
also the hidden-state paths h(t) of a few inputs (SDE-BNN Figs. 1, 8; workshop Figs. 1, 2) and, for an SDE-BNN,
posterior weight samples at t = 1 (workshop Fig. 3)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.evaluations.predictive_samples import predictive_arrays
from bnnrepro.methods.evaluation_hooks import DepthPaths

EVALUATION = "toy_paths"
TRAJECTORY_INPUTS = 7  # initial states drawn in the trajectory figures (SDE-BNN Fig. 1)
TRAJECTORY_SAMPLES = 50  # weight paths per initial state
WEIGHT_SAMPLES = 1000  # posterior weight samples at t = 1 (workshop Fig. 3)


def continuous_depth_arrays(method: DepthPaths, splits: Splits, untrained: DepthPaths) -> dict[str, np.ndarray]:
    """The predictive arrays, the hidden paths [T, S, B, dim] (including the augmented dimensions) of
    TRAJECTORY_INPUTS inputs spread over the training range and, for an SDE-BNN, the weights at t = 1 of
    WEIGHT_SAMPLES posterior paths."""
    x_train = splits.x("train")
    starts = torch.linspace(float(x_train.min()), float(x_train.max()), TRAJECTORY_INPUTS)[:, None]
    times, paths = method.hidden_paths(starts, TRAJECTORY_SAMPLES)
    arrays = {
        **predictive_arrays(method, splits, untrained),
        "trajectory_inputs": starts[:, 0].numpy(),
        "times": times.numpy(),
        "hidden_paths": paths.numpy(),
    }
    if (weights := method.final_weights(starts, WEIGHT_SAMPLES)) is not None:
        arrays["weights_at_t1"] = weights.numpy()
    return arrays


def evaluation_arrays(method: nn.Module, name: str, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """The arrays of a continuous-depth network (`continuous_depth_arrays`) or of any other regression method
    (`predictive_arrays`). The prior predictive is the untrained model's (SDE-BNN §5, "Parameterizing the drift
    function": the posterior starts as the prior); for ODEnet, which has no prior, it is the untrained network."""
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    shape = splits.x("train").shape
    if len(shape) != 2 or shape[1] != 1:
        raise ValueError(
            f"evaluation {EVALUATION!r} draws a 1D regression on a grid of one input, but the run's inputs have "
            f"shape {tuple(shape[1:])}: use it with a 1D toy dataset (e.g. sdebnn_toy), or remove it from the figures "
            "that request it for this dataset"
        )
    if isinstance(method, DepthPaths):
        return continuous_depth_arrays(method, splits, inputs.untrained_method())
    return predictive_arrays(method, splits, inputs.untrained_method())

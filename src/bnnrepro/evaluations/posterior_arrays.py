"""Evaluation "posterior_arrays" of a method whose state is samples of a target (repulsive ensembles, HMC), for the
figures of D'Angelo & Fortuin (2021): predictive samples on the 1D grid (Fig. 1), the predictive-entropy map of the
2D classification (Fig. 3), or the particles and the target's reference samples (Figs. 2, F.1)."""

from __future__ import annotations

import numpy as np
import torch

from bnnrepro.data.classification_2d import input_grid
from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.evaluations.predictive_samples import predictive_arrays
from bnnrepro.inference.kernels import maximum_mean_discrepancy
from bnnrepro.methods.evaluation_hooks import TargetSamples, require
from bnnrepro.metrics import predictive_entropy

EVALUATION = "posterior_arrays"


def network_posterior_arrays(method: TargetSamples, splits: Splits, untrained: TargetSamples) -> dict[str, np.ndarray]:
    """Regression: the data and the predictive samples on the test grid, trained and as initialised (Fig. 1).
    Classification: the training data and the predictive entropy (nats) on an entropy_grid^2 mesh over
    [-20, 20]^2 (Fig. 3; the authors' code, ratschlab/repulsive_ensembles `exp_2d_class.py`: 300^2), as
    entropy[i, j] at (x1, x2) = (grid_axis[j], grid_axis[i])."""
    if method.target.task == "regression":
        return predictive_arrays(method, splits, untrained)
    grid = input_grid(method.target.entropy_grid)
    axis = np.unique(grid[:, 0])
    entropy = predictive_entropy(method.predict(torch.as_tensor(grid))[None])
    return {
        "x_train": splits.x("train"),
        "y_train": splits.y("train"),
        "grid_axis": axis,
        "entropy": entropy.view(len(axis), len(axis)).numpy(),
    }


def sample_arrays(method: TargetSamples, splits: Splits, untrained: TargetSamples) -> dict[str, np.ndarray]:
    """The final and initial particles, the reference samples and the final MMD (Figs. 2 and F.1)."""
    particles = method.weights().detach()
    return {
        "particles": particles.numpy(),
        "initial": untrained.weights().detach().numpy(),
        "reference": splits.x("test"),
        "mmd": np.asarray(maximum_mean_discrepancy(particles, method.target.reference)),
    }


def evaluation_arrays(
    method: TargetSamples, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    """The arrays of a sampling target's particles (`sample_arrays`) or of a network posterior's samples
    (`network_posterior_arrays`)."""
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    require(method, TargetSamples, EVALUATION)
    if method.target.task == "sampling":
        return sample_arrays(method, splits, inputs.untrained_method())
    return network_posterior_arrays(method, splits, inputs.untrained_method())

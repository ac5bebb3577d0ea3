"""Evaluation "gradient_variance" of a latent SDE (SDE-BNN Fig. 4): the variance of single-path gradient draws of
the negative ELBO w.r.t. the posterior drift's parameters under each KL estimator (SDE-BNN §4)."""

from __future__ import annotations

import numpy as np
import torch

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.evaluations.latent_paths import observation_arrays
from bnnrepro.methods.evaluation_hooks import LatentPaths, require
from bnnrepro.metrics import gradient_standard_deviation, gradient_variance
from bnnrepro.models.weight_sde import KL_ESTIMATORS

EVALUATION = "gradient_variance"


def evaluation_arrays(
    method: LatentPaths, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    """The observations, and for each KL estimator the variance (and standard deviation) over the method's
    `gradient_samples` single-path gradient draws w.r.t. phi, averaged over the parameters, and their mean, at the
    run's parameters, after `iterations` training steps."""
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    require(method, LatentPaths, EVALUATION)
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    arrays = observation_arrays(method, splits)
    draws = method.gradient_draws(x, y, KL_ESTIMATORS, method.gradient_samples)  # torch.func.grad ignores no_grad
    return {
        **arrays,
        "estimators": np.array(KL_ESTIMATORS),
        "variance": np.array([gradient_variance(draws[e]) for e in KL_ESTIMATORS]),
        "standard_deviation": np.array([gradient_standard_deviation(draws[e]) for e in KL_ESTIMATORS]),
        "mean_gradient": torch.stack([draws[e].mean(0) for e in KL_ESTIMATORS]).numpy(),
    }

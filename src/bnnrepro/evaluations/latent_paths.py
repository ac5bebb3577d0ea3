"""Evaluation "latent_paths" of a latent SDE (SDE-BNN Fig. 3): posterior sample paths of z over the model's
interval and samples of (z_t0, z_t1), with the observations they were fitted to."""

from __future__ import annotations

import numpy as np
import torch

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods.evaluation_hooks import LatentPaths, require

EVALUATION = "latent_paths"
PATH_TIMES = 121  # times on [t_start, t_end] at which z is recorded
PATH_SAMPLES = 200  # sample paths kept for Fig. 3 (left)
JOINT_SAMPLES = 4000  # samples of (z_t0, z_t1) for the joint density and marginals of Fig. 3 (right)


def observation_arrays(method: LatentPaths, splits: Splits) -> dict[str, np.ndarray]:
    """The observation times and values of the training split, and the optimiser steps the method has taken."""
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    return {
        "observation_times": x[:, 0].numpy(),
        "observations": y[:, 0].numpy(),
        "iterations": method.iterations.numpy(),
    }


def evaluation_arrays(
    method: LatentPaths, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    """The observations, and z on a grid of PATH_TIMES times over the model's interval for PATH_SAMPLES posterior
    paths, and JOINT_SAMPLES samples of (z_t0, z_t1) with t0, t1 the interval's ends (the paper names the times
    t_0, t_1 without values; the authors' two observations both sit at the end)."""
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    require(method, LatentPaths, EVALUATION)
    arrays = observation_arrays(method, splits)
    times, z = method.latent_paths(PATH_TIMES, JOINT_SAMPLES)
    return {
        **arrays,
        "times": times.numpy(),
        "paths": z[:, :PATH_SAMPLES].T.numpy(),
        "joint_times": times[[0, -1]].numpy(),
        "joint": z[[0, -1]].T.numpy(),
    }

"""Observations of a 1-D latent process z_t for the SDE-BNN paper's latent-SDE toys (Xu et al. 2022, Figs. 3, 4).

x is the observation time [N, 1] and y the observed value [N, 1] (float32). Both sets are deterministic: the
seed only names the instance. The SDE-BNN paper (Xu et al. 2022) gives neither set; both follow the authors' scripts
(`xwinxu/bayeSDE`: `examples/torch/sdebnn_toy1d.py`, `examples/grad_check/stl.py`).
"""

from __future__ import annotations

import math

import numpy as np

from bnnrepro.data.spec import Splits

# Fig. 3 (authors' code, `xwinxu/bayeSDE`, examples/torch/sdebnn_toy1d.py): two Cauchy observations, +5 and -5, of the
# terminal state z_3.
TWO_OBS_VALUES = (5.0, -5.0)
TWO_OBS_TIME = 3.0

# Fig. 4 (authors' code, `xwinxu/bayeSDE`, examples/grad_check/stl.py): the segmented cosine, y = cos(2 pi t) on two
# segments of 5 times.
GRADVAR_SEGMENTS = ((0.4, 0.6), (0.8, 1.0))
GRADVAR_PER_SEGMENT = 5


def _column(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).reshape(-1, 1)


def _empty() -> np.ndarray:
    return np.zeros((0, 1), dtype=np.float32)


def segmented_cosine(t: np.ndarray) -> np.ndarray:
    """The Fig. 4 target, cos(2 pi t)."""
    return np.cos(2.0 * math.pi * t)


def generate_two_observations(seed: int) -> Splits:
    """SDE-BNN paper Fig. 3: "an OU prior ... conditioned on two observations with Cauchy likelihoods" (values and
    times not stated). From the authors' script (`xwinxu/bayeSDE`, `examples/torch/sdebnn_toy1d.py`): the values
    +5 and -5, both observations of the state at the end of the interval [0, 3], so that the posterior of z_3 has two
    modes. There is no true process to compare with, so validation and test are empty; the figure draws the posterior
    on a grid over the model's time interval."""
    del seed  # deterministic
    values = np.asarray(TWO_OBS_VALUES)
    return Splits(
        {
            "x_train": _column(np.full_like(values, TWO_OBS_TIME)),
            "y_train": _column(values),
            "x_val": _empty(),
            "y_val": _empty(),
            "x_test": _empty(),
            "y_test": _empty(),
        }
    )


def generate_segmented_cosine(seed: int, n_test: int = 121) -> Splits:
    """SDE-BNN paper Fig. 4's toy (§4): the paper says "matching an exponentiated Brownian motion" in a "1D regression
    setting" without further detail; the authors' gradient-check script (`xwinxu/bayeSDE`,
    `examples/grad_check/stl.py`) fits the segmented cosine instead, which is what we use: t in linspace(0.4, 0.6, 5)
    u linspace(0.8, 1.0, 5), y = cos(2 pi t), noise-free (the script draws no noise; its Gaussian likelihood has std
    0.1). Validation is empty; the test split is the noise-free cosine on `n_test` evenly spaced times over [0.4, 1.0],
    the interval the script integrates over."""
    del seed  # deterministic
    t = np.concatenate([np.linspace(lo, hi, GRADVAR_PER_SEGMENT) for lo, hi in GRADVAR_SEGMENTS])
    t_test = np.linspace(GRADVAR_SEGMENTS[0][0], GRADVAR_SEGMENTS[-1][1], n_test)
    return Splits(
        {
            "x_train": _column(t),
            "y_train": _column(segmented_cosine(t)),
            "x_val": _empty(),
            "y_val": _empty(),
            "x_test": _column(t_test),
            "y_test": _column(segmented_cosine(t_test)),
        }
    )

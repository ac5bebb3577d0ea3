"""Toy 1D regression data: the SDE-BNN toy (Xu et al. 2022, Figs. 1, 2, 8, 10; workshop Figs. 1-4) and the
repulsive-ensembles toy (D'Angelo & Fortuin 2021, Fig. 1).

Inputs x and targets y are float32 [N, 1]. The test split is a dense, noise-free grid of the true function, the
grid the figures draw the predictive over (the authors' code does the same for both works: `xwinxu/bayeSDE`
`examples/jax/sdebnn_toy1d.py`, `ratschlab/repulsive_ensembles` `data/toy_regression/generete_regression.py`).
"""

from __future__ import annotations

import numpy as np

from bnnrepro.data.spec import Splits

_SDEBNN_TAG = 0x5344  # separate random streams per dataset for the same seed
_REPULSIVE_TAG = 0x5245

# SDE-BNN `cos` toy: raw inputs on [0, 2] and [6, 8], rescaled by (x - 4) / 4.
SDEBNN_CLUSTERS = ((0.0, 2.0), (6.0, 8.0))
SDEBNN_SHIFT, SDEBNN_SCALE = 4.0, 4.0

# Repulsive-ensembles toy: two blobs of training inputs, test grid on [0, 7], validation grid on [2, 6].
REPULSIVE_CLUSTERS = ((1.5, 2.5), (4.5, 6.0))


def sdebnn_true_function(x: np.ndarray) -> np.ndarray:
    """Noise-free SDE-BNN toy target at rescaled inputs x: cos(raw x) with raw x = 4 x + 4."""
    return np.cos(SDEBNN_SCALE * x + SDEBNN_SHIFT)


def repulsive_true_function(x: np.ndarray) -> np.ndarray:
    """Noise-free repulsive-ensembles toy target: x sin x."""
    return x * np.sin(x)


def _column(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).reshape(-1, 1)


def generate_sdebnn_toy(
    seed: int,
    n_train: int = 40,
    noise_std: float = 0.1,
    n_test: int = 200,
    test_low: float = -2.0,
    test_high: float = 10.0,
    val_fraction: float = 0.0,
) -> Splits:
    """The non-monotonic toy 1D regression of the SDE-BNN paper (Fig. 2, also Figs. 1, 8, 10; workshop Figs. 1-4).

    The paper does not state the dataset. Following the catalog's recommended reading, this is the authors' `cos`
    set (bayeSDE `brax/utils/datasets.py`, the set the README's toy command uses): n_train/2 evenly spaced raw
    inputs on [0, 2] and n_train/2 on [6, 8] (np.linspace, as in the code), y = cos(x_raw) + N(0, noise_std^2)
    with noise_std = 0.1, and the network sees x = (x_raw - 4) / 4, i.e. inputs in [-1, -0.5] and [0.5, 1] and
    y = cos(4 x + 4) + noise. Choices where paper and code are silent or differ:
      * the noise is drawn from `seed` (the code fixes RandomState(0));
      * test split: n_test = 200 evenly spaced points on raw [test_low, test_high] = [-2, 10] (rescaled to
        [-1.5, 1.5]), targets the noise-free cos; the code's grid is raw [-2, 8], which ends at the last training
        input, so it shows no extrapolation to the right; the catalog's CPU plan uses 200 points;
      * validation: the paper tunes on "a validation set sampled randomly from 10% of the training set" (Table 2
        caption); for the toy figures we keep all 40 points for training (val_fraction = 0, empty [0, 1] arrays).
        val_fraction > 0 holds out that random fraction of the training points.
    """
    if n_train % 2:
        raise ValueError(f"n_train={n_train} must be even (two clusters of n_train / 2 points)")
    rng = np.random.default_rng(np.random.SeedSequence([seed, _SDEBNN_TAG]))
    raw = np.concatenate([np.linspace(lo, hi, n_train // 2) for lo, hi in SDEBNN_CLUSTERS])
    y = np.cos(raw) + noise_std * rng.standard_normal(n_train)
    x = (raw - SDEBNN_SHIFT) / SDEBNN_SCALE
    is_val = np.zeros(n_train, dtype=bool)
    is_val[rng.permutation(n_train)[: int(round(val_fraction * n_train))]] = True
    x_test = (np.linspace(test_low, test_high, n_test) - SDEBNN_SHIFT) / SDEBNN_SCALE
    return Splits(
        {
            "x_train": _column(x[~is_val]),
            "y_train": _column(y[~is_val]),
            "x_val": _column(x[is_val]),
            "y_val": _column(y[is_val]),
            "x_test": _column(x_test),
            "y_test": _column(sdebnn_true_function(x_test)),
        }
    )


def generate_repulsive_toy(
    seed: int,
    n_train: int = 90,
    noise_std: float = 0.25,
    n_test: int = 100,
    test_low: float = 0.0,
    test_high: float = 7.0,
    n_val: int = 100,
    val_low: float = 2.0,
    val_high: float = 6.0,
) -> Splits:
    """The 1D regression of repulsive deep ensembles, Fig. 1 ("two clusters of training data points").

    The paper states neither function, sizes nor noise. From the authors' code (`ratschlab/repulsive_ensembles`,
    `data/toy_regression/generete_regression.py`, task_set=4, `ToyRegression`): y = x sin x + N(0, 0.25^2); 90 training
    inputs, 45 uniform on [1.5, 2.5] and 45 uniform on [4.5, 6.0]; test = 100 evenly spaced noise-free points on [0, 7]
    (the grid Fig. 1's predictive is drawn on); validation = 100 evenly spaced noise-free points on [2, 6] (created by
    the code, not used by the paper; n_val=0 gives empty [0, 1] arrays). The code seeds with data_random_seed = 42; here
    `seed`.
    """
    if n_train % len(REPULSIVE_CLUSTERS):
        raise ValueError(f"n_train={n_train} must split evenly over {len(REPULSIVE_CLUSTERS)} clusters")
    rng = np.random.default_rng(np.random.SeedSequence([seed, _REPULSIVE_TAG]))
    per_cluster = n_train // len(REPULSIVE_CLUSTERS)
    x = np.concatenate([rng.uniform(lo, hi, per_cluster) for lo, hi in REPULSIVE_CLUSTERS])
    y = repulsive_true_function(x) + noise_std * rng.standard_normal(n_train)
    x_val = np.linspace(val_low, val_high, n_val)
    x_test = np.linspace(test_low, test_high, n_test)
    return Splits(
        {
            "x_train": _column(x),
            "y_train": _column(y),
            "x_val": _column(x_val),
            "y_val": _column(repulsive_true_function(x_val)),
            "x_test": _column(x_test),
            "y_test": _column(repulsive_true_function(x_test)),
        }
    )

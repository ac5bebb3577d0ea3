"""The 2D classification task of repulsive deep ensembles (D'Angelo & Fortuin 2021, Fig. 3).

The paper only says "two-dimensional synthetic classification setting" (an "origin region" with aleatoric
uncertainty between the classes). The data, from the authors' code (`ratschlab/repulsive_ensembles`,
`experiments/exp_2d_class.py`; `generate_twod_gaussian`, `twod_gaussian`):
5 classes, each an isotropic Gaussian with standard deviation 1 centred on a circle of radius 5 at angles
pi/2 + 2 pi k / 5; 40 training and 20 test points per class. Inputs float32 [N, 2], labels int64 [N] in class-blocked
order (class 0 first), as the code stores them; training loaders shuffle.
"""

from __future__ import annotations

import numpy as np

from bnnrepro.data.spec import Splits

_TAG = 0x3243  # separate random streams per dataset for the same seed


def class_means(n_classes: int = 5, radius: float = 5.0) -> np.ndarray:
    """[n_classes, 2] means evenly spaced on a circle of `radius`, the first at angle pi/2 (code: circle_points)."""
    angles = np.pi / 2 + 2 * np.pi * np.arange(n_classes) / n_classes
    return radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def sample_classes(
    n_per_class: int, rng: np.random.Generator, n_classes: int = 5, radius: float = 5.0, std: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """n_per_class points of each class: inputs [n_classes * n_per_class, 2] float32, labels int64."""
    means = np.repeat(class_means(n_classes, radius), n_per_class, axis=0)
    x = means + std * rng.standard_normal(means.shape)
    return x.astype(np.float32), np.repeat(np.arange(n_classes, dtype=np.int64), n_per_class)


def input_grid(size: int = 300, low: float = -20.0, high: float = 20.0) -> np.ndarray:
    """[size * size, 2] float32 grid of the entropy maps: the code's (`ratschlab/repulsive_ensembles`,
    `experiments/exp_2d_class.py`) 300 x 300 mesh on [-20, 20]^2 (x1 fastest)."""
    axis = np.linspace(low, high, size)
    x1, x2 = np.meshgrid(axis, axis)
    return np.stack([x1.ravel(), x2.ravel()], axis=1).astype(np.float32)


def sample_ood(
    rng: np.random.Generator, n_center: int = 50, n_ring: int = 200, ring: tuple[float, float] = (11.0, 30.0)
) -> np.ndarray:
    """The code's (`ratschlab/repulsive_ensembles`, `experiments/exp_2d_class.py`) out-of-distribution inputs (computed
    but not reported in the paper), float32 [n_center + n_ring, 2].

    n_center points from N(0, 0.4 I) (0.4 a covariance, as torch's MultivariateNormal argument) and n_ring points
    uniform (in area) on the annulus ring[0] <= r <= ring[1].
    """
    center = np.sqrt(0.4) * rng.standard_normal((n_center, 2))
    radius = np.sqrt(rng.uniform(ring[0] ** 2, ring[1] ** 2, n_ring))
    angle = rng.uniform(-np.pi, np.pi, n_ring)
    outer = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return np.concatenate([center, outer]).astype(np.float32)


def generate(
    seed: int,
    n_classes: int = 5,
    n_train_per_class: int = 40,
    n_test_per_class: int = 20,
    n_val_per_class: int = 0,
    radius: float = 5.0,
    std: float = 1.0,
) -> Splits:
    """Train/validation/test samples of the five-Gaussians task (repulsive ensembles Fig. 3, from the code:
    `ratschlab/repulsive_ensembles`, `experiments/exp_2d_class.py`).

    Neither paper nor code has a validation set: n_val_per_class = 0 gives empty x_val [0, 2], y_val [0]; a positive
    value draws that many further points per class. The entropy-map grid and the OOD points are not splits: see
    input_grid and sample_ood. The code seeds with 42; here `seed`.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG]))
    arrays = {}
    for split, n in (("train", n_train_per_class), ("val", n_val_per_class), ("test", n_test_per_class)):
        arrays[f"x_{split}"], arrays[f"y_{split}"] = sample_classes(n, rng, n_classes, radius, std)
    return Splits(arrays)

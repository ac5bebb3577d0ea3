"""Sampling targets of repulsive deep ensembles (D'Angelo & Fortuin 2021): the single 2D Gaussian of Fig. 2 and
Neal's funnel of Fig. F.1.

The paper gives neither target's parameters (Fig. 2: "two-dimensional Gaussian distribution"; Fig. F.1: "the more
complex two-dimensional Funnel distribution [59]"). Both come from the authors' notebook `WGD_synthetic.ipynb`:
  * Gaussian: mean (-0.68, 0.80), covariance 5 [[0.22, 0.16], [0.16, 0.67]] = [[1.10, 0.80], [0.80, 3.35]];
    100 particles initialised from N((-1, 5), 0.5 I); 4000 target samples for the reference contours/marginals.
  * Funnel: p(x, v) = N(v | 0, 3^2) N(x | 0, exp(v/2)^2), i.e. v ~ N(0, 9) and x | v ~ N(0, e^v) (Neal 2003);
    coordinates ordered (x, v) as in the notebook (x on the horizontal axis, limits [-12, 12]);
    500 particles initialised from 5 N(0, I); 1000 target samples.
The log densities are the normalised ones (so also valid unnormalised log densities), torch functions of points
x [..., d], differentiable for the score. Exact samplers use numpy generators.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from bnnrepro.data.spec import Splits

GAUSSIAN_MEAN = (-0.68, 0.80)
GAUSSIAN_COV = ((1.10, 0.80), (0.80, 3.35))  # 5 * [[0.22, 0.16], [0.16, 0.67]]
GAUSSIAN_INIT_MEAN, GAUSSIAN_INIT_VAR = (-1.0, 5.0), 0.5
FUNNEL_V_STD = 3.0
FUNNEL_INIT_STD = 5.0

_GAUSSIAN_TAG = 0x4741  # separate random streams per dataset for the same seed
_FUNNEL_TAG = 0x464E
_LOG_2PI = math.log(2 * math.pi)


def gaussian_log_density(
    x: torch.Tensor, mean: Sequence[float] | torch.Tensor = GAUSSIAN_MEAN, cov=GAUSSIAN_COV
) -> torch.Tensor:
    """log N(x | mean, cov) for x [..., d]; returns [...]."""
    mean = torch.as_tensor(mean, dtype=x.dtype, device=x.device)
    cov = torch.as_tensor(cov, dtype=x.dtype, device=x.device)
    chol = torch.linalg.cholesky(cov)
    diff = (x - mean).unsqueeze(-1)
    z = torch.linalg.solve_triangular(chol, diff, upper=False)
    maha = z.squeeze(-1).pow(2).sum(-1)
    log_det = 2 * torch.log(torch.diagonal(chol)).sum()
    return -0.5 * (maha + log_det + mean.shape[-1] * _LOG_2PI)


def funnel_log_density(x: torch.Tensor, v_std: float = FUNNEL_V_STD) -> torch.Tensor:
    """Neal's funnel for x [..., d] = (x_1, ..., x_{d-1}, v): log N(v | 0, v_std^2) + sum_i log N(x_i | 0, e^v)."""
    v, rest = x[..., -1], x[..., :-1]
    log_v = -0.5 * (v / v_std) ** 2 - math.log(v_std) - 0.5 * _LOG_2PI
    log_rest = (-0.5 * rest.pow(2) * torch.exp(-v).unsqueeze(-1) - 0.5 * v.unsqueeze(-1) - 0.5 * _LOG_2PI).sum(-1)
    return log_v + log_rest


def sample_gaussian(
    n: int, rng: np.random.Generator, mean: Sequence[float] = GAUSSIAN_MEAN, cov=GAUSSIAN_COV
) -> np.ndarray:
    """n exact samples [n, d] (float64) of N(mean, cov): mean + L z with L the Cholesky factor of cov."""
    mean = np.asarray(mean, dtype=np.float64)
    chol = np.linalg.cholesky(np.asarray(cov, dtype=np.float64))
    return mean + rng.standard_normal((n, mean.shape[0])) @ chol.T


def sample_funnel(n: int, rng: np.random.Generator, dim: int = 2, v_std: float = FUNNEL_V_STD) -> np.ndarray:
    """n exact samples [n, dim] (float64) of the funnel, columns (x_1, ..., x_{dim-1}, v)."""
    v = v_std * rng.standard_normal(n)
    x = np.exp(v / 2)[:, None] * rng.standard_normal((n, dim - 1))
    return np.concatenate([x, v[:, None]], axis=1)


def _splits(particles: np.ndarray, reference: np.ndarray) -> Splits:
    d = reference.shape[1]
    arrays = {
        "x_train": particles.astype(np.float32),
        "x_val": np.empty((0, d), dtype=np.float32),
        "x_test": reference.astype(np.float32),
    }
    arrays.update({f"y{k[1:]}": np.empty((len(v), 0), dtype=np.float32) for k, v in list(arrays.items())})
    return Splits(arrays)


def generate_gaussian(seed: int, n_particles: int = 100, n_reference: int = 4000) -> Splits:
    """The Fig. 2 target: x_test = n_reference exact samples of N(GAUSSIAN_MEAN, GAUSSIAN_COV) (notebook: 4000);
    x_train = the notebook's initial particles, n_particles (100) draws of N((-1, 5), 0.5 I) (the paper states no
    initialisation), for samplers that take their start from the data file; x_val empty [0, 2]; y_* empty [n, 0].
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, _GAUSSIAN_TAG]))
    reference = sample_gaussian(n_reference, rng)
    particles = sample_gaussian(n_particles, rng, GAUSSIAN_INIT_MEAN, GAUSSIAN_INIT_VAR * np.eye(2))
    return _splits(particles, reference)


def generate_funnel(seed: int, n_particles: int = 500, n_reference: int = 1000) -> Splits:
    """The Fig. F.1 target (2D funnel, columns (x, v)): x_test = n_reference exact samples (notebook: 1000);
    x_train = the notebook's initial particles, n_particles (500) draws of 5 N(0, I); x_val empty; y_* empty [n, 0].
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, _FUNNEL_TAG]))
    reference = sample_funnel(n_reference, rng)
    particles = FUNNEL_INIT_STD * rng.standard_normal((n_particles, 2))
    return _splits(particles, reference)

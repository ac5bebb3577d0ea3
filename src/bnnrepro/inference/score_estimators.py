"""Estimators of the score grad log rho(x) of the density rho of a set of samples, from the samples alone.

WGD replaces the intractable grad log rho(x_i) of the particles' own density in eq. (13) by one of these
(repulsive-ensembles paper, D'Angelo & Fortuin 2021, §3.2, eqs. 14-17); fWGD applies them to function values and
SSGE also gives the functional prior's score (§3.3). Each maps samples [n, d] to scores [n, d], with the RBF kernel
of `kernels` and, unless `bandwidth` is given, the median-heuristic bandwidth of the samples. With
G_i = sum_j grad_{x_i} k(x_i, x_j) and the Gram matrix K,
and since sum_k grad_{x_k} k(x_k, x_j) = -G_j for a stationary kernel:

    KDE   (eq. 14)  s_i = G_i / sum_j K_ij
    SGE   (eq. 16)  s = (K + eta I)^-1 G
    SSGE  (eq. 17)  s(x) = sum_{j<=J} (u_j . G) (u_j . k(x, X)) / lambda_j^2,  (lambda_j, u_j) eigenpairs of K + eta I
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from bnnrepro.inference.kernels import Bandwidth, rbf_gram, rbf_kernel, rbf_kernel_grad_sum

ScoreEstimator = Callable[[torch.Tensor], torch.Tensor]
"""samples [n, d] -> estimated grad log rho at the samples [n, d]; bind options with functools.partial."""

STEIN_RIDGE = 0.01
"""eta of SGE (eq. 16) and SSGE: "a small constant" in the paper (§3.2); 0.01 in the authors' code
(`ratschlab/repulsive_ensembles`, `methods/WGD.py`)."""


def _gram(samples: torch.Tensor, bandwidth: Bandwidth | None) -> tuple[torch.Tensor, torch.Tensor, Bandwidth]:
    """The Gram matrix K, G_i = sum_j grad_{x_i} k(x_i, x_j) and the bandwidth used."""
    kernel, h = rbf_gram(samples, bandwidth)
    return kernel, rbf_kernel_grad_sum(samples, samples, h, kernel), h


def kde_score(samples: torch.Tensor, bandwidth: Bandwidth | None = None) -> torch.Tensor:
    """grad log of the kernel density estimate (1/n) sum_j k(x, x_j) at each sample, eq. (14) (paper §3.2)."""
    kernel, grad_sum, _ = _gram(samples, bandwidth)
    return grad_sum / kernel.sum(1, keepdim=True)


def sge_score(samples: torch.Tensor, ridge: float = STEIN_RIDGE, bandwidth: Bandwidth | None = None) -> torch.Tensor:
    """The Stein gradient estimator of Li & Turner (2018) at the samples, -(K + eta I)^-1 <grad, K>, eq. (16)."""
    kernel, grad_sum, _ = _gram(samples, bandwidth)
    identity = torch.eye(len(samples), dtype=samples.dtype, device=samples.device)
    return torch.linalg.solve(kernel + ridge * identity, grad_sum)


def ssge_score(
    samples: torch.Tensor,
    points: torch.Tensor | None = None,
    ridge: float = STEIN_RIDGE,
    num_eigenfunctions: int | None = None,
    bandwidth: Bandwidth | None = None,
) -> torch.Tensor:
    """The spectral Stein gradient estimator of Shi et al. (2018), eq. (17), at `points` [p, d] (default: the
    samples themselves): sum_j beta_j psi_j(x), with the Nystrom eigenfunctions
    psi_j(x) = sqrt(n) u_j . k(x, X) / lambda_j and beta_j = -(1/n) sum_m grad psi_j(x_m), which combine to the
    formula in the module docstring.

    The J = `num_eigenfunctions` largest eigenpairs of K + eta I are used (default: all n). The paper states neither
    J nor a ridge for SSGE (eq. 17 has none, i.e. eta = 0); the defaults are the authors' code's
    (`ratschlab/repulsive_ensembles`, `utils/SSGE_squeeze.py`). The kernel
    and its bandwidth, the samples' median heuristic unless given, are the same at the samples and at `points`
    (the authors' code recomputes the median heuristic on the distances between points and samples, a code detail).
    """
    if num_eigenfunctions is not None and not 1 <= num_eigenfunctions <= len(samples):
        raise ValueError(f"need 1 <= num_eigenfunctions <= {len(samples)} samples, got {num_eigenfunctions}")
    kernel, grad_sum, h = _gram(samples, bandwidth)
    identity = torch.eye(len(samples), dtype=samples.dtype, device=samples.device)
    eigenvalues, eigenvectors = torch.linalg.eigh(kernel + ridge * identity)  # ascending
    if num_eigenfunctions is not None:
        eigenvalues, eigenvectors = eigenvalues[-num_eigenfunctions:], eigenvectors[:, -num_eigenfunctions:]
    at_points = kernel if points is None else rbf_kernel(points, samples, h)
    return (at_points @ eigenvectors) @ ((eigenvectors.T @ grad_sum) / eigenvalues[:, None].square())

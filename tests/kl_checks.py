"""Checks shared by the tests of the path-KL estimators (Xu et al. 2022 §3, eq. 12, App. A; Fig. 4): "ckl" (the
closed-form integrand), "fmc" (full Monte Carlo) and "stl" (sticking the landing), each given as per-draw gradients
[draws, P] of the same paired draws."""

from __future__ import annotations

import torch


def assert_same_mean_gradient(gradients: dict[str, torch.Tensor], max_z_score: float) -> None:
    """The fmc and stl gradients differ from ckl's by an Ito integral of mean 0: paired over the same draws, each
    parameter's mean difference lies within `max_z_score` standard errors of 0."""
    for estimator in ("fmc", "stl"):
        difference = gradients[estimator] - gradients["ckl"]
        z_score = difference.mean(0) / (difference.std(0) / len(difference) ** 0.5)
        assert z_score.abs().max() < max_z_score, (estimator, z_score)


def assert_stl_variance_vanishes(variances: dict[str, float | torch.Tensor], max_ratio: float) -> None:
    """At q = the exact posterior the STL gradient is 0 on every path (up to the solver's error), while the ckl and
    fmc gradients keep their variance: STL's variance is below `max_ratio` times theirs."""
    assert variances["stl"] < max_ratio * min(variances["ckl"], variances["fmc"]), variances

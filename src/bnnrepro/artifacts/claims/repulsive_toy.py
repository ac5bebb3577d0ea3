"""The caption claims of the repulsive deep ensembles' toy figures (Figs. 1-3, F.1):
the checks of the paper's words on our results."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.repulsive_toy import far_field_entropy, gap_kl_to_hmc

FUNCTION_SPACE = ("fsvgd", "kde_fwgd", "sge_fwgd", "ssge_fwgd")


WEIGHT_SPACE = ("de", "svgd", "kde_wgd", "sge_wgd", "ssge_wgd")


@claim("repulsive/fig1", "The function-space methods (SVGD and WGD) approach the HMC posterior more closely.")
def function_space_closer_to_hmc(context: ArtifactContext) -> Outcome:
    """Holds when every function-space method's mean KL(HMC || method) in the gap between the clusters is below
    every weight-space method's (the deep ensemble included)."""
    require(bool(context.run_files), "evaluated run")
    kl = gap_kl_to_hmc(context)
    function, weight = ({m: kl[m] for m in group if m in kl} for group in (FUNCTION_SPACE, WEIGHT_SPACE))
    require(bool(function and weight), "HMC run with function- and weight-space ensembles")
    listed = ", ".join(f"{m} {v:.2f}" for m, v in sorted(kl.items(), key=lambda item: item[1]))
    return Outcome(max(function.values()) < min(weight.values()), f"gap KL(HMC || method): {listed}")


@claim("repulsive/fig3", "The function-space methods capture the uncertainty better than the weight-space ones.")
def function_space_uncertain_far_from_data(context: ArtifactContext) -> Outcome:
    """Holds when every function-space method's mean predictive entropy far from the data (distance >= 11) exceeds
    every weight-space method's (the published weight-space maps are uncertain only near the decision boundaries)."""
    require(bool(context.run_files), "evaluated run")
    entropy = far_field_entropy(context)
    function, weight = ([entropy[m] for m in group if m in entropy] for group in (FUNCTION_SPACE, WEIGHT_SPACE))
    require(bool(function and weight), "function- and weight-space ensembles")
    listed = ", ".join(f"{m} {v:.2f}" for m, v in sorted(entropy.items(), key=lambda item: -item[1]))
    return Outcome(min(function) > max(weight), f"far-field entropy (nats): {listed}")


def _sampler_metric(context: ArtifactContext, dataset: str, metric: str) -> pd.Series:
    rows = context.metric(metric)
    return rows[rows["dataset"] == dataset].groupby("method")["value"].mean().sort_values()


@claim("repulsive/fig2", "SGE-WGD, SSGE-WGD and SVGD fit the target almost perfectly.")
def gradient_estimators_fit_the_gaussian(context: ArtifactContext) -> Outcome:
    """Holds when SGE-WGD, SSGE-WGD and SVGD each have a smaller covariance error and MMD to the target than
    KDE-WGD (the figure's one sampler that visibly misfits)."""
    covariance, mmd = (_sampler_metric(context, "gaussian_target", m) for m in ("covariance_error", "mmd"))
    good = ("sge_wgd", "ssge_wgd", "svgd")
    require(all(m in covariance.index for m in (*good, "kde_wgd")), "run of each of SVGD and the KDE/SGE/SSGE-WGD")
    holds = all(covariance[m] < covariance["kde_wgd"] and mmd[m] < mmd["kde_wgd"] for m in good)
    return Outcome(
        holds,
        "covariance error: " + ", ".join(f"{m} {v:.3f}" for m, v in covariance.items())
        + "; MMD: " + ", ".join(f"{m} {v:.4f}" for m, v in mmd.items()),
    )  # fmt: skip


@claim("repulsive/figF.1", "SGE-WGD and SVGD also perform best (on the funnel).")
def gradient_estimators_best_on_the_funnel(context: ArtifactContext) -> Outcome:
    """Holds when SGE-WGD and SVGD have the two smallest MMDs to the funnel of the sampling methods."""
    mmd = _sampler_metric(context, "funnel_target", "mmd")
    require({"sge_wgd", "svgd"} < set(mmd.index), "run of SGE-WGD, SVGD and another sampler on the funnel")
    listed = ", ".join(f"{m} {v:.4f}" for m, v in mmd.items())
    return Outcome(set(mmd.index[:2]) == {"sge_wgd", "svgd"}, f"MMD: {listed}")

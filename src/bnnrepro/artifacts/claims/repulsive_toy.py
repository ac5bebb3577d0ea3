"""The caption claims of the repulsive deep ensembles' toy figures (Figs. 1-3, F.1):
the checks of the paper's words on our results."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, compare_many, repetitions, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.repulsive_toy import ENSEMBLES, far_entropy, gap_kl, seed_runs

FUNCTION_SPACE = ("fsvgd", "kde_fwgd", "sge_fwgd", "ssge_fwgd")


WEIGHT_SPACE = ("de", "svgd", "kde_wgd", "sge_wgd", "ssge_wgd")


def _group_pairs(values: dict[int, dict[str, float]], first: tuple[str, ...], second: tuple[str, ...]) -> list:
    """(label, first method's values over seeds, second's) for each method of `first` against each of `second`
    that ran."""
    series = pd.DataFrame(values).T  # [seed x method]
    ran = [m for m in (*first, *second) if m in series]
    return [(f"{a} vs {b}", series[a], series[b]) for a in first if a in ran for b in second if b in ran]


def _first_seed_listed(values: dict[int, dict[str, float]], reverse: bool = False) -> str:
    first = values[min(values)]
    return ", ".join(
        f"{m} {v:.2f}" for m, v in sorted(first.items(), key=lambda item: -item[1] if reverse else item[1])
    )


@claim("repulsive/fig1", "The function-space methods (SVGD and WGD) approach the HMC posterior more closely.")
def function_space_closer_to_hmc(context: ArtifactContext) -> Outcome:
    """Holds when every function-space method's mean KL(HMC || method) in the gap between the clusters is
    significantly below every weight-space method's (the deep ensemble included), paired by seed (each seed's HMC
    run is its reference); the paper's figure is one run, so one seed leaves it not resolved."""
    require(bool(context.run_files), "evaluated run")
    kl = {seed: gap_kl(runs) for seed, runs in seed_runs(context, "repulsive_toy", (*ENSEMBLES, "hmc")).items()}
    kl = {seed: values for seed, values in kl.items() if values}
    require(bool(kl), "HMC run with function- and weight-space ensembles")
    pairs = _group_pairs(kl, FUNCTION_SPACE, WEIGHT_SPACE)
    require(bool(pairs), "HMC run with function- and weight-space ensembles")
    return compare_many(pairs, "less", f"gap KL(HMC || method), seed {min(kl)}: {_first_seed_listed(kl)}")


@claim("repulsive/fig3", "The function-space methods capture the uncertainty better than the weight-space ones.")
def function_space_uncertain_far_from_data(context: ArtifactContext) -> Outcome:
    """Holds when every function-space method's mean predictive entropy far from the data (distance >= 11) is
    significantly above every weight-space method's, paired by seed (the published weight-space maps are uncertain
    only near the decision boundaries)."""
    require(bool(context.run_files), "evaluated run")
    runs = seed_runs(context, "repulsive_2d", (*ENSEMBLES, "hmc"))
    entropy = {seed: far_entropy(seed_arrays) for seed, seed_arrays in runs.items()}
    pairs = _group_pairs(entropy, FUNCTION_SPACE, WEIGHT_SPACE)
    require(bool(pairs), "function- and weight-space ensembles")
    numbers = f"far-field entropy (nats), seed {min(entropy)}: {_first_seed_listed(entropy, reverse=True)}"
    return compare_many(pairs, "greater", numbers)


def _sampler_metric(context: ArtifactContext, dataset: str, metric: str) -> pd.DataFrame:
    """[seed x sampler] values of `metric` on the sampling target `dataset`."""
    rows = context.metric(metric)
    return repetitions(rows[rows["dataset"] == dataset], "seed")


def _means(values: pd.DataFrame, digits: int) -> str:
    return ", ".join(f"{m} {v:.{digits}f}" for m, v in values.mean().sort_values().items())


@claim("repulsive/fig2", "SGE-WGD, SSGE-WGD and SVGD fit the target almost perfectly.")
def gradient_estimators_fit_the_gaussian(context: ArtifactContext) -> Outcome:
    """Holds when SGE-WGD, SSGE-WGD and SVGD each have a significantly smaller covariance error and MMD to the target
    than KDE-WGD (the figure's one sampler that visibly misfits), paired by seed."""
    covariance, mmd = (_sampler_metric(context, "gaussian_target", m) for m in ("covariance_error", "mmd"))
    good = ("sge_wgd", "ssge_wgd", "svgd")
    require(all(m in covariance.columns for m in (*good, "kde_wgd")), "run of each of SVGD and the KDE/SGE/SSGE-WGD")
    pairs = [(f"{name} {m} vs kde_wgd", values[m], values["kde_wgd"])
             for name, values in (("covariance error", covariance), ("MMD", mmd)) for m in good]  # fmt: skip
    numbers = f"covariance error: {_means(covariance, 3)}; MMD: {_means(mmd, 4)}"
    return compare_many(pairs, "less", numbers)


@claim("repulsive/figF.1", "SGE-WGD and SVGD also perform best (on the funnel).")
def gradient_estimators_best_on_the_funnel(context: ArtifactContext) -> Outcome:
    """Holds when SGE-WGD's and SVGD's MMDs to the funnel are each significantly below every other sampler's,
    paired by seed."""
    mmd = _sampler_metric(context, "funnel_target", "mmd")
    best = ("sge_wgd", "svgd")
    require(set(best) < set(mmd.columns), "run of SGE-WGD, SVGD and another sampler on the funnel")
    pairs = [(f"{m} vs {other}", mmd[m], mmd[other]) for m in best for other in mmd.columns.drop(list(best))]
    return compare_many(pairs, "less", f"MMD: {_means(mmd, 4)}")

"""The caption claims of the UDN paper's CIFAR-10 experiments (Fig. 4, Table 2, Fig. 7):
the checks of the paper's words on our results."""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from bnnrepro.artifacts.claims import Outcome, claim, compare_all, holm_note, repetitions, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.udn_images import depth_log_pmf, depth_trajectories
from bnnrepro.artifacts.verdict_rules import CONTRADICTED, NOT_RESOLVED, Decision, all_of, decided_by
from bnnrepro.inference.depth_posteriors import expected_depth


def _by_seed(context: ArtifactContext, metric: str) -> pd.DataFrame:
    """[seed x method] values of one metric."""
    return repetitions(context.metric(metric), "seed")


@claim("udn/fig4", "The UDN uses deeper truncations for cat vs dog than for deer vs car, and deeper still on CIFAR-10.")
def udn_deepens_with_task_difficulty(context: ArtifactContext) -> Outcome:
    """Holds when the final E_q[l] is significantly larger on cat vs dog than on deer vs car, and on CIFAR-10 than on
    cat vs dog, paired by seed."""
    depth = _by_seed(context, "last_expected_depth")
    order = ["udn@deer_car", "udn@cat_dog", "udn"]
    require(all(m in depth.columns for m in order), "UDN runs on both pairs and the full set")
    pairs = [(f"{deeper} vs {shallower}", depth[deeper], depth[shallower])
             for shallower, deeper in zip(order, order[1:], strict=False)]  # fmt: skip
    return compare_all(pairs, "greater")


WITHIN_POINTS = 2.0
"""'Test accuracy 99%': within this many percentage points of the text's number."""


@claim("udn/fig4", "Test accuracy 99% (deer vs car), 88% (cat vs dog), 94% (CIFAR-10).")
def udn_subset_accuracies(context: ArtifactContext) -> Outcome:
    """Each set's test accuracy against the text's number ± `WITHIN_POINTS` (equivalence: two one-sided t-tests over
    the seeds): holds when every set's is significantly inside, contradicted when one's is significantly outside."""
    accuracy = _by_seed(context, "test_accuracy") * 100
    published = {"udn@deer_car": 99.0, "udn@cat_dog": 88.0, "udn": 94.0}
    require(all(m in accuracy.columns for m in published), "UDN runs on both pairs and the full set")
    statuses = {m: _equivalent(accuracy[m].dropna(), v) for m, v in published.items()}
    listed = ", ".join(f"{m} {accuracy[m].mean():.1f}% (paper {v:.0f}%: {statuses[m].status})"
                       for m, v in published.items())  # fmt: skip
    family = all_of(list(statuses.values()))
    return Outcome.decided(family.status, listed + holm_note(family, len(statuses)))


def _equivalent(values: pd.Series, target: float) -> Decision:
    """Within `WITHIN_POINTS` of `target` (holds), outside it (contradicted), or neither shown; values without spread
    are decided by their count as the sign test would (`binomtest`: three equal seeds cannot decide)."""
    if len(values) < 2:
        return Decision(NOT_RESOLVED, math.nan, math.nan)
    if values.std(ddof=1) == 0:
        p = float(stats.binomtest(len(values), len(values), alternative="greater").pvalue)
        inside = abs(values.mean() - target) <= WITHIN_POINTS
        return decided_by(p if inside else 1.0, 1.0 if inside else p)
    low = stats.ttest_1samp(values, target - WITHIN_POINTS, alternative="greater").pvalue
    high = stats.ttest_1samp(values, target + WITHIN_POINTS, alternative="less").pvalue
    outside = min(stats.ttest_1samp(values, target - WITHIN_POINTS, alternative="less").pvalue,
                  stats.ttest_1samp(values, target + WITHIN_POINTS, alternative="greater").pvalue)  # fmt: skip
    return decided_by(float(max(low, high)), float(outside))


@claim("udn/table2", "The UDN outperforms all the other models; the best finite models have L between 10 and 20.")
def udn_best_on_cifar(context: ArtifactContext) -> Outcome:
    """Holds when the UDN's test accuracy is significantly above each finite network's, paired by seed, and the
    finite network with the highest mean has 10 <= L <= 20; contradicted when one finite network is significantly
    above the UDN or the best finite L lies outside [10, 20]."""
    accuracy = _by_seed(context, "test_accuracy")
    finite = [m for m in accuracy.columns if m.startswith("finite_")]  # full CIFAR-10, lambda_0 = 5
    require("udn" in accuracy.columns and bool(finite), "UDN run and finite network's")
    best_depth = int(accuracy[finite].mean().idxmax().removeprefix("finite_"))
    outcome = compare_all([(f"UDN vs {m}", accuracy["udn"], accuracy[m]) for m in finite], "greater")
    depth_ok = 10 <= best_depth <= 20
    status = outcome.status if depth_ok else CONTRADICTED
    return Outcome.decided(status, f"{outcome.evidence}; best finite L = {best_depth}")


@claim("udn/fig7", "From every initialisation the variational families converge to similar regions.")
def udn_initialisations_converge(context: ArtifactContext) -> Outcome:
    """Holds when the spread (max - min) of the final E_q[l] over lambda_0 is under half the initial spread."""
    trajectories = depth_trajectories(context)
    require(trajectories["lambda_0"].nunique() > 1, "second initialisation lambda_0")
    final = trajectories.sort_values("epoch").groupby("lambda_0")["expected_depth"].last()
    initial = pd.Series({rate: expected_depth(depth_log_pmf(rate)) for rate in final.index})
    final_spread, initial_spread = final.max() - final.min(), initial.max() - initial.min()
    listed = ", ".join(f"lambda_0={rate:g}: {initial[rate]:.1f} -> {final[rate]:.1f}" for rate in final.index)
    return Outcome(bool(final_spread < initial_spread / 2), f"E_q[l] start -> end: {listed}")

"""The caption claims of the UDN paper's CIFAR-10 experiments (Fig. 4, Table 2, Fig. 7):
the checks of the paper's words on our results."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.udn_images import depth_log_pmf, depth_trajectories
from bnnrepro.inference.depth_posteriors import expected_depth


def _final_expected_depth(context: ArtifactContext) -> pd.Series:
    """Mean E_q[l] at the end of training per UDN run set (Fig. 4's three, by method variant)."""
    rows = context.metric("last_expected_depth")
    return rows.groupby("method")["value"].mean()


@claim("udn/fig4", "The UDN uses deeper truncations for cat vs dog than for deer vs car, and deeper still on CIFAR-10.")
def udn_deepens_with_task_difficulty(context: ArtifactContext) -> Outcome:
    """Holds when the mean final E_q[l] increases from deer vs car to cat vs dog to full CIFAR-10."""
    depth = _final_expected_depth(context)
    order = ["udn@deer_car", "udn@cat_dog", "udn"]
    require(all(m in depth.index for m in order), "UDN runs on both pairs and the full set")
    values = [depth[m] for m in order]
    listed = ", ".join(f"{m} {v:.2f}" for m, v in zip(order, values, strict=True))
    return Outcome(bool(values[0] < values[1] < values[2]), f"mean final E_q[l]: {listed}")


@claim("udn/fig4", "Test accuracy 99% (deer vs car), 88% (cat vs dog), 94% (CIFAR-10).")
def udn_subset_accuracies(context: ArtifactContext) -> Outcome:
    """Holds when each set's mean test accuracy is within 2 points of the text's (99, 88, 94%)."""
    accuracy = context.metric("test_accuracy").groupby("method")["value"].mean() * 100
    published = {"udn@deer_car": 99.0, "udn@cat_dog": 88.0, "udn": 94.0}
    require(all(m in accuracy.index for m in published), "UDN runs on both pairs and the full set")
    listed = ", ".join(f"{m} {accuracy[m]:.1f}% (paper {v:.0f}%)" for m, v in published.items())
    return Outcome(all(abs(accuracy[m] - v) <= 2 for m, v in published.items()), listed)


@claim("udn/table2", "The UDN outperforms all the other models; the best finite models have L between 10 and 20.")
def udn_best_on_cifar(context: ArtifactContext) -> Outcome:
    """Holds when the UDN's mean test accuracy is the highest and the best finite network has 10 <= L <= 20."""
    accuracy = context.metric("test_accuracy").groupby("method")["value"].mean()
    accuracy = accuracy[(accuracy.index == "udn") | accuracy.index.str.startswith("finite_")]  # full CIFAR-10, λ0 = 5
    finite = accuracy[accuracy.index.str.startswith("finite_")]
    require("udn" in accuracy.index and len(finite) > 0, "UDN run and finite network's")
    best_depth = int(finite.idxmax().removeprefix("finite_"))
    listed = ", ".join(f"{m} {100 * v:.1f}" for m, v in accuracy.sort_values(ascending=False).items())
    holds = bool(accuracy["udn"] >= finite.max()) and 10 <= best_depth <= 20
    return Outcome(holds, f"test accuracy (%): {listed}; best finite L = {best_depth}")


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

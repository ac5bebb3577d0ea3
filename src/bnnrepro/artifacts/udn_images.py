"""Artifacts of the UDN CIFAR-10 study: Fig. 4, Table 2 and Fig. 7 (Nazaret & Blei 2022, §6.2, App. B.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure, table
from bnnrepro.inference.depth_posteriors import TruncatedPoisson, expected_depth
from bnnrepro.layout import RUN_METRICS, run_method
from bnnrepro.pipeline.studies import load_study

STUDY = "udn_images"
SUBSETS = {"udn@deer_car": "deer vs car", "udn@cat_dog": "cat vs dog", "udn": "CIFAR-10"}
"""Fig. 4's three posteriors: the easy pair, the hard pair and the full set (the UDN at lambda_0 = 5)."""
SUBSET_STYLE = {  # colour, marker, line: equal posteriors stay visible on top of each other
    "deer vs car": ("tab:blue", "o", "-"),
    "cat vs dog": ("tab:orange", "s", "--"),
    "CIFAR-10": ("tab:green", "D", ":"),
}
INITIALISATIONS = ("udn@lambda1", "udn", "udn@lambda10", "udn@lambda20")
"""Fig. 7's runs: the UDN on full CIFAR-10 from lambda_0 = 1, 5 (the paper's), 10 and 20."""


def table_row(method: str) -> str:
    """Table 2's row of a method: finite_5 -> 'ResNet-15, Ω_5' (ResNet-3L), udn -> 'UDN with ResNet'."""
    if method == "udn":
        return "UDN with ResNet"
    depth = int(method.removeprefix("finite_"))
    return f"ResNet-{3 * depth}, Ω_{depth}"


def scale_note(scale: str) -> str:
    """How the runs at this scale differ from the paper's (width 1.0, 500 epochs, 3 runs, the real CIFAR-10)."""
    study = load_study(STUDY)
    widths = study.grid_values(scale, "method.generator.width_multiplier")
    epochs, seeds = study.grid_values(scale, "train.epochs"), study.grid_values(scale, "seed")
    return (
        f"{scale} scale: width multiplier {', '.join(map(str, widths))} (paper 1.0), {', '.join(map(str, epochs))} "
        f"epochs (paper 500; the learning-rate schedule shrinks in proportion), seeds {seeds} (paper 3 runs). "
        "Test accuracy at the end of training."
    )


@torch.no_grad()
def depth_log_pmf(rate: float) -> torch.Tensor:
    """log q(l) for l = 1..m of the truncated Poisson TP(0.95) with parameter lambda = `rate` (§3.2)."""
    posterior = TruncatedPoisson(rate)
    return posterior.log_probs(posterior.max_depth())


@figure("udn/fig4", note=scale_note)
def posterior_on_subsets(context: ArtifactContext) -> Figure:
    """q(l) of each run's final lambda; the legend gives each set's mean test accuracy."""
    rates = context.metric("last_rate")
    accuracy = context.metric("test_accuracy").groupby("method")["value"].mean()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for method, label in SUBSETS.items():
        colour, marker, line = SUBSET_STYLE[label]
        runs = rates[rates["method"] == method]
        for i, rate in enumerate(runs["value"]):
            pmf = depth_log_pmf(float(rate)).exp().numpy()
            legend = f"{label} (accuracy {100 * accuracy[method]:.1f}%)" if i == 0 else None
            ax.plot(np.arange(1, len(pmf) + 1), pmf, color=colour, marker=marker, markersize=4, linestyle=line,
                    fillstyle="none", label=legend)  # fmt: skip
    ax.set(xlabel="depth ℓ (ResNet-3ℓ)", ylabel="q(ℓ)")
    ax.legend()
    fig.tight_layout()
    return fig


@table("udn/table2", note=scale_note)
def cifar_accuracy(context: ArtifactContext) -> pd.DataFrame:
    """Test accuracy at the end of training (%), mean and std over runs, of the UDN and the finite Omega_L."""
    rows = context.metric("test_accuracy")
    rows = rows[(rows["method"] == "udn") | rows["method"].str.startswith("finite_")]
    summary = rows.groupby("method")["value"].agg(["mean", "std", "count"]).mul([100, 100, 1]).reset_index()
    return pd.DataFrame({
        "row": summary["method"].map(table_row), "column": "accuracy", "ours": summary["mean"],
        "ours_error": summary["std"], "n_runs": summary["count"],
    })  # fmt: skip


def depth_trajectories(context: ArtifactContext) -> pd.DataFrame:
    """E_q[l] at each evaluation of each Fig. 7 run, with its lambda_0."""
    study, frames = load_study(STUDY), []
    for run_id, result in context.run_results().items():
        history = pd.DataFrame(result["history"])[["epoch", "expected_depth"]]
        method = run_method(run_id)
        history["lambda_0"] = float(study.variant_overrides(method)["method.depth_posterior.initial_rate"])
        frames.append(history)
    return pd.concat(frames, ignore_index=True)


@figure("udn/fig7", uses="runs", run_file=RUN_METRICS, methods=INITIALISATIONS, datasets=("cifar10",),
        note=scale_note)  # fmt: skip
def depth_during_training(context: ArtifactContext) -> Figure:
    trajectories = depth_trajectories(context)
    initial = {rate: expected_depth(depth_log_pmf(rate)) for rate in trajectories["lambda_0"].unique()}
    start = pd.DataFrame({"epoch": 0, "expected_depth": list(initial.values()), "lambda_0": list(initial)})
    trajectories = pd.concat([start, trajectories], ignore_index=True).sort_values(["lambda_0", "epoch"])
    fig, ax = plt.subplots(figsize=(6.5, 4))
    sns.lineplot(trajectories, x="epoch", y="expected_depth", hue="lambda_0", palette="viridis", marker="o",
                 markersize=3, ax=ax, legend="full")  # fmt: skip
    ax.set(xlabel="epoch", ylabel="posterior mean depth E_q[ℓ]")
    ax.legend(title="λ₀")
    fig.tight_layout()
    return fig

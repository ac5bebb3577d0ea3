"""Artifact of the UDN UCI study: Fig. 8, test RMSE and the posterior's E_q[l] (Nazaret & Blei 2022, App. B.4)."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.published_points import (
    on_categorical_axis,
    overlay_published,
    published_legend,
    published_points,
)
from bnnrepro.artifacts.registry import figure
from bnnrepro.pipeline.studies import load_study

STUDY = "udn_uci"
DATASET_ORDER = ("yacht", "boston", "energy", "concrete", "power", "wine", "naval", "kin8nm", "protein")
"""Fig. 8's order: the five sets where E_q[l] < 2, then the four where the UDN grows deeper (App. B.4)."""
UDN_COLOUR = "tab:orange"


def dataset_label(dataset: str) -> str:
    """uci_boston -> boston."""
    return dataset.removeprefix("uci_")


def model_label(method: str) -> str:
    """udn -> UDN; f2..f6 as the paper prints them."""
    return "UDN" if method == "udn" else method


def scale_note(scale: str) -> str:
    """How the runs at this scale differ from the paper's (9 sets x 10 splits, 1000 epochs)."""
    study = load_study(STUDY)
    present = {dataset_label(d) for d in study.grid_values(scale, "dataset")}
    sets = [d for d in DATASET_ORDER if d in present]
    splits, epochs = study.grid_values(scale, "dataset.split"), study.grid_values(scale, "train.epochs")
    models = ", ".join(study.grid_values(scale, "method"))
    return (
        f"{scale} scale: sets {', '.join(sets)}; splits {splits}; models {models}; "
        f"{', '.join(map(str, epochs))} epochs (the authors' code, `ANazaret/unbounded-depth-neural-networks` "
        "`experiments/supervised_uci.py`: 1000). Test RMSE in the targets' original units "
        "(the authors' code reports it on standardised targets), at the epoch with the lowest validation RMSE; "
        "error bars: the standard deviation over splits."
    )


def _selected(context: ArtifactContext, metric: str) -> pd.DataFrame:
    rows = context.metric(metric).copy()
    rows["set"] = rows["dataset"].map(dataset_label)
    rows["model"] = rows["method"].map(model_label)
    return rows


@figure("udn/fig8", note=scale_note)
def uci_rmse_and_depth(context: ArtifactContext) -> Figure:
    """Top: test RMSE per set and model (one panel per set, each in its own units); bottom: E_q[l] of the UDN, with
    the paper's bound E_q[l] < 2 on the first five sets (App. B.4; it states no RMSE)."""
    rmse = _selected(context, "test_rmse_original")
    depth = _selected(context, "expected_depth")
    depth = depth[depth["method"] == "udn"]
    sets = [d for d in DATASET_ORDER if d in set(rmse["set"])]
    models = ["UDN", *sorted(m for m in rmse["model"].unique() if m != "UDN")]
    palette = {
        m: UDN_COLOUR if m == "UDN" else c
        for m, c in zip(models, sns.color_palette("Blues_d", len(models)), strict=True)
    }
    fig = plt.figure(figsize=(max(2.2 * len(sets), 6), 6.5))
    grid = fig.add_gridspec(2, len(sets), height_ratios=(1.3, 1))
    for i, name in enumerate(sets):
        ax = fig.add_subplot(grid[0, i])
        sns.pointplot(rmse[rmse["set"] == name], x="model", y="value", hue="model", order=models, hue_order=models,
                      palette=palette, errorbar="sd", linestyle="none", legend=False, ax=ax)  # fmt: skip
        ax.set(title=name, xlabel="", ylabel="test RMSE (original units)" if i == 0 else "")
        ax.tick_params(axis="x", labelrotation=90)
    ax = fig.add_subplot(grid[1, :])
    sns.pointplot(depth, x="set", y="value", order=sets, color=UDN_COLOUR, errorbar="sd", linestyle="none", ax=ax)
    bounds = on_categorical_axis(published_points("udn/fig8"), sets)
    overlay_published(ax, bounds, published_legend("udn/fig8"))
    ax.set(xlabel="", ylabel="UDN posterior E_q[ℓ]")
    fig.tight_layout()
    return fig

"""Artifacts of the UDN spiral study (Nazaret & Blei 2022, §6.1, App. A, App. B.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.published_points import overlay_published, published_legend, published_points
from bnnrepro.artifacts.registry import figure, table
from bnnrepro.data.registry import data_path
from bnnrepro.data.spec import Splits
from bnnrepro.inference.poisson import poisson_quantile
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import load_study

STUDY = "udn_spirals"
FIG2_OMEGAS = (0, 5, 10, 20, 30)  # the omegas of Fig. 2 are not stated; a spread over [0, 30]
UDN_COLOUR = "tab:orange"  # "The UDN (orange)"


def method_label(method: str) -> str:
    """Study method names as the paper prints them: udn -> UDN, finite_3 -> Standard network Ω_3."""
    if method == "udn":
        return "UDN"
    kind, _, size = method.partition("_")
    return {"finite": f"Standard network Ω_{size}", "dun": f"DUN-{size}"}[kind]


def scale_note(scale: str) -> str:
    """How the runs at this scale differ from the paper's (5 seeds, 17 omegas, 4000 epochs)."""
    study = load_study(STUDY)
    protocol = OmegaConf.load(train_config_dir() / "protocol" / f"spirals_{scale}.yaml")
    omegas, seeds = study.grid_values(scale, "dataset.omega"), study.grid_values(scale, "seed")
    return (
        f"{scale} scale: {protocol.train.epochs} epochs (paper 4000), omega in {omegas}, seeds {seeds}, "
        f"1024 points per split, width 32, batch 256; lambda learning rate = {protocol.optim.depth_lr_ratio} x "
        "the weights' (paper 0.1). Test accuracy at the epoch with the best validation accuracy."
    )


def _accuracy_by_omega(context: ArtifactContext, lr: float) -> pd.DataFrame:
    rows = context.metric("test_accuracy")
    rows = rows[np.isclose(rows["lr"], lr)].copy()
    rows["model"] = rows["method"].map(method_label)
    rows["test accuracy"] = rows["value"]
    return rows


def _accuracy_axes(ax, rows: pd.DataFrame, title: str) -> None:
    models = sorted(rows["model"].unique(), key=lambda m: (m == "UDN", m))
    blues = sns.color_palette("Blues_d", len(models))
    palette = {m: UDN_COLOUR if m == "UDN" else c for m, c in zip(models, blues, strict=True)}
    sns.lineplot(rows, x="omega", y="test accuracy", hue="model", hue_order=models, palette=palette,
                 errorbar="sd", marker="o", ax=ax)  # fmt: skip
    ax.set(xlabel="ω", title=title)


def spiral_panel_files(scale: str) -> list[str]:
    return [data_path("spirals", {"omega": omega}, 0) for omega in FIG2_OMEGAS]


@figure(
    "udn/fig2",
    uses="data",
    data_files=spiral_panel_files,
    note="1024 training points per ω (seed 0), as in the paper; the paper does not say which ω it draws.",
)
def spiral_datasets(context: ArtifactContext) -> Figure:
    fig, axes = plt.subplots(1, len(context.data_files), figsize=(3 * len(context.data_files), 3.2))
    for ax, path, omega in zip(axes, context.data_files, FIG2_OMEGAS, strict=True):
        splits = Splits.load(path)
        x, y = splits.x("train"), splits.y("train")
        ax.scatter(x[:, 0], x[:, 1], c=np.where(y == 1, "tab:blue", "tab:red"), s=3)
        ax.set(title=f"ω = {omega}", xticks=[], yticks=[], xlim=(-1.1, 1.1), ylim=(-1.1, 1.1), aspect="equal")
    fig.tight_layout()
    return fig


@figure("udn/fig3a", note=scale_note)
def accuracy_vs_omega(context: ArtifactContext) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 4))
    _accuracy_axes(ax, _accuracy_by_omega(context, 0.005), "learning rate 0.005")
    fig.tight_layout()
    return fig


def depth_note(scale: str) -> str:
    return (
        f"{scale_note(scale)} E_q[ℓ] of the fitted posterior, i.e. at the last epoch (the paper does not say "
        "which epoch; at the validation-selected one, easy spirals stop at the initial posterior)."
    )


@figure("udn/fig3b", note=depth_note)
def depth_vs_omega(context: ArtifactContext) -> Figure:
    """Boxes of E_q[ℓ] over seeds at each ω (on ω's own scale), and the ω from which the paper's runs disagree."""
    rows = context.metric("last_expected_depth")
    rows = rows[(rows["method"] == "udn") & np.isclose(rows["lr"], 0.005)]
    fig, ax = plt.subplots(figsize=(6, 4))
    sns.boxplot(rows, x="omega", y="value", color=UDN_COLOUR, native_scale=True, ax=ax)
    overlay_published(ax, published_points("udn/fig3b"), published_legend("udn/fig3b"))
    ax.set(xlabel="ω", ylabel="posterior mean depth E_q[ℓ]")
    fig.tight_layout()
    return fig


@table("udn/table1", note=scale_note)
def average_accuracy(context: ArtifactContext) -> pd.DataFrame:
    """Per run seed: test accuracy averaged over omega; then mean and std over seeds (in %). A model run at fewer
    omegas than the paper's grid is marked partial (its average is over easier or harder spirals than Table 1's)."""
    rows = _accuracy_by_omega(context, 0.005)
    per_seed = rows.groupby(["model", "seed"])["value"].mean().mul(100).reset_index()
    summary = per_seed.groupby("model")["value"].agg(["mean", "std", "count"]).reset_index()
    omegas = rows.groupby("model")["omega"].nunique()
    paper_omegas = len(load_study(STUDY).grid_values("paper", "dataset.omega"))
    partial = [None if omegas[m] >= paper_omegas else f"{omegas[m]} of {paper_omegas} omegas" for m in summary["model"]]
    return pd.DataFrame({
        "row": summary["model"], "column": "average accuracy", "ours": summary["mean"],
        "ours_error": summary["std"], "n_runs": summary["count"], "partial": partial,
    })  # fmt: skip


def theorem_bound_gaps(max_rate: int = 70, quantile: float = 0.95) -> pd.DataFrame:
    """delta_k = (1.3 (k - 1) + 5) - m(q(k)) for k = 1..max_rate, m the 0.95-quantile of Poisson(k) (App. A)."""
    k = np.arange(1, max_rate + 1)
    m = np.array([poisson_quantile(float(rate), quantile) for rate in k])
    return pd.DataFrame({"k": k, "m": m, "delta": 1.3 * (k - 1) + 5 - m})


@figure("udn/fig5", uses="nothing", note="Exact, as in the paper (no training).")
def theorem_bound_check(context: ArtifactContext) -> Figure:
    gaps = theorem_bound_gaps()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(gaps["k"], gaps["delta"], marker="o", markersize=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set(
        xlabel="k",
        ylabel="δ_k",
        title=f"min δ_k = {gaps['delta'].min():.1f} at k = {gaps['k'][gaps['delta'].idxmin()]}",
    )
    fig.tight_layout()
    return fig


@figure("udn/fig6", note=scale_note)
def accuracy_vs_omega_two_learning_rates(context: ArtifactContext) -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, lr, panel in zip(axes, (0.005, 0.01), "ab", strict=True):
        _accuracy_axes(ax, _accuracy_by_omega(context, lr), f"({panel}) learning rate {lr}")
    fig.tight_layout()
    return fig

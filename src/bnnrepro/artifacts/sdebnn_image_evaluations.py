"""Artifacts of the SDE-BNN image study drawn from evaluations of its CIFAR-10 runs (Xu et al. 2022;
bnnrepro.evaluations.image_classification, config/evaluations/):

* Fig. 6a, 11, 12: the SDE-BNN's test metrics under other test-time solver settings ("solver_sweep");
* Fig. 6b: reliability diagrams of ODEnet and the SDE-BNN ("calibration");
* Figs. 7, 9: robustness on CIFAR-10-C of SDE-BNN, SDE-BNN + STL, ResNet32 and MFVI ResNet32 ("cifar10c").

Several seeds are pooled (reliability bins) or averaged with their standard deviation (curves, bars).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.artifacts.sdebnn_images import MODEL_LABELS, STUDY, scale_note
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.evaluations.image_classification import sweep_settings
from bnnrepro.layout import evaluation_file, run_method
from bnnrepro.metrics import corruption_errors
from bnnrepro.models.weight_sde_solver import SolverSettings
from bnnrepro.pipeline.studies import load_study

DATASETS = ("cifar10",)
SIZES = ("@cifar10", "@cifar10_tiny")  # the paper's CIFAR-10 column and the "Tiny CPU" variant of the study
SDEBNN = tuple(f"sdebnn{size}" for size in SIZES)
ODENET = tuple(f"odenet{size}" for size in SIZES)
SDEBNN_STL = tuple(f"sdebnn_stl{size}" for size in SIZES)
RESNETS = ("resnet32", "resnet32@tiny", "mfvi_resnet32", "mfvi_resnet32@tiny")
ROBUSTNESS_MODELS = ("sdebnn", "sdebnn_stl", "resnet32", "mfvi_resnet32")  # Fig. 7's methods, in legend order
PALETTE = dict(zip(ROBUSTNESS_MODELS, sns.color_palette("deep", len(ROBUSTNESS_MODELS)), strict=True))
TRAINING_COLOUR = "grey"  # SDE-BNN paper Fig. 6a: "Grey line is solver's training tolerance"


def eval_file(evaluation: str) -> str:
    """The file rule `evaluate` makes in a run folder (bnnrepro.evaluations)."""
    return evaluation_file(evaluation)


def _model(run_id: str) -> str:
    """'sdebnn@cifar10_tiny/cifar10/lr=0.0007+num_steps=4/seed=0' -> 'sdebnn'."""
    return run_method(run_id).partition("@")[0]


def _seeds(scale: str, model: str) -> list[int]:
    return sorted({run.seed for run in load_study(STUDY).runs(scale) if run.method.partition("@")[0] == model})


def _evaluated(context: ArtifactContext, model: str) -> list[dict[str, np.ndarray]]:
    """The evaluation arrays of each run (seed) of `model`, in run-id order."""
    runs = [arrays for run_id, arrays in sorted(context.run_arrays().items()) if _model(run_id) == model]
    if not runs:
        raise ValueError(f"study {context.study}: no evaluated CIFAR-10 run of {MODEL_LABELS[model]}")
    return runs


# --- notes ---------------------------------------------------------------------------------------------------


def _settings(evaluation: str, scale: str) -> dict:
    return declared_evaluation(evaluation).settings[scale]


def _training_steps(scale: str) -> int:
    runs = [run for run in load_study(STUDY).runs(scale) if run.method in SDEBNN]
    return int(dict(runs[0].hparams)["method.solver.num_steps"])


def sweep_note(scale: str) -> str:
    """How the solver sweep differs from the paper's at this scale (its settings, seeds), after the runs' note."""
    settings, steps = _settings("solver_sweep", scale), _training_steps(scale)
    solvers = sweep_settings(SolverSettings(num_steps=steps), settings["step_factors"], settings["tolerances"])
    counts = [solver.num_steps for solver in solvers if not solver.adaptive]
    return (
        f"{scale_note(scale)} Solver sweep on the test split: fixed-step Euler-Maruyama with "
        f"{', '.join(map(str, counts))} steps (training: {steps}) and adaptive step doubling at rtol = atol = "
        f"{', '.join(map(str, settings['tolerances']))} (the paper states neither); one posterior draw "
        f"(Table 2: 1 sample) with the same Brownian path at every setting; {len(_seeds(scale, 'sdebnn'))} seed(s) "
        "(paper: 3). NFE counts drift evaluations per SDE block, torchsde's one shape check per solve included."
    )


def calibration_note(scale: str) -> str:
    return (
        f"{scale_note(scale)} 10 equal-width confidence bins (the paper states no count; the authors' code "
        "(`xwinxu/bayeSDE`, `torchbnn/_impl/utils.py`) uses 10), counts pooled over seeds; one posterior draw for "
        "the SDE-BNN (Table 2: 1 sample)."
    )


def corruption_note(scale: str) -> str:
    count = _settings("cifar10c", scale)["images_per_severity"]
    seeds = len(_seeds(scale, "sdebnn"))
    data = (
        "the real CIFAR-10-C, all 10,000 images of each of the 19 corruptions x 5 severities"
        if count is None
        else "a STAND-IN for CIFAR-10-C (the 19 corruptions re-implemented at 5 severities on the stand-in's test "
        f"images, bnnrepro.data.corruptions.corrupt), the first {count} images of each corruption and severity"
    )
    return (
        f"{scale_note(scale)} Evaluated on {data}; the clean error is that of the same images uncorrupted. Errors "
        f"are not normalised by AlexNet's (none is mentioned); {seeds} seed(s) (paper: 3; bars: std over seeds)."
    )


# --- solver sweep: Figs. 6a, 11, 12 --------------------------------------------------------------------------


def sweep_frame(context: ArtifactContext) -> pd.DataFrame:
    """One row per (seed, solver setting): kind, steps, tolerance, step size, NFE, seconds, accuracy, NLL, ECE."""
    rows = []
    for seed, arrays in enumerate(_evaluated(context, "sdebnn")):
        training = int(arrays["training_num_steps"])
        for i, adaptive in enumerate(arrays["adaptive"]):
            steps = int(arrays["num_steps"][i])
            rows.append({
                "seed": seed, "setting": i, "adaptive": bool(adaptive), "num_steps": steps,
                "tolerance": float(arrays["tolerance"][i]), "step_size": 1.0 / steps, "nfe": float(arrays["nfe"][i]),
                "seconds": float(arrays["seconds"][i]), "accuracy": float(arrays["accuracy"][i]),
                "error": 100 * (1 - float(arrays["accuracy"][i])), "nll": float(arrays["nll"][i]),
                "ece": 100 * float(arrays["ece"][i]), "training": not adaptive and steps == training,
            })  # fmt: skip
    return pd.DataFrame(rows)


def _mean_and_std(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Mean and std (0 for one seed) of `y` over seeds at each setting, with the settings' mean `x`."""
    grouped = frame.groupby("setting", sort=True)
    return pd.DataFrame({"x": grouped[x].mean(), "y": grouped[y].mean(), "std": grouped[y].std().fillna(0.0)})


def _series(ax: Axes, frame: pd.DataFrame, x: str, y: str, label: str, marker: str) -> None:
    points = _mean_and_std(frame, x, y)
    ax.errorbar(points["x"], points["y"], yerr=points["std"], marker=marker, capsize=3, label=label)


def _training_line(ax: Axes, frame: pd.DataFrame, x: str) -> None:
    """The grey vertical line at the training setting."""
    ax.axvline(frame.loc[frame["training"], x].mean(), color=TRAINING_COLOUR, lw=2, alpha=0.6, label="training")


def _fixed_steps(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[~frame["adaptive"]]


def _mean_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per setting: its description and the metrics averaged over seeds."""
    grouped = frame.groupby("setting", sort=True)
    described = grouped[["adaptive", "num_steps", "tolerance"]].first()
    return described.join(grouped[["nfe", "seconds", "nll", "ece"]].mean())


def _log_axis(ax: Axes, ticks: list[float], labels: list[str], xlabel: str, ylabel: str) -> None:
    """A logarithmic x-axis with ticks only at the given values."""
    ax.set(xscale="log", xlabel=xlabel, ylabel=ylabel)
    ax.set_xticks(ticks, labels)
    ax.minorticks_off()


@figure("sdebnn/fig6a", uses="runs", run_file=eval_file("solver_sweep"), methods=SDEBNN, note=sweep_note)
def tolerance_tradeoff(context: ArtifactContext) -> Figure:
    """NLL (left) and ECE (right) against the test-time solver's cost (NFE), for fixed step counts and adaptive
    tolerances, with a grey line at the training setting."""
    frame = sweep_frame(context)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (metric, label) in zip(axes, (("nll", "test NLL"), ("ece", "test ECE (x10^-2)")), strict=True):
        _series(ax, _fixed_steps(frame), "nfe", metric, "fixed steps", "o")
        if frame["adaptive"].any():
            _series(ax, frame[frame["adaptive"]], "nfe", metric, "adaptive (rtol = atol)", "s")
        for row in _mean_rows(frame).itertuples():
            text = f"{f'tol {row.tolerance:g}' if row.adaptive else row.num_steps}: {row.seconds:.1f} s"
            ax.annotate(text, (row.nfe, getattr(row, metric)), textcoords="offset points", xytext=(4, 4), fontsize=7)
        _training_line(ax, frame, "nfe")
        ticks = sorted(_mean_rows(_fixed_steps(frame))["nfe"].unique())  # the adaptive points carry labels
        _log_axis(ax, ticks, [f"{t:g}" for t in ticks], "drift evaluations per block (NFE)", label)
    axes[0].legend(fontsize=8)
    title = "SDE-BNN, CIFAR-10 test split, test-time solver settings (labels: steps or tolerance: seconds per pass)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _step_size_axis(ax: Axes, frame: pd.DataFrame, ylabel: str) -> None:
    _training_line(ax, frame, "step_size")
    steps = sorted(_fixed_steps(frame)["num_steps"].unique())
    _log_axis(ax, [1 / n for n in steps], [f"1/{n}" for n in steps], "test-time step size", ylabel)


@figure("sdebnn/fig11", uses="runs", run_file=eval_file("solver_sweep"), methods=SDEBNN, note=sweep_note)
def step_size_calibration(context: ArtifactContext) -> Figure:
    """ECE (left) and test error (right) against the test-time step size of the fixed-step solver."""
    fixed = _fixed_steps(sweep_frame(context))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (metric, label) in zip(axes, (("ece", "test ECE (x10^-2)"), ("error", "test error (%)")), strict=True):
        _series(ax, fixed, "step_size", metric, "SDE-BNN", "o")
        _step_size_axis(ax, fixed, label)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


@figure("sdebnn/fig12", uses="runs", run_file=eval_file("solver_sweep"), methods=SDEBNN, note=sweep_note)
def step_size_generalisation(context: ArtifactContext) -> Figure:
    """(a) Test accuracy against the test-time step size; (b) the reliability diagram at each step size."""
    runs = _evaluated(context, "sdebnn")
    fixed = _fixed_steps(sweep_frame(context))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    _series(left, fixed.assign(accuracy=100 * fixed["accuracy"]), "step_size", "accuracy", "SDE-BNN", "o")
    _step_size_axis(left, fixed, "test accuracy (%)")
    left.set_title("(a) generalisation")
    settings = sorted(fixed["setting"].unique())
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(settings)))
    for setting, colour in zip(settings, colours, strict=True):
        bins = pooled_bins(runs, setting)
        steps = int(runs[0]["num_steps"][setting])
        filled = bins["counts"] > 0
        right.plot(bins["confidence"][filled], bins["accuracy"][filled], marker="o", color=colour,
                   label=f"step 1/{steps}")  # fmt: skip
    _diagonal(right)
    right.set(xlabel="confidence", ylabel="accuracy", title="(b) reliability per step size")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- reliability diagrams: Fig. 6b ---------------------------------------------------------------------------


def pooled_bins(runs: list[dict[str, np.ndarray]], setting: int | None = None) -> dict[str, np.ndarray]:
    """Reliability bins pooled over runs (seeds): summed counts, count-weighted accuracy and confidence (NaN in
    empty bins); `setting` picks one row of a solver sweep."""
    pick = (lambda a: a) if setting is None else (lambda a: a[setting])
    counts = sum(pick(r["bin_counts"]) for r in runs)
    weighted = {key: sum(np.nan_to_num(pick(r[f"bin_{key}"])) * pick(r["bin_counts"]) for r in runs)
                for key in ("accuracy", "confidence")}  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = {key: value / counts for key, value in weighted.items()}
    return {"counts": counts, **pooled, "edges": pick(runs[0]["bin_edges"])}


def _diagonal(ax: Axes) -> None:
    ax.plot([0, 1], [0, 1], ls="--", color="black", lw=1, label="perfect calibration")
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal")


def _reliability(ax: Axes, runs: list[dict[str, np.ndarray]], title: str) -> None:
    """Accuracy per confidence bin (bars), the gap to the bin's mean confidence (hatched), the diagonal."""
    bins = pooled_bins(runs)
    edges = bins["edges"]
    centres, width = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    accuracy, confidence = np.nan_to_num(bins["accuracy"]), np.nan_to_num(bins["confidence"])
    ax.bar(centres, accuracy, width, edgecolor="black", color="tab:blue", label="accuracy")
    filled = bins["counts"] > 0
    ax.bar(centres[filled], (confidence - accuracy)[filled], width[filled], bottom=accuracy[filled], color="tab:red",
           alpha=0.3, hatch="//", edgecolor="tab:red", label="gap to confidence")  # fmt: skip
    _diagonal(ax)
    overall = float((accuracy * bins["counts"]).sum() / bins["counts"].sum())
    ece = float((np.abs(accuracy - confidence) * bins["counts"]).sum() / bins["counts"].sum())
    ax.set(xlabel="confidence", ylabel="accuracy",
           title=f"{title}: accuracy {100 * overall:.1f}%, ECE {100 * ece:.2f} x10^-2")  # fmt: skip


@figure("sdebnn/fig6b", uses="runs", run_file=eval_file("calibration"), methods=ODENET + SDEBNN,
        note=calibration_note)  # fmt: skip
def reliability_diagrams(context: ArtifactContext) -> Figure:
    """Reliability diagrams on the CIFAR-10 test split: ODEnet (left), SDE-BNN (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for ax, model in zip(axes, ("odenet", "sdebnn"), strict=True):
        _reliability(ax, _evaluated(context, model), MODEL_LABELS[model])
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


# --- CIFAR-10-C: Figs. 7, 9 ----------------------------------------------------------------------------------


def corruption_frame(context: ArtifactContext) -> pd.DataFrame:
    """One row per (model, seed, severity 0-5; 0 = clean): mCE_s (%), mCE_s - clean error (%), mean ECE
    (x10^-2) and mean accuracy (%) over the 19 corruptions, and the overall CE - clean error (%)."""
    rows = []
    for model in ROBUSTNESS_MODELS:
        for seed, arrays in enumerate(_evaluated(context, model)):
            clean_error = 1 - float(arrays["clean_accuracy"])
            errors = corruption_errors(torch.as_tensor(1 - arrays["accuracy"]), clean_error)
            per_severity = {
                "mce": np.r_[clean_error, errors.mean_per_severity.numpy()],
                "relative_mce": np.r_[0.0, errors.relative_mean_per_severity.numpy()],
                "ece": np.r_[arrays["clean_ece"], arrays["ece"].mean(0)],
                "accuracy": np.r_[arrays["clean_accuracy"], arrays["accuracy"].mean(0)],
            }
            for severity in range(len(per_severity["mce"])):
                rows.append({
                    "model": MODEL_LABELS[model], "key": model, "seed": seed, "severity": severity,
                    **{key: 100 * float(values[severity]) for key, values in per_severity.items()},
                    "relative_ce": 100 * errors.relative_overall,
                })  # fmt: skip
    return pd.DataFrame(rows)


def _palette() -> dict[str, tuple]:
    return {MODEL_LABELS[model]: colour for model, colour in PALETTE.items()}


@figure("sdebnn/fig7", uses="runs", run_file=eval_file("cifar10c"), methods=SDEBNN + SDEBNN_STL + RESNETS,
        datasets=DATASETS, note=corruption_note)  # fmt: skip
def corruption_robustness(context: ArtifactContext) -> Figure:
    """Error on CIFAR-10-C relative to clean CIFAR-10 (mCE_s - E_clean) per severity and model; black bars: std
    over seeds. The legend gives each model's overall CE - E_clean (SDE-BNN paper §5.2.2)."""
    frame = corruption_frame(context)
    shifted = frame[frame["severity"] > 0].copy()
    overall = shifted.groupby("model", sort=False)["relative_ce"].mean()
    shifted["model"] = [f"{m} (CE - clean: {overall[m]:.1f}%)" for m in shifted["model"]]
    palette = {f"{m} (CE - clean: {overall[m]:.1f}%)": c for m, c in _palette().items() if m in overall}
    fig, ax = plt.subplots(figsize=(8, 4))
    sns.barplot(shifted, x="severity", y="relative_mce", hue="model", palette=palette, errorbar="sd", capsize=0.1,
                err_kws={"color": "black", "linewidth": 1}, ax=ax)  # fmt: skip
    ax.set(xlabel="corruption severity", ylabel="mCE - clean error (%)")
    ax.legend(fontsize=8, title=None)
    fig.tight_layout()
    return fig


CORRUPTION_PANELS = (  # (column, y label) of Fig. 9a-d
    ("mce", "(a) mean corruption error mCE (%)"),
    ("relative_mce", "(b) mCE - clean error (%)"),
    ("ece", "(c) mean ECE (x10^-2)"),
    ("accuracy", "(d) mean accuracy (%)"),
)


@figure("sdebnn/fig9", uses="runs", run_file=eval_file("cifar10c"), methods=SDEBNN + SDEBNN_STL + RESNETS,
        datasets=DATASETS, note=corruption_note)  # fmt: skip
def corruption_metrics(context: ArtifactContext) -> Figure:
    """Per severity (0 = clean), the mean over the 19 corruptions of (a) the error, (b) the error relative to clean,
    (c) the ECE and (d) the accuracy, per model (the paper leaves 9a-c unnamed; our reading); bands: std over
    seeds."""
    frame = corruption_frame(context)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for i, (ax, (column, label)) in enumerate(zip(axes, CORRUPTION_PANELS, strict=True)):
        # hue and style: the markers tell apart lines that coincide
        sns.lineplot(frame, x="severity", y=column, hue="model", style="model", palette=_palette(), markers=True,
                     errorbar="sd", ax=ax, legend=i == 0)  # fmt: skip
        ax.set(xlabel="severity (0 = clean)", ylabel="", title=label)
        ax.set_xticks(range(6))
    axes[0].legend(fontsize=8, title=None)
    fig.tight_layout()
    return fig

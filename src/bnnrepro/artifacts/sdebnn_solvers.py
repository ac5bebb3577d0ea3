"""Artifacts of the SDE-BNN solver study (Xu et al. 2022, Fig. 5 and App. C.8 Figs. 13-15): the
SDE-BNN's training on MNIST with backprop through the solver vs the stochastic adjoint, with fixed step counts vs
adaptive steps, and with solvers of different order. Drawn from each run's metrics.json (bnnrepro.train): its
evaluation history (training loss, test accuracy, `train_nfe` drift evaluations) and per-epoch timing (cumulative
training seconds, peak memory)."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.data.registry import parse_instance
from bnnrepro.layout import RUN_METRICS
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import load_study

STUDY = "sdebnn_solvers"
SOLVERS = {  # study method names before "@" -> solver keys
    "sdebnn_backprop": "backprop",
    "sdebnn_adjoint": "adjoint",
    "sdebnn_milstein": "milstein",
    "sdebnn_srk": "srk",
    "sdebnn_adaptive": "adaptive",
}
SOLVER_LABELS = {
    "backprop": "Euler-Maruyama, backprop",
    "adjoint": "Euler-Maruyama, adjoint",
    "milstein": "Milstein, backprop",
    "srk": "SRK (order 1.5), backprop",
    "adaptive": "adaptive, adjoint",
}
METHODS = tuple(f"{name}@{size}" for name in SOLVERS for size in ("mnist", "mnist_tiny"))  # paper / tiny sizes
PAPER_SECONDS_PER_EPOCH = {"backprop": 162.58, "adjoint": 135.90}  # App. C.8, MNIST, one RTX6000
PAPER_EPOCHS = 100  # Table 2, MNIST
CURVES = {  # column -> axis label
    "epoch": "epoch",
    "train_seconds": "training wall-clock (s)",
    "train_loss": "training loss (negative ELBO / N)",
    "test_accuracy": "test accuracy",
}
LOSS_BY_EPOCH, LOSS_BY_TIME = ("epoch", "train_loss"), ("train_seconds", "train_loss")  # (x, y) of a panel
ACCURACY_BY_EPOCH, ACCURACY_BY_TIME = ("epoch", "test_accuracy"), ("train_seconds", "test_accuracy")
NFE_BAR = ("nfe_per_epoch", "drift evaluations per training epoch")  # (per-run column, title) of a bar panel


def runs_frame(context: ArtifactContext) -> pd.DataFrame:
    """One row per evaluated epoch of each run: solver, num_steps, label, and the history's training loss, test
    accuracy and cumulative drift evaluations joined with that epoch's cumulative seconds and peak memory."""
    rows = []
    for run_id, result in context.run_results().items():
        method, _, slug, _ = run_id.split("/")
        hparams = parse_instance(slug)
        solver = SOLVERS[method.partition("@")[0]]
        timing = {record["epoch"]: record for record in result["timing"]}
        for record in result["history"]:
            epoch = record["epoch"]
            rows.append({
                "run": run_id, "solver": solver, "num_steps": int(hparams["num_steps"]),
                "tolerance": tolerances(hparams), "device": result["ran_on"]["device"], "epoch": epoch,
                "train_seconds": timing[epoch]["train_seconds"], "train_loss": record["train_loss"],
                "test_accuracy": record["test_accuracy"], "train_nfe": record["train_nfe"],
                "first_epoch_memory": result["timing"][0]["peak_memory_mib"],
            })  # fmt: skip
    if not rows:
        raise ValueError(f"study {context.study}: no run results")
    frame = pd.DataFrame(rows)
    frame["label"] = [label(*run) for run in zip(frame["solver"], frame["num_steps"], frame["tolerance"], strict=True)]
    frame["solver_rank"] = frame["solver"].map(list(SOLVER_LABELS).index)
    return frame


def tolerances(hparams: dict[str, str]) -> str:
    """'rtol = 0.01, atol = 0.01' from a run's hyperparameters ('' for fixed steps)."""
    return ", ".join(f"{key} = {hparams[key]}" for key in ("rtol", "atol") if key in hparams)


def label(solver: str, num_steps: int, tolerance: str) -> str:
    """The legend entry of a run: its solver with its step count, or with its tolerances and first step."""
    if solver == "adaptive":
        return f"{SOLVER_LABELS[solver]} ({tolerance}, dt0 = 1/{num_steps})"
    return f"{SOLVER_LABELS[solver]}, {num_steps} steps"


def paired(frame: pd.DataFrame, solvers: tuple[str, ...]) -> pd.DataFrame:
    """The runs of `solvers`, the Euler-Maruyama backprop runs only at the step counts of the other fixed-step
    solvers' runs (the reference run those are paired with; an adaptive run's step count is only its first step)."""
    rows = frame[frame["solver"].isin(solvers)]
    steps = set(rows.loc[~rows["solver"].isin(["backprop", "adaptive"]), "num_steps"])
    rows = rows[(rows["solver"] != "backprop") | rows["num_steps"].isin(steps)]
    if set(rows["solver"]) != set(solvers):
        raise ValueError(f"paired runs of {solvers} needed; the results hold {sorted(set(frame['run']))}")
    return rows


def per_run(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run (its last evaluation) with the mean seconds and drift evaluations per epoch."""
    last = frame.groupby("run", sort=False).tail(1).copy()
    last["seconds_per_epoch"] = last["train_seconds"] / last["epoch"]
    last["nfe_per_epoch"] = last["train_nfe"] / last["epoch"]
    return last


def curves(ax: Axes, frame: pd.DataFrame, x: str, y: str, palette: dict[str, tuple]) -> None:
    """`y` against `x` for each run (one line per label, markers at the evaluations)."""
    sns.lineplot(frame, x=x, y=y, hue="label", style="label", hue_order=list(palette), style_order=list(palette),
                 palette=palette, markers=True, dashes=True, estimator=None, units="run", ax=ax)  # fmt: skip
    ax.set(xlabel=CURVES[x], ylabel=CURVES[y])
    if x == "epoch":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def bars(ax: Axes, summary: pd.DataFrame, value: str, title: str, palette: dict[str, tuple]) -> None:
    """One bar per run (coloured as its curves) with its value written on it."""
    sns.barplot(summary, x="label", y=value, hue="label", order=list(palette), hue_order=list(palette),
                palette=palette, legend=False, ax=ax)  # fmt: skip
    for container in ax.containers:
        ax.bar_label(container, fmt="{:.3g}", fontsize=8)
    ax.set(xlabel="", ylabel="", xticks=[], title=title)
    ax.title.set_fontsize(9)


def panels(frame: pd.DataFrame, curve_axes: list[tuple[str, str]], bar: tuple[str, str], title: str) -> Figure:
    """One panel of curves per (x, y) of `curve_axes` and a bar panel (per-run column of `per_run`, title), the
    runs in a shared legend below."""
    labels = list(dict.fromkeys(frame.sort_values(["solver_rank", "num_steps"])["label"]))
    palette = dict(zip(labels, sns.color_palette(n_colors=len(labels)), strict=True))
    count = len(curve_axes) + 1
    rows = -(-count // 2)  # two panels a row: legible at the report's text width
    fig, grid = plt.subplots(rows, 2, figsize=(9, 3.4 * rows), layout="constrained", squeeze=False)
    axes = list(grid.flat[:count])
    for ax in grid.flat[count:]:
        ax.remove()
    for ax, (x, y) in zip(axes, curve_axes, strict=False):
        curves(ax, frame, x, y, palette)
    bars(axes[-1], per_run(frame), *bar, palette)
    handles, names = axes[0].get_legend_handles_labels()
    for ax in axes[:-1]:
        ax.get_legend().remove()
    fig.legend(handles, names, loc="outside lower center", ncol=min(len(names), 2), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig


def memory_title(frame: pd.DataFrame) -> str:
    source = "process peak RSS" if (frame["device"] == "cpu").any() else "CUDA allocator peak"
    return f"peak memory in epoch 1, MiB ({source})"


def ratio(summary: pd.DataFrame, numerator: str, denominator: str) -> float:
    seconds = summary.set_index("solver")["seconds_per_epoch"]
    return float(seconds[numerator] / seconds[denominator])


def setting_note(scale: str) -> str:
    """What the runs at `scale` share, and how that differs from the paper's MNIST runs."""
    steps = load_study(STUDY).grid_values(scale, "method.solver.num_steps")
    epochs = OmegaConf.load(train_config_dir() / "protocol" / f"mnist_{scale}.yaml").train.epochs
    note = (
        f"{scale} scale: {epochs} epoch(s) (paper {PAPER_EPOCHS}), one seed (not stated), curves at the "
        "evaluated epochs; runs paired: the same w_0, minibatches and Brownian entropy."
    )
    if scale == "paper":
        return note
    subset = OmegaConf.load(train_config_dir() / "protocol" / f"mnist_{scale}.yaml").dataset.max_examples
    return note + (
        f" Offline MNIST stand-in (scikit-learn digits at 28x28), the first {subset.train} training and "
        f"{subset.test} test images; tiny model: f_x width 8 (paper 32), f_w 1-16-1 (paper 1-64-1); step counts "
        f"{'/'.join(map(str, steps))} "
        "(paper 20). Timings on CPU, one thread per run, two runs at a time on cores shared with other jobs (noisy); "
        "numbers are not the paper's."
    )


def fig5_note(scale: str) -> str:
    return setting_note(scale) + (
        " The paper gives no axes and no memory numbers. Memory: the peak over the first epoch (before any "
        "evaluation); on CPU the process's peak resident set, which includes the interpreter, torch and the data, "
        "beside which the solver states that backprop keeps (a few MiB per step at the tiny sizes) are small."
    )


def fig13_note(scale: str) -> str:
    return setting_note(scale) + (
        f" Published (App. C.8, MNIST, RTX6000): backprop {PAPER_SECONDS_PER_EPOCH['backprop']:.2f} vs adjoint "
        f"{PAPER_SECONDS_PER_EPOCH['adjoint']:.2f} s/epoch (ratio 1.20). Ours: the mean training seconds per epoch "
        "(evaluation excluded) and the measured ratio in the title; the adjoint's reverse solve re-evaluates the "
        "drift and its vector-Jacobian products, which on CPU costs more than it saves."
    )


def fig14_note(scale: str) -> str:
    return setting_note(scale) + (
        " The paper gives neither its step counts nor its tolerance; fixed steps: Euler-Maruyama with backprop, "
        "adaptive: Milstein (Euler's iterates here, sigma being constant) with step doubling in the forward and "
        "the adjoint solve. Drift evaluations include the adjoint's reverse solve and torchsde's one shape check "
        "per solve."
    )


def fig15_note(scale: str) -> str:
    return setting_note(scale) + (
        " 'Adaptive order' is not defined in the paper; drawn: Euler-Maruyama, Milstein and torchsde's SRK (strong "
        "order 1.5) at the same fixed steps, trained by backprop (SRK has no stochastic adjoint in torchsde), and "
        "the adaptive run of Fig. 14. With the OU prior's constant sigma Milstein's correction vanishes, so its "
        "curve lies on Euler's; SRK evaluates the drift 10 times per step (torchsde's diagonal-noise scheme)."
    )


@figure("sdebnn/fig5", uses="runs", run_file=RUN_METRICS, methods=METHODS, note=fig5_note)
def backprop_vs_adjoint(context: ArtifactContext) -> Figure:
    """Training loss and test accuracy per epoch, test accuracy against wall-clock time, and peak memory, for
    backprop through the Euler-Maruyama solver vs the stochastic adjoint of the same solve (SDE-BNN paper Fig. 5)."""
    frame = paired(runs_frame(context), ("backprop", "adjoint"))
    bar = ("first_epoch_memory", memory_title(frame))
    title = "backprop through the solver vs stochastic adjoint"
    return panels(frame, [LOSS_BY_EPOCH, ACCURACY_BY_EPOCH, ACCURACY_BY_TIME], bar, title)


@figure("sdebnn/fig13", uses="runs", run_file=RUN_METRICS, methods=METHODS, note=fig13_note)
def adjoint_time_efficiency(context: ArtifactContext) -> Figure:
    """Training loss and test accuracy against wall-clock time and the mean seconds per epoch of backprop vs the
    adjoint (SDE-BNN paper Fig. 13, App. C.8), with the measured and the published time ratios."""
    frame = paired(runs_frame(context), ("backprop", "adjoint"))
    ours = ratio(per_run(frame), "backprop", "adjoint")
    backprop, adjoint = PAPER_SECONDS_PER_EPOCH["backprop"], PAPER_SECONDS_PER_EPOCH["adjoint"]
    title = (
        f"seconds per epoch, backprop / adjoint: ours {ours:.2f}; "
        f"paper {backprop / adjoint:.2f} ({backprop:.2f} / {adjoint:.2f} s, RTX6000)"
    )
    bar = ("seconds_per_epoch", "training seconds per epoch (mean)")
    return panels(frame, [LOSS_BY_TIME, ACCURACY_BY_TIME], bar, title)


@figure("sdebnn/fig14", uses="runs", run_file=RUN_METRICS, methods=METHODS, note=fig14_note)
def solver_speed_vs_convergence(context: ArtifactContext) -> Figure:
    """Training loss and test accuracy against wall-clock time for each fixed step count (Euler-Maruyama,
    backprop) and for adaptive steps with the adjoint in both passes, and the drift evaluations per epoch
    (SDE-BNN paper Fig. 14)."""
    frame = runs_frame(context)
    frame = frame[frame["solver"].isin(["backprop", "adaptive"])]
    title = "solver speed vs convergence: fixed step counts vs adaptive steps"
    return panels(frame, [LOSS_BY_TIME, ACCURACY_BY_TIME], NFE_BAR, title)


@figure("sdebnn/fig15", uses="runs", run_file=RUN_METRICS, methods=METHODS, note=fig15_note)
def solver_order(context: ArtifactContext) -> Figure:
    """Training loss per epoch and against wall-clock time, test accuracy against wall-clock time, and drift
    evaluations per epoch, for Euler-Maruyama, Milstein and SRK at one step count and adaptive steps (Fig. 15)."""
    frame = paired(runs_frame(context), ("backprop", "milstein", "srk", "adaptive"))
    title = "solver speed vs precision: solvers of different order"
    return panels(frame, [LOSS_BY_EPOCH, LOSS_BY_TIME, ACCURACY_BY_TIME], NFE_BAR, title)

"""Tables and figures of thesis chapter 4 (Haußmann 2021, "Bayesian Neural Networks for Probabilistic Machine
Learning"; Haußmann, Hamprecht & Kandemir 2019): reinforced active learning (RAL), from study `thesis_ral`.

- Table 4.1 / Fig. 4.3: Average and Final Error (%) and the test-error curves of Random, Maxent, BALD and RAL on
  MNIST, FashionMNIST and CIFAR-10 (§4.3.1), from the labelling runs (grids `labelling`, `labelling_cifar10`).
- Table 4.2 / Fig. 4.4: the FashionMNIST ablations Maxent_thinned, RAL_nograd and Reinit RAL (§4.6.1) beside the
  labelling runs' Random, Maxent and RAL.
- Fig. 4.5: the test error per epoch of the supervised Drop-BNN and CLT-BNN predictors (§4.6.2).
- Fig. 4.6: dropout against CLT-BNN uncertainties for Maxent and BALD, and RAL, at lr 1e-3 and batches of 64
  (§4.6.3): runs of their own (grid `uncertainty`), told apart from the labelling runs of the same methods by the
  learning rate and batch size.
The thesis reports the mean ± one standard deviation over five runs; ours is the sample standard deviation over the
seeds. Tables 4.3-4.5 (the networks, which need torch) are drawn by bnnrepro.artifacts.thesis_ral_architectures.
"""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure, table
from bnnrepro.artifacts.render import standard_deviation
from bnnrepro.artifacts.thesis_bedl import epochs_text, in_thesis_order, method_base, standin_note, summarised_cells
from bnnrepro.data.registry import parse_instance
from bnnrepro.layout import RUN_METRICS
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import Run, load_study

STUDY = "thesis_ral"
DATASET_LABELS = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST", "cifar10": "CIFAR-10"}
"""Data sets in the thesis' order (Table 4.1's columns, Fig. 4.3's panels top to bottom)."""
ACQUISITION_LABELS = {"random": "Random", "maxent": "Maxent", "bald": "BALD", "ral": "RAL"}
"""Study method names (before "@") -> Table 4.1's rows and Fig. 4.3's curves."""
ABLATION_LABELS = {
    "random": "Random", "maxent": "Maxent", "maxent_thinned": "Maxent_thinned", "ral_nograd": "RAL_nograd",
    "ral_reinit": "Reinit RAL", "ral": "RAL",
}  # fmt: skip
"""Study method names -> Table 4.2's rows, in its order."""
ABLATION_PANELS = {
    "(a) Maxent vs Maxent_thinned": ("maxent", "maxent_thinned"),
    "(b) RAL ablations": ("ral", "ral_nograd", "ral_reinit"),
}
"""Fig. 4.4's panels: their study methods."""
UNCERTAINTY_LABELS = {
    "drop_maxent": "Drop-BNN-Maxent", "drop_bald": "Drop-BNN-BALD", "maxent": "CLT-BNN-Maxent",
    "bald": "CLT-BNN-BALD", "ral": "RAL", "random": "Random (control)",
}  # fmt: skip
"""Study method names -> Fig. 4.6's curves, and random acquisition as the control the figure lacks."""
CONVERGENCE_LABELS = {
    "drop_bnn_ce": "Drop-BNN-CE", "drop_bnn_probit": "Drop-BNN-Prob", "clt_bnn_fix": "CLT-BNN-Fix", "clt_bnn": "CLT-BNN"
}  # fmt: skip
"""Study method names -> Fig. 4.5's curves."""
ERROR_COLUMNS = {"average_error": "average error", "final_error": "final error"}
"""Metrics of a labelling run (bnnrepro.methods.active_learning.summary) -> Tables 4.1/4.2's column names."""
SETTING_KEYS = ("optim.lr", "train.batch_size")
"""The hyperparameters that tell the labelling runs (lr 1e-4, batches of 10, §4.7) from Fig. 4.6's (lr 1e-3, batches
of 64, §4.6.3); the tidy metrics and the run ids name them by their last part (`lr`, `batch_size`)."""
SMOOTHING_WINDOW = 5
"""Rounds in the centred moving average of Fig. 4.3's curves: the thesis shows the "smoothed average" without saying
how; ours averages the per-round mean and standard deviation over 5 rounds (25 labels), fewer at the ends."""
AXIS_LABELS = {"labels": "labelled points", "epoch": "epoch"}
THESIS_PLAN = (
    "the full training sets as pools, 50 → 400 labels in rounds of 5, RAL's state the Maxent ranking thinned to "
    "every 20th point until 50 candidates, 30 epochs per round, five runs"
)
"""§4.3.1 and §4.7."""
SPREAD = "± one standard deviation over seeds, as in the thesis (none for one seed)"


def short_name(key: str) -> str:
    """'optim.lr' -> 'lr': a hyperparameter's column in the tidy metrics and its name in a run id."""
    return key.rsplit(".", 1)[-1]


def grid_setting(grid: str) -> dict[str, object]:
    """{Hydra key: value} of the learning rate and batch size of a grid's runs (SETTING_KEYS)."""
    values = load_study(STUDY).grids[grid]
    return {key: values[key][0] for key in SETTING_KEYS}


def with_setting(frame: pd.DataFrame, setting: dict[str, object]) -> pd.DataFrame:
    """The rows of `frame` (columns by short name) that have the learning rate and batch size of `setting`."""
    columns = [short_name(key) for key in setting]
    return frame[(frame[columns] == list(setting.values())).all(axis=1)]


def setting_text(setting: dict[str, object]) -> str:
    return f"lr {setting['optim.lr']:g}, batches of {setting['train.batch_size']}"


# --- notes -----------------------------------------------------------------------------------------------------------


def study_runs(scale: str, labels: dict[str, str], setting: dict[str, object] | None = None) -> list[Run]:
    """The study's runs at `scale` of the methods (before "@") in `labels`, with the hyperparameters of `setting`."""
    return [
        run
        for run in load_study(STUDY).runs(scale)
        if method_base(run.method) in labels
        and all(dict(run.hparams).get(key) == value for key, value in (setting or {}).items())
    ]


def values_text(runs: list[Run], key: str, default: float | None = None) -> str:
    """'50' or '50/100': the values of hyperparameter `key` (`default` where a run does not set it)."""
    return "/".join(f"{value:g}" for value in sorted({dict(run.hparams).get(key, default) for run in runs}))


def split_sizes(dataset: str, scale: str) -> tuple[str, str]:
    """('the first 1000', 'the first 500') or ('all', 'all'): the training and test images a run on `dataset` at
    `scale` reads, the protocol's subsets (the first images of each split)."""
    limits = OmegaConf.select(
        OmegaConf.load(train_config_dir() / "protocol" / f"{dataset}_{scale}.yaml"), "dataset.max_examples"
    )
    sizes = (None, None) if limits is None else (limits.train, limits.test)
    return tuple(f"the first {size}" if size else "all" for size in sizes)


def seeds_text(runs: list[Run]) -> str:
    seeds = sorted({run.seed for run in runs})
    return f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} {seeds}"


def labelling_note(scale: str, runs: list[Run]) -> str:
    """Data sets, pools and test sets, labels, epochs per round, training setting, seeds and CIFAR-10 width of
    labelling runs, against the thesis' plan (§4.3.1, §4.7)."""
    if not runs:
        return f"{scale} scale: no runs."
    defaults = OmegaConf.load(train_config_dir() / "method" / "active_learning.yaml")
    datasets = [name for name in DATASET_LABELS if name in {run.dataset for run in runs}]
    pools = "; ".join(
        "{}: a pool of {} training images, tested on {} test images".format(
            DATASET_LABELS[name], *split_sizes(name, scale)
        )
        for name in datasets
    )
    names = ", ".join(DATASET_LABELS[name] for name in datasets)
    cifar = [run for run in runs if run.dataset == "cifar10"]
    width = (
        f"; the CIFAR-10 predictor at width multiplier {values_text(cifar, 'method.width_multiplier', 1.0)} of "
        "Table 4.4's 192 channels and 1000 units"
        if cifar
        else ""
    )
    return (
        f"{scale} scale. {pools}; labels {values_text(runs, 'method.initial_labels', defaults.initial_labels)} → "
        f"{values_text(runs, 'method.budget')} in rounds of {defaults.labels_per_round}, RAL's state the Maxent "
        f"ranking thinned to every {values_text(runs, 'method.thinning', defaults.thinning)}th point until "
        f"{values_text(runs, 'method.candidates', defaults.candidates)} candidates, "
        f"{epochs_text(dict(run.hparams)['train.epochs'] for run in runs)} per round, "
        f"batches of {values_text(runs, 'train.batch_size')}, Adam lr {values_text(runs, 'optim.lr')} decayed "
        f"linearly over the rounds, {seeds_text(runs)}{width} (thesis: {THESIS_PLAN}). Test error of the argmax of the "
        f"predictive; {SPREAD}." + standin_note(scale, f"the {names} images")
    )


def table41_note(scale: str) -> str:
    return labelling_note(scale, study_runs(scale, ACQUISITION_LABELS, grid_setting("labelling"))) + (
        " Average Error: the mean test error over every round, from the initial labels to the budget (§4.3's "
        "'average over the whole labeling process'); Final Error: at the budget."
    )


def table42_note(scale: str) -> str:
    runs = study_runs(scale, ABLATION_LABELS, grid_setting("labelling"))
    return labelling_note(scale, [run for run in runs if run.dataset == "fashion_mnist"]) + (
        " The Random, Maxent and RAL rows are Table 4.1's FashionMNIST runs (the thesis prints the same numbers); "
        "Maxent_thinned, RAL_nograd and Reinit RAL are the ablation runs (§4.6.1)."
    )


def fig43_note(scale: str) -> str:
    return labelling_note(scale, study_runs(scale, ACQUISITION_LABELS, grid_setting("labelling"))) + (
        f" Curves: the per-round mean and std over seeds, both smoothed by a centred moving average over "
        f"{SMOOTHING_WINDOW} rounds (fewer at the ends; the thesis' smoothing is not stated)."
    )


def fig44_note(scale: str) -> str:
    runs = study_runs(scale, ABLATION_LABELS, grid_setting("labelling"))
    return labelling_note(scale, [run for run in runs if run.dataset == "fashion_mnist"]) + (
        " Curves: the per-round mean ± std over seeds, unsmoothed; a method without runs at this scale is missing."
    )


def fig46_note(scale: str) -> str:
    setting = grid_setting("uncertainty")
    return labelling_note(scale, study_runs(scale, UNCERTAINTY_LABELS, setting)) + (
        f" The runs of this figure only ({setting_text(setting)}, §4.6.3), not Table 4.1's; Drop-BNN: binary "
        "dropout p = 0.5 with 12 masks for Maxent and BALD; Random (control) is not in the thesis' figure. Curves: "
        "the per-round mean ± std over seeds, unsmoothed; a method without runs at this scale is missing."
    )


def fig45_note(scale: str) -> str:
    runs = study_runs(scale, CONVERGENCE_LABELS)
    if not runs:
        return f"{scale} scale: no runs."
    subset = values_text(runs, "dataset.max_examples.train")
    test = split_sizes("fashion_mnist", scale)[1]
    return (
        f"{scale} scale: supervised training on the first {subset} FashionMNIST training images for every run (the "
        f"thesis draws a random subset of 10,000 per run), tested on {test} test images, "
        f"{epochs_text(dict(run.hparams)['train.epochs'] for run in runs)}, batches of "
        f"{values_text(runs, 'train.batch_size')}, Adam lr {values_text(runs, 'optim.lr')}, "
        f"{seeds_text(runs)} (thesis: five runs); {SPREAD}. The thesis states neither the axes nor the epochs; ours: "
        "the test error (%, 100 (1 - accuracy)) after every epoch." + standin_note(scale, "the FashionMNIST images")
    )


# --- tables ----------------------------------------------------------------------------------------------------------


def labelling_errors(context: ArtifactContext, labels: dict[str, str]) -> pd.DataFrame:
    """Average and Final Error of the labelling runs (lr and batch size of grid `labelling`) of the methods (before
    "@") in `labels`: rows with the thesis' `row`, the metric's column name `error` and dataset, value in %."""
    rows = pd.concat([context.metric(metric) for metric in ERROR_COLUMNS])
    rows = with_setting(rows, grid_setting("labelling")).copy()
    rows["row"] = rows["method"].map(method_base).map(labels)
    rows["error"] = rows["metric"].map(ERROR_COLUMNS)
    return rows[rows["row"].notna() & rows["dataset"].isin(list(DATASET_LABELS))]


def mean_and_spread(rows: pd.DataFrame) -> pd.DataFrame:
    """Cells (row, column) of per-run values: their mean ± sample standard deviation and count."""
    return summarised_cells(rows, standard_deviation)


@table("thesis/table4.1", note=table41_note)
def labelling_results(context: ArtifactContext) -> pd.DataFrame:
    """Average and Final Error (%) per acquisition and data set, mean ± one std over seeds (Table 4.1)."""
    rows = labelling_errors(context, ACQUISITION_LABELS)
    rows["column"] = rows["dataset"].map(DATASET_LABELS) + " " + rows["error"]
    columns = [f"{dataset} {error}" for error in ERROR_COLUMNS.values() for dataset in DATASET_LABELS.values()]
    return in_thesis_order(mean_and_spread(rows), list(ACQUISITION_LABELS.values()), columns)


@table("thesis/table4.2", note=table42_note)
def ablation_results(context: ArtifactContext) -> pd.DataFrame:
    """FashionMNIST Average and Final Error (%) of the ablations beside Random, Maxent and RAL, mean ± one std over
    seeds (Table 4.2)."""
    rows = labelling_errors(context, ABLATION_LABELS)
    rows = rows[rows["dataset"] == "fashion_mnist"].assign(column=lambda frame: frame["error"])
    return in_thesis_order(mean_and_spread(rows), list(ABLATION_LABELS.values()), ERROR_COLUMNS.values())


# --- figures ---------------------------------------------------------------------------------------------------------


def record_error(record: dict) -> float:
    """A history record's test error (%): a labelling run records it per round, a supervised run (bnnrepro.train) its
    test accuracy per epoch."""
    return record["test_error"] if "test_error" in record else 100 * (1 - record["test_accuracy"])


class NoRunResults(ValueError):
    """A figure's runs are not among the results at hand (a claim over them is then not checked)."""


def history_frame(
    context: ArtifactContext, labels: dict[str, str], x: str, setting: dict | None = None, dataset: str | None = None
) -> pd.DataFrame:
    """One row per history record of each run of a method (before "@") in `labels`, with the hyperparameters of
    `setting` and on `dataset` where given: run, label, dataset, `x` (`labels` or `epoch`) and test_error (%).
    ValueError when there is none."""
    rows = []
    for run_id, result in context.run_results().items():
        method, run_dataset, slug, _ = run_id.split("/")
        hparams = parse_instance(slug)
        if method_base(method) not in labels or dataset not in (None, run_dataset):
            continue
        if any(float(hparams[short_name(key)]) != value for key, value in (setting or {}).items()):
            continue
        rows += [
            {"run": run_id, "label": labels[method_base(method)], "dataset": run_dataset, x: record[x],
             "test_error": record_error(record)}
            for record in result["history"]
        ]  # fmt: skip
    if not rows:
        where = f" on {dataset}" if dataset else ""
        at = f" at {setting_text(setting)}" if setting else ""
        raise NoRunResults(f"study {STUDY}: no run results of {', '.join(labels.values())}{where}{at}")
    return pd.DataFrame(rows)


def mean_curves(ax: Axes, frame: pd.DataFrame, x: str, labels: list[str], window: int = 1) -> None:
    """Per label of `labels` with rows in `frame` (coloured by its place in `labels`): the mean test error over the
    runs at each `x`, shaded ± one sample standard deviation over the runs, both smoothed by a centred moving average
    over `window` points (1: none)."""
    colours = dict(zip(labels, sns.color_palette(n_colors=len(labels)), strict=True))
    for label in labels:
        runs = frame[frame["label"] == label]
        if runs.empty:
            continue
        curve = runs.groupby(x)["test_error"].agg(mean="mean", std=standard_deviation)
        curve = curve.rolling(window, center=True, min_periods=1).mean()
        count = runs["run"].nunique()
        ax.plot(curve.index, curve["mean"], color=colours[label], linewidth=2,
                label=f"{label} ({count} run{'' if count == 1 else 's'})")  # fmt: skip
        ax.fill_between(curve.index, curve["mean"] - curve["std"], curve["mean"] + curve["std"],
                        color=colours[label], alpha=0.2, linewidth=0)  # fmt: skip
    ax.set(xlabel=AXIS_LABELS[x], ylabel="test error (%)")
    if ax.has_data():
        ax.legend(fontsize=8)


@figure("thesis/fig4.3", uses="runs", run_file=RUN_METRICS, note=fig43_note,
        methods=(*ACQUISITION_LABELS, *(f"{method}@cifar10" for method in ACQUISITION_LABELS)))  # fmt: skip
def labelling_curves(context: ArtifactContext) -> Figure:
    """Test error against the labelled points per acquisition, a panel per data set top to bottom (Fig. 4.3)."""
    frame = history_frame(context, ACQUISITION_LABELS, "labels", grid_setting("labelling"))
    datasets = [name for name in DATASET_LABELS if name in set(frame["dataset"])]
    fig, axes = plt.subplots(len(datasets), 1, figsize=(6.4, 3.4 * len(datasets)), squeeze=False)
    for ax, dataset in zip(axes[:, 0], datasets, strict=True):
        mean_curves(ax, frame[frame["dataset"] == dataset], "labels", list(ACQUISITION_LABELS.values()),
                    SMOOTHING_WINDOW)  # fmt: skip
        ax.set_title(DATASET_LABELS[dataset])
    fig.tight_layout()
    return fig


@figure("thesis/fig4.4", uses="runs", run_file=RUN_METRICS, methods=sum(ABLATION_PANELS.values(), ()),
        datasets=("fashion_mnist",), note=fig44_note)  # fmt: skip
def ablation_curves(context: ArtifactContext) -> Figure:
    """FashionMNIST test error against the labelled points: (a) Maxent vs Maxent_thinned, (b) RAL vs RAL_nograd vs
    Reinit RAL (Fig. 4.4)."""
    frame = history_frame(context, ABLATION_LABELS, "labels", grid_setting("labelling"), "fashion_mnist")
    fig, axes = plt.subplots(1, len(ABLATION_PANELS), figsize=(11, 4.2), sharey=True)
    for ax, (title, methods) in zip(axes, ABLATION_PANELS.items(), strict=True):
        mean_curves(ax, frame, "labels", [ABLATION_LABELS[method] for method in methods])
        ax.set_title(title)
    fig.tight_layout()
    return fig


@figure("thesis/fig4.6", uses="runs", run_file=RUN_METRICS, methods=tuple(UNCERTAINTY_LABELS),
        datasets=("fashion_mnist",), note=fig46_note)  # fmt: skip
def uncertainty_curves(context: ArtifactContext) -> Figure:
    """FashionMNIST test error against the labelled points at lr 1e-3 and batches of 64: Drop-BNN and CLT-BNN
    Maxent and BALD, and RAL (Fig. 4.6)."""
    frame = history_frame(context, UNCERTAINTY_LABELS, "labels", grid_setting("uncertainty"), "fashion_mnist")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    mean_curves(ax, frame, "labels", list(UNCERTAINTY_LABELS.values()))
    ax.set_title(f"FashionMNIST, {setting_text(grid_setting('uncertainty'))}")
    fig.tight_layout()
    return fig


@figure("thesis/fig4.5", uses="runs", run_file=RUN_METRICS, methods=tuple(CONVERGENCE_LABELS),
        datasets=("fashion_mnist",), note=fig45_note)  # fmt: skip
def convergence_curves(context: ArtifactContext) -> Figure:
    """FashionMNIST test error per epoch of supervised training of the Drop-BNN and CLT-BNN predictors (Fig. 4.5)."""
    frame = history_frame(context, CONVERGENCE_LABELS, "epoch")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    mean_curves(ax, frame, "epoch", list(CONVERGENCE_LABELS.values()))
    ax.set_title("FashionMNIST, supervised training")
    fig.tight_layout()
    return fig

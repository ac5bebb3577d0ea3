"""Tables of thesis chapter 5 (Haußmann 2021, "Bayesian Neural Networks for Probabilistic Machine Learning"; Haußmann,
Gerwinn & Kandemir 2020a): Bayesian evidential deep learning (BEDL), from study `thesis_bedl`.

- Table 5.1: UCI regression, average test log-likelihood ± standard error over the splits, for BEDL, BEDL-Hyper,
  BEDL-PAC and VarOut (own runs; the sparse GP, MC dropout, PBP and DVI rows are cited in the thesis and only
  published here).
- Table 5.2: test error (%) on MNIST and CIFAR-10 classes 0-4 (the thesis' "1-5") and the ECDF-AUC of the predictive
  entropies on the OOD sets (Fashion-MNIST, CIFAR-10 classes 5-9), from the `ood_entropy` evaluation of each run
  (bnnrepro.evaluations.ood_detection).
- Table 5.3: test error (%) of BEDL and BEDL-PAC with two 96-filter convolutions on MNIST and CIFAR-10 (the GP rows
  are cited in the thesis and only published here).
Table 5.4 (the measured costs, which need torch) is drawn by bnnrepro.artifacts.thesis_bedl_costs, so that these
tables' jobs import pandas only.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.render import standard_error
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.layout import evaluation_file
from bnnrepro.pipeline.studies import Run, load_study

STUDY = "thesis_bedl"
ENTROPY_EVALUATION = "ood_entropy"  # config/evaluations/ood_entropy.yaml (bnnrepro.evaluations.ood_detection)
ROWS = {
    "mc_dropout": "MC Dropout", "varout": "VarOut", "dvi": "DVI", "edl": "EDL", "bedl": "BEDL",
    "bedl_hyper": "BEDL-Hyper", "bedl_pac": "BEDL-PAC",
}  # fmt: skip
"""Study method names (before "@") -> the thesis' row labels."""

CELL_COLUMNS = ["row", "column", "ours", "ours_error", "n_runs"]


def in_thesis_order(cells: pd.DataFrame, rows: list[str], columns) -> pd.DataFrame:
    """Cells sorted by the thesis' row and column order."""
    row_order, column_order = {r: i for i, r in enumerate(rows)}, {c: i for i, c in enumerate(columns)}
    keys = cells["row"].map(row_order) * len(column_order) + cells["column"].map(column_order)
    return cells.iloc[keys.argsort(kind="stable")].reset_index(drop=True)


# --- Table 5.1 -------------------------------------------------------------------------------------------------------

UCI_METHODS = ("bedl", "bedl_hyper", "bedl_pac", "varout")  # our rows; the others are cited
UCI_DATASETS = ("boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", "wine")  # the thesis' order
UCI_PREFIX = "uci_"


def method_base(method: str) -> str:
    """'bedl_pac@lenet5' -> 'bedl_pac': the study's method variants name the network after '@'."""
    return method.partition("@")[0]


def standin_note(scale: str, what: str) -> str:
    if scale == "paper":
        return ""
    return f" Below paper scale {what} are offline stand-ins: not comparable with the thesis."


def epochs_text(values) -> str:
    """'1 epoch', '5/20 epochs'."""
    values = sorted(set(values))
    return f"{'/'.join(map(str, values))} epoch{'' if values == [1] else 's'}"


def _uci_runs(scale: str) -> list[Run]:
    """Table 5.1's runs at `scale` (not those of its `sensitivity_epochs` grid: the lengths beside the thesis' 100)."""
    return [run for run in load_study(STUDY).runs(scale, sensitivity=False) if run.dataset.startswith(UCI_PREFIX)]


def table51_note(scale: str) -> str:
    runs = _uci_runs(scale)
    hparams = [dict(run.hparams) for run in runs]
    splits = {run.dataset.removeprefix(UCI_PREFIX): set() for run in runs}
    for run, values in zip(runs, hparams, strict=True):
        splits[run.dataset.removeprefix(UCI_PREFIX)].add(values["dataset.split"])
    sets = ", ".join(f"{name} ({len(chosen)} splits)" for name, chosen in splits.items())
    epochs = epochs_text(values["train.epochs"] for values in hparams)
    return (
        f"{scale} scale: {sets} (thesis: all eight, 20 splits, protein 5); {epochs} (thesis 100), Adam lr 1e-3; "
        "batch sizes not stated for ch. 5: ch. 3's 16/32/64/256 (our choice). VarOut: prior precision 1, beta = 100 "
        "fixed (§5.8.2.1). The "
        "test log-likelihood is in the targets' original units (the Hernández-Lobato & Adams protocol; the thesis "
        "does not say), at the last epoch; ± is the standard error over splits. Not stated and chosen: BEDL-PAC's "
        "delta 0.05 and prior precision 1, BEDL-Hyper's alpha_0 = a_0 = b_0 = 1 (config/train/method/bedl.yaml). "
        "Sparse GP, MC Dropout, PBP and DVI are cited in the thesis, not run." + standin_note(scale, "the UCI sets")
    )


def uci_log_likelihood_runs(context: ArtifactContext) -> pd.DataFrame:
    """Table 5.1's runs: one row per run with its method's `base`, `dataset`, `split` and test log-likelihood
    (`value`, -test_nll_original)."""
    rows = context.metric("test_nll_original").copy()
    rows = rows[rows["dataset"].str.startswith(UCI_PREFIX)]
    rows["base"] = rows["method"].map(method_base)
    return rows[rows["base"].isin(UCI_METHODS)].assign(value=lambda frame: -frame["value"])


@table("thesis/table5.1", note=table51_note)
def uci_log_likelihood(context: ArtifactContext) -> pd.DataFrame:
    """Average test log-likelihood (-test_nll_original) per method and dataset, mean ± standard error over splits."""
    cells = []
    for (base, dataset), group in uci_log_likelihood_runs(context).groupby(["base", "dataset"], sort=False):
        cells.append({
            "row": ROWS[base], "column": dataset.removeprefix(UCI_PREFIX), "ours": float(group["value"].mean()),
            "ours_error": standard_error(group["value"]), "n_runs": len(group),
        })  # fmt: skip
    return in_thesis_order(pd.DataFrame(cells, columns=CELL_COLUMNS), [ROWS[m] for m in UCI_METHODS], UCI_DATASETS)


# --- Table 5.2 -------------------------------------------------------------------------------------------------------

OOD_METHODS = ("mc_dropout", "varout", "dvi", "edl", "bedl", "bedl_pac")
OOD_NETWORKS = {"mnist": "@lenet5", "cifar10": "@lenet5_cifar5"}
DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10 classes 0-4"}
OOD_COLUMNS = {
    "mnist": ("MNIST test error", "Fashion-MNIST OOD ECDF-AUC"),
    "cifar10": ("CIFAR 1–5 test error", "CIFAR 6–10 OOD ECDF-AUC"),
}


def _image_runs(scale: str, network: str) -> list[Run]:
    return [run for run in load_study(STUDY).runs(scale) if run.method.endswith(network)]


def _image_settings(runs: list[Run]) -> str:
    """'5 epochs, width x0.25, seeds [0]' of a group of image runs."""
    hparams = [dict(run.hparams) for run in runs]
    epochs = epochs_text(values["train.epochs"] for values in hparams)
    widths = sorted({values.get("method.width_multiplier", 1.0) for values in hparams})
    width = "" if widths == [1.0] else f" at {'/'.join(map(str, widths))} of the width"
    return f"{epochs}{width}, seeds {sorted({run.seed for run in runs})}"


def table52_note(scale: str) -> str:
    ood = declared_evaluation(ENTROPY_EVALUATION).settings[scale]["ood_examples"]
    parts = [f"{DATASET_LABELS[dataset]}: {_image_settings(_image_runs(scale, network))}"
             for dataset, network in OOD_NETWORKS.items() if _image_runs(scale, network)]  # fmt: skip
    subsets = (
        "the whole training sets"
        if scale == "paper"
        else "the first images of the training and test splits (config/train/protocol/<dataset>_<scale>.yaml)"
    )
    return (
        f"{scale} scale. {'; '.join(parts)} (thesis: epochs not stated; ours at paper: 40, the authors' code's "
        "(`manuelhaussmann/bedl`, `exp_classification.py`) CIFAR-5 length), batches of 100, Adam lr 1e-3, five "
        f"samples wherever a model samples, on {subsets}. OOD: "
        f"{f'the first {ood}' if ood else 'all'} test images of Fashion-MNIST / CIFAR-10 classes 5-9 (the split is "
        "not stated). VarOut and DVI: prior precision 10 (not stated; the authors' code, `manuelhaussmann/bedl` "
        "`exp_classification_archs.py`). ECDF-AUC: the area under the empirical CDF of the predictive entropies over "
        "[0, log C] (= log C - mean entropy; the range is not stated). ± is the standard error over seeds (the "
        "thesis reports single runs)." + standin_note(scale, "MNIST, Fashion-MNIST and CIFAR-10")
    )


@table("thesis/table5.2", uses="runs", run_file=evaluation_file(ENTROPY_EVALUATION),
       methods=tuple(f"{m}{net}" for net in OOD_NETWORKS.values() for m in OOD_METHODS), note=table52_note)  # fmt: skip
def classification_and_ood(context: ArtifactContext) -> pd.DataFrame:
    """Test error (%) and OOD ECDF-AUC per method and dataset pair, mean ± standard error over seeds."""
    records = []
    for run_id, arrays in context.run_arrays().items():
        method, dataset = run_id.split("/")[:2]
        error = 100 * float((arrays["test_probabilities"].argmax(-1) != arrays["test_labels"]).mean())
        error_column, ood_column = OOD_COLUMNS[dataset]
        records += [
            {"row": ROWS[method_base(method)], "column": error_column, "value": error},
            {"row": ROWS[method_base(method)], "column": ood_column, "value": float(arrays["ood_ecdf_auc"])},
        ]
    columns = [column for pair in OOD_COLUMNS.values() for column in pair]
    return in_thesis_order(_mean_and_error(records), [ROWS[m] for m in OOD_METHODS], columns)


def summarised_cells(runs: pd.DataFrame, spread: Callable[[pd.Series], float] = standard_error) -> pd.DataFrame:
    """Cells (row, column) of per-run values (columns row, column, value): their mean, `spread` (the standard error,
    or the standard deviation where a thesis table reports it) and count."""
    cells = [
        {"row": row, "column": column, "ours": float(group["value"].mean()), "ours_error": spread(group["value"]),
         "n_runs": len(group)}
        for (row, column), group in runs.groupby(["row", "column"], sort=False)
    ]  # fmt: skip
    return pd.DataFrame(cells, columns=CELL_COLUMNS)


def _mean_and_error(records: list[dict]) -> pd.DataFrame:
    """Cells (row, column) of per-run values: their mean ± standard error and count."""
    return summarised_cells(pd.DataFrame(records)) if records else pd.DataFrame(columns=CELL_COLUMNS)


# --- Table 5.3 -------------------------------------------------------------------------------------------------------

GP_NETWORK = "@cnn96"
GP_COLUMNS = {"mnist": "MNIST test error", "cifar10": "CIFAR10 test error"}
GP_DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10 (10 classes)"}


def table53_note(scale: str) -> str:
    runs = _image_runs(scale, GP_NETWORK)
    datasets = " and ".join(dict.fromkeys(GP_DATASET_LABELS[run.dataset] for run in runs))
    return (
        f"{scale} scale: BEDL and BEDL-PAC on {datasets}, two convolutions of 96 filters 5x5 with stride 2 (the "
        "caption's; §5.8.2.3 says 5) and a linear output layer, "
        f"{_image_settings(runs)} (thesis: 50 epochs), batches of 100 (not stated), Adam lr 1e-3, the last epoch. "
        "The GP rows are cited in the thesis (Garriga-Alonso et al. 2019), not run."
        + ("" if scale == "paper" else " Below paper scale on the first images of each split of offline stand-ins.")
    )


@table("thesis/table5.3", note=table53_note)
def gp_comparison(context: ArtifactContext) -> pd.DataFrame:
    """Test error (%) of BEDL and BEDL-PAC with the 96-filter CNN, mean ± standard error over seeds."""
    rows = context.metric("test_accuracy")
    rows = rows[rows["method"].str.endswith(GP_NETWORK)]
    records = [
        {"row": ROWS[method_base(method)], "column": GP_COLUMNS[dataset], "value": 100 * (1 - accuracy)}
        for method, dataset, accuracy in zip(rows["method"], rows["dataset"], rows["value"], strict=True)
    ]
    return in_thesis_order(_mean_and_error(records), [ROWS["bedl"], ROWS["bedl_pac"]], GP_COLUMNS.values())

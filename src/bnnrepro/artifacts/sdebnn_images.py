"""Artifacts of the SDE-BNN image study (Xu et al. 2022, §5.2): Table 1, accuracy and ECE on MNIST and CIFAR-10."""

from __future__ import annotations

import pandas as pd
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import table
from bnnrepro.paths import train_config_dir
from bnnrepro.studies import load_study

STUDY = "sdebnn_images"
MODEL_LABELS = {  # study model names (before "@") -> Table 1 rows
    "resnet32": "ResNet32",
    "odenet": "ODEnet",
    "hyperodenet": "HyperODEnet",
    "mfvi_resnet32": "MFVI ResNet32",
    "mfvi_odenet": "MFVI ODEnet",
    "mfvi_hyperodenet": "MFVI HyperODEnet",
    "sdebnn": "SDE BNN",
    "sdebnn_stl": "SDE BNN (+ STL)",
}
DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10"}
PAPER_EPOCHS = {"mnist": 100, "cifar10": 500}  # Table 2
METRICS = {"test_accuracy": "accuracy", "test_ece": "ECE"}  # both reported x100: % and x10^-2


def protocol(dataset: str, scale: str):
    return OmegaConf.load(train_config_dir() / "protocol" / f"{dataset}_{scale}.yaml")


def scale_note(scale: str) -> str:
    """How the runs at this scale differ from the paper's (Table 2 settings, 3 seeds, the real datasets)."""
    runs = load_study(STUDY).runs(scale)
    seeds = sorted({run.seed for run in runs})
    epochs = ", ".join(
        f"{DATASET_LABELS[name]} {protocol(name, scale).train.epochs} (paper {paper})"
        for name, paper in PAPER_EPOCHS.items()
    )
    note = f"{scale} scale: epochs {epochs}, seeds {seeds}; test metrics at the last epoch (not stated in the paper)."
    if scale == "paper":
        return note
    steps = "/".join(sorted({str(value) for run in runs for key, value in run.hparams if key.endswith("num_steps")}))
    subset = protocol("mnist", scale).dataset.max_examples
    return note + (
        " Offline stand-ins for MNIST (scikit-learn digits at 28x28) and CIFAR-10 (generated 32x32 images), the"
        f" first {subset.train} training and {subset.test} test images; the spec's tiny models: f_x width 8"
        " (paper 32 / 64), f_w hidden width 16 (paper 64 /"
        f" 128), CIFAR-10 blocks 1-1 (paper 2-2-2), ResNet8 at half width for ResNet32, {steps} Euler steps"
        " (paper 20). Numbers are not comparable with the paper's; ± is the std over seeds (none for one seed)."
    )


@table("sdebnn/table1", note=scale_note)
def accuracy_and_calibration(context: ArtifactContext) -> pd.DataFrame:
    """Mean and std over seeds of test accuracy (%) and ECE (x10^-2) per model and dataset. The † rows (MFVI,
    Deep Ensemble, HMC) are quoted from Izmailov et al. (2021) and have no runs of ours."""
    rows = context.metrics[context.metrics["metric"].isin(list(METRICS))].copy()
    rows["row"] = rows["method"].str.partition("@")[0].map(MODEL_LABELS)
    rows["column"] = rows["dataset"].map(DATASET_LABELS) + " " + rows["metric"].map(METRICS)
    rows["value"] = rows["value"] * 100
    summary = rows.groupby(["row", "column"], sort=False)["value"].agg(["mean", "std", "count"]).reset_index()
    return pd.DataFrame({
        "row": summary["row"], "column": summary["column"], "ours": summary["mean"],
        "ours_error": summary["std"], "n_runs": summary["count"],
    })  # fmt: skip

"""Table 1 of repulsive deep ensembles (D'Angelo & Fortuin 2021): FashionMNIST (OOD: MNIST) and CIFAR-10 with
ResNet32 (OOD: SVHN), from the `ood_detection` evaluation of every run of study `repulsive_images`
(bnnrepro.evaluations.ood_detection).

Columns (the paper's §4, Table 1): AUROC(H) and AUROC(MD), OOD detection by the predictive entropy and by the members'
model disagreement; accuracy (%); H_o/H_t and MD_o/MD_t, the mean entropy and disagreement on OOD over test
inputs; ECE (30 equal-width bins, left-closed with a bin of its own for confidence 1, the authors' code:
`ratschlab/repulsive_ensembles`, `training/training_mnist_hyper.py`, `training/training_mnist_corruption.py`, which
calls `uncertainty_metrics`' ece) and NLL (the mean of -log p(y | x), not the
code's log of the mean). Over seeds: the mean of each per-run metric ± its standard error std / sqrt(seeds) (the paper
does not say what its ± is; the authors' aggregator divides the std by the number of seeds); the two ratios are ratios
of seed means, as the authors' `generate_results.py`, ± their delta-method standard error.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
import yaml

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.render import standard_error
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.evaluations.ood_detection import EVALUATION
from bnnrepro.layout import evaluation_file
from bnnrepro.metrics import (
    REPULSIVE_ECE_BINS,
    accuracy,
    expected_calibration_error,
    negative_log_likelihood,
    ood_auroc,
)
from bnnrepro.pipeline.studies import load_study

STUDY = "repulsive_images"
ROWS = {
    "de": "Deep ensemble", "svgd": "SVGD", "fsvgd": "f-SVGD", "hyper_de": "hyper-DE", "kde_wgd": "kde-WGD",
    "sge_wgd": "sge-WGD", "ssge_wgd": "ssge-WGD", "kde_fwgd": "kde-fWGD", "sge_fwgd": "sge-fWGD",
    "ssge_fwgd": "ssge-fWGD",
}  # fmt: skip
NETWORKS = ("", "@resnet32", "@resnet8")  # the study's method variants: the MLP, ResNet32 and the CPU's ResNet8
FASHION_MNIST_PIXELS, CLASSES = 784, 10
DATASETS = {"fashion_mnist": "FashionMNIST", "cifar10": "CIFAR-10"}
RATIOS = {"H_o/H_t": ("ood_entropy", "test_entropy"), "MD_o/MD_t": ("ood_disagreement", "test_disagreement")}
COLUMNS = ("AUROC(H)", "AUROC(MD)", "accuracy", "H_o/H_t", "MD_o/MD_t", "ECE", "NLL")  # the paper's order


def run_metrics(arrays: dict[str, np.ndarray]) -> dict[str, float]:
    """One run's AUROC(H), AUROC(MD), accuracy (%), ECE and NLL, and the means of the ratios' four scores."""
    probs, labels = torch.as_tensor(arrays["test_probabilities"]), torch.as_tensor(arrays["test_labels"])
    scores = {key: torch.as_tensor(arrays[key]) for pair in RATIOS.values() for key in pair}
    metrics = {
        "AUROC(H)": ood_auroc(scores["test_entropy"], scores["ood_entropy"]),
        "AUROC(MD)": ood_auroc(scores["test_disagreement"], scores["ood_disagreement"]),
        "accuracy": 100 * accuracy(probs, labels),
        "ECE": expected_calibration_error(probs, labels, REPULSIVE_ECE_BINS, "left_closed"),
        "NLL": negative_log_likelihood(probs, labels),
    }
    return metrics | {key: float(values.mean()) for key, values in scores.items()}


def ratio_of_means(numerators: pd.Series, denominators: pd.Series) -> tuple[float, float]:
    """mean(a) / mean(b) over seeds and its delta-method standard error, R sqrt(se_a^2/a^2 + se_b^2/b^2
    - 2 cov(a, b) / (n a b)) with se = std / sqrt(n); NaN error for one seed."""
    a, b = numerators.mean(), denominators.mean()
    if len(numerators) < 2:
        return a / b, math.nan
    n = len(numerators)
    covariance = np.cov(numerators, denominators, ddof=1)
    relative = covariance[0, 0] / a**2 + covariance[1, 1] / b**2 - 2 * covariance[0, 1] / (a * b)
    return a / b, abs(a / b) * math.sqrt(max(relative, 0.0) / n)


def network_label(variant: dict) -> str:
    """'ResNet32', or 'MLP 784-100-10', from a method variant's Hydra overrides."""
    if variant.get("method.architecture") == "resnet":
        return f"ResNet{6 * int(variant['method.resnet_blocks_per_stage']) + 2}"
    widths = yaml.safe_load(str(variant["method.hidden_widths"]))
    return "MLP " + "-".join(str(width) for width in (FASHION_MNIST_PIXELS, *widths, CLASSES))


def table1_note(scale: str) -> str:
    """The settings behind the table at this scale (the paper states few; config/studies/repulsive_images.yaml)."""
    study = load_study(STUDY)
    runs = study.runs(scale)
    ood = declared_evaluation(EVALUATION).settings[scale]["ood_examples"]
    parts = []
    for dataset, label in DATASETS.items():
        ours = [run for run in runs if run.dataset == dataset]
        if not ours:
            continue
        hparams = dict(ours[0].hparams)
        methods = ", ".join(dict.fromkeys(ROWS[run.method.partition("@")[0]] for run in ours))
        network = network_label(study.method_variants[ours[0].method])
        parts.append(
            f"{label}: {methods}; {network}, {hparams['method.num_particles']} members, seeds "
            f"{sorted({run.seed for run in ours})}"
        )
    standin = (
        ""
        if scale == "paper"
        else (
            " Offline stand-ins for all four datasets (FashionMNIST: generated garment silhouettes; MNIST and SVHN:"
            " scikit-learn digits; CIFAR-10: generated textures) on the protocol's subsets: numbers are not comparable"
            " with the paper's."
        )
    )
    return (
        f"{scale} scale. " + "; ".join(parts) + f". OOD: the first {ood or 'all'} test images of MNIST / SVHN."
        " ± is the standard error over seeds (std/√seeds; the ratios: delta method); the paper does not say"
        " what its ± is (the authors' code, `ratschlab/repulsive_ensembles` `utils/generate_results.py`:"
        " std/seeds). ECE: 30 equal-width bins in the authors' convention, [k/30, (k+1)/30) and a bin of its own for"
        " confidence 1 (`uncertainty_metrics`' ece, which their code calls)." + standin
    )


@table("repulsive/table1", uses="runs", run_file=evaluation_file(EVALUATION),
       methods=tuple(f"{method}{network}" for network in NETWORKS for method in ROWS), note=table1_note)  # fmt: skip
def image_classification(context: ArtifactContext) -> pd.DataFrame:
    """Table 1's seven columns per method and dataset, mean ± standard error over seeds (module docstring)."""
    records = []
    for run_id, arrays in context.run_arrays().items():
        method, dataset = run_id.split("/")[:2]
        records.append({"method": method.partition("@")[0], "dataset": dataset, **run_metrics(arrays)})
    runs = pd.DataFrame(records)
    rows = []
    for (method, dataset), seeds in runs.groupby(["method", "dataset"], sort=False):
        values = {name: (seeds[name].mean(), standard_error(seeds[name])) for name in COLUMNS if name not in RATIOS}
        values |= {name: ratio_of_means(seeds[a], seeds[b]) for name, (a, b) in RATIOS.items()}
        for name in COLUMNS:
            mean, error = values[name]
            rows.append({
                "row": ROWS[method], "column": f"{DATASETS[dataset]} {name}", "ours": mean, "ours_error": error,
                "n_runs": len(seeds),
            })  # fmt: skip
    order = {label: i for i, label in enumerate(ROWS.values())}
    table_rows = pd.DataFrame(rows)
    return table_rows.sort_values("row", key=lambda r: r.map(order), kind="stable").reset_index(drop=True)

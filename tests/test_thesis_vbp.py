"""Thesis chapter 3 (VBP) study and tables: the strided LeNet5 of Table 3.4 against hand-computed shapes and parameter
counts, Tables 3.1-3.3 on constructed metrics (their statistics, their labels against the catalog's published
cells, and that the rows the thesis cites are not produced as ours), and the study's runs at every scale."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bnnrepro.artifacts import thesis_vbp_tables as tables
from bnnrepro.artifacts.registry import catalog_entry, implementation
from bnnrepro.models.moment_layers import layer_shapes
from bnnrepro.pipeline.studies import load_study
from bnnrepro.train_configs import SCALES, check_protocol_files

# Table 3.4 by hand: (out * in * k * k + out) per convolution, (out * in + out) per linear layer.
MNIST_LAYERS = [20 * 1 * 5 * 5 + 20, 50 * 20 * 5 * 5 + 50, 800 * 500 + 500, 500 * 10 + 10]
CIFAR_LAYERS = [192 * 3 * 5 * 5 + 192, 192 * 192 * 5 * 5 + 192, 4800 * 1000 + 1000]
HAND_COUNTS = {
    "MNIST / FashionMNIST": MNIST_LAYERS,
    "CIFAR-10": [*CIFAR_LAYERS, 1000 * 10 + 10],
    "CIFAR-100": [*CIFAR_LAYERS, 1000 * 100 + 100],
}


def test_strided_lenet5_flattens_to_800_and_4800_features() -> None:
    mnist = layer_shapes((1, 28, 28), [(20, 5, 2), (50, 5, 2)], [500], 10)
    cifar = layer_shapes((3, 32, 32), [(192, 5, 2), (192, 5, 2)], [1000], 100)
    assert (mnist[2].in_size, cifar[2].in_size) == (800, 4800)
    cells = tables.lenet5_architecture().set_index(["row", "column"])["ours"]
    assert cells["MNIST / FashionMNIST: layer 1", "output shape"] == "20 × 12 × 12"
    assert cells["MNIST / FashionMNIST: layer 2", "output shape"] == "50 × 4 × 4 (flatten 800)"
    assert cells["CIFAR-10: layer 1", "output shape"] == "192 × 14 × 14"
    assert cells["CIFAR-100: layer 2", "output shape"] == "192 × 5 × 5 (flatten 4800)"
    assert cells["CIFAR-100: layer 4", "output shape"] == "100"


def test_table34_parameter_counts_are_the_hand_computed_ones() -> None:
    cells = tables.lenet5_architecture().set_index(["row", "column"])["ours"]
    for network, counts in HAND_COUNTS.items():
        for index, count in enumerate(counts, start=1):
            assert cells[f"{network}: layer {index}", "weights"] == count
            # q(w): a mean and a log-variance per weight and bias
            assert cells[f"{network}: layer {index}", "variational parameters"] == 2 * count
        assert cells[f"{network}: total", "weights"] == sum(counts)
    assert cells["MNIST / FashionMNIST: total", "weights"] == 431_080


def metrics_frame(records: list[tuple[str, str, int, str, float]]) -> pd.DataFrame:
    """A tidy metrics table (bnnrepro.aggregate) of (method, dataset, seed or split, metric, value) records."""
    return pd.DataFrame([{"method": m, "dataset": d, "seed": s, "metric": k, "value": v} for m, d, s, k, v in records])


def published_cells(artifact_id: str) -> set[tuple[str, str]]:
    return {(v["row"], v["column"]) for v in catalog_entry(artifact_id)["published"]["values"]}


def test_table31_is_the_mean_and_standard_error_of_the_test_log_likelihood_over_splits() -> None:
    nll = {"vbp": [2.5, 2.6, 2.9], "varout": [2.7, 2.4, 2.6]}
    records = [
        (method, dataset, split, "test_nll_original", value + offset)
        for method, values in nll.items()
        for dataset, offset in (("uci_boston", 0.0), ("uci_yacht", -1.0))
        for split, value in enumerate(values)
    ]
    records += [("vbp@protein", "uci_protein", split, "test_nll_original", 2.9) for split in range(2)]
    records += [("dvi", "uci_boston", 0, "test_nll_original", 1.0), ("vbp", "uci_boston", 0, "test_nll", 9.0)]
    table = tables.uci_log_likelihood(metrics_frame(records)).set_index(["row", "column"])
    assert set(table.index.get_level_values("row")) == {"VarOut", "VBP"}  # DVI and PBP are cited, not ours
    assert set(table.index) <= published_cells("thesis/table3.1")
    vbp = table.loc["VBP", "boston"]
    assert vbp["ours"] == pytest.approx(-np.mean(nll["vbp"]))
    assert vbp["ours_error"] == pytest.approx(np.std(nll["vbp"], ddof=1) / math.sqrt(3))
    assert vbp["n_runs"] == 3
    assert table.loc["VarOut", "yacht"]["ours"] == pytest.approx(1 - np.mean(nll["varout"]))
    assert table.loc["VBP", "protein"]["ours"] == pytest.approx(-2.9)
    assert list(table.index.get_level_values("row").unique()) == ["VarOut", "VBP"]  # the thesis' order


def test_table32_is_error_and_log_likelihood_with_the_std_over_seeds() -> None:
    accuracy = {"vbp@lenet5": [0.99, 0.98], "dvi@lenet5": [0.97, 0.96], "varout@lenet5": [0.95, 0.90]}
    records = [
        (method, dataset, seed, "test_accuracy", value)
        for method, values in accuracy.items()
        for dataset in ("mnist", "fashion_mnist")
        for seed, value in enumerate(values)
    ]
    records += [("vbp@lenet5", "mnist", seed, "test_nll", nll) for seed, nll in enumerate([0.03, 0.05])]
    records += [("vbp@lenet5_cifar", "cifar100", 0, "test_accuracy", 0.4)]
    records += [("vbp@mlp500", "mnist", 0, "test_accuracy", 0.5)]  # Table 3.3's run
    table = tables.image_classification(metrics_frame(records)).set_index(["row", "column"])
    assert set(table.index) <= published_cells("thesis/table3.2")
    error = table.loc["VarOut", "MNIST error"]
    assert error["ours"] == pytest.approx(7.5) and error["ours_error"] == pytest.approx(np.std([5, 10], ddof=1))
    assert table.loc["DVI", "FashionMNIST error"]["ours"] == pytest.approx(3.5)
    likelihood = table.loc["VBP", "MNIST test log-likelihood"]
    assert likelihood["ours"] == pytest.approx(-0.04) and likelihood["ours_error"] == pytest.approx(
        np.std([0.03, 0.05], ddof=1)
    )
    one_seed = table.loc["VBP", "CIFAR-100 error"]
    assert one_seed["ours"] == pytest.approx(60.0) and math.isnan(one_seed["ours_error"])
    assert table.loc["VBP", "MNIST error"]["n_runs"] == 2  # not the MLP run of Table 3.3
    assert list(table.index.get_level_values("row").unique()) == ["VarOut", "DVI", "VBP"]


def test_table33_is_the_accuracy_in_percent_of_the_online_runs() -> None:
    records = [
        (f"{method}@{net}", dataset, seed, "test_accuracy", 0.9 + 0.01 * seed)
        for method in ("varout", "dvi", "vbp")
        for net, dataset in (("mlp500", "mnist"), ("mlp2048_1024", "cifar10"))
        for seed in range(3)
    ]
    records += [("vbp@lenet5", "mnist", 0, "test_accuracy", 0.1)]  # Table 3.2's run
    table = tables.online_accuracy(metrics_frame(records)).set_index(["row", "column"])
    assert set(table.index) <= published_cells("thesis/table3.3")
    assert "V-ReLU-Net" not in table.index.get_level_values("row")  # cited from Kandemir (2018)
    vbp = table.loc["VBP", "MNIST accuracy"]
    assert vbp["ours"] == pytest.approx(91.0) and vbp["ours_error"] == pytest.approx(1.0) and vbp["n_runs"] == 3
    assert table.loc["DVI", "CIFAR-10 accuracy"]["ours"] == pytest.approx(91.0)


EXPECTED_RUNS = {
    # yacht x 2 splits x 2 methods; VBP on one MNIST subset for Tables 3.2 and 3.3
    "smoke": 2 * 2 + 1 + 1,
    # boston and yacht x 3 splits x 2 methods; 4 data sets x 3 methods x 1 seed; 2 streams x 3 methods x 1 seed
    "default": 2 * 3 * 2 + 4 * 3 + 2 * 3,
    # 8 sets x 20 splits and protein x 5 splits, x 2 methods; 4 x 3 x 5 seeds; 2 x 3 x 10 seeds; and Table 3.3's
    # sensitivity grids: 3 methods x 2 learning rates, 2 x 1 batch size, 2 x 2 priors, x 5 seeds
    "paper": (8 * 20 + 5) * 2 + 4 * 3 * 5 + 2 * 3 * 10 + (3 * 2 + 2 * 1 + 2 * 2) * 5,
}


@pytest.mark.parametrize("scale", SCALES)
def test_the_study_composes_at_every_scale(scale: str) -> None:
    study = load_study("thesis_vbp")
    runs = study.runs(scale)
    assert len(runs) == EXPECTED_RUNS[scale]
    check_protocol_files(runs, scale)
    for note in (tables.table31_note, tables.table32_note, tables.table33_note):
        assert f"{scale} scale" in note(scale)
    paper_uci = {run.dataset for run in study.runs("paper") if run.dataset.startswith("uci_")}
    assert paper_uci == set(tables.UCI_LABELS)


def test_the_tables_are_registered() -> None:
    study = load_study("thesis_vbp")  # its runs compose at every scale: test_workflow_config
    assert {f"thesis/table3.{i}" for i in range(1, 5)} <= set(study.artifacts)
    for i in range(1, 5):
        assert implementation(f"thesis/table3.{i}").draw.__module__ == tables.__name__
    assert implementation("thesis/table3.4").uses == "nothing"
    protein = [run for run in study.runs("paper") if run.dataset == "uci_protein"]
    assert {run.method for run in protein} == {"vbp@protein", "varout@protein"}
    assert tables.variant_method_config("vbp@protein").hidden_widths == [100]
    assert tables.variant_method_config("vbp@lenet5").prior_precision == 100.0


def test_a_part_of_the_grid_without_image_runs_gives_empty_image_tables() -> None:
    """A paper-scale batch of the UCI grids alone (the fidelity collection of a part of a grid) draws Tables 3.2 and
    3.3 with no cells instead of failing."""
    records = [("vbp", "uci_boston", split, "test_nll_original", 2.5) for split in range(2)]
    assert tables.image_classification(metrics_frame(records)).empty
    assert tables.online_accuracy(metrics_frame(records)).empty

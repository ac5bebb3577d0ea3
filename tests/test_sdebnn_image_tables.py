"""SDE-BNN Tables 3 and 4 from run results: the epoch Table 3 reads, the w_0 prior variance it selects on
validation, and Table 4's units."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.sdebnn_images import inferred_initial_weights, stl_training_metrics, table3_epoch


def write_result(folder: Path, run_id: str, history: list[dict]) -> Path:
    path = folder / "runs" / run_id / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"epochs": history[-1]["epoch"], "history": history}))
    return path


def history(epochs: int, val: list[float], test: list[float]) -> list[dict]:
    return [
        {"epoch": e, "val_accuracy": v, "test_accuracy": t, "test_ece": t / 10}
        for e, v, t in zip(range(1, epochs + 1), val, test, strict=True)
    ]


def test_table3_reads_the_scaled_epoch() -> None:
    assert table3_epoch("cifar10", 500) == 300
    assert table3_epoch("mnist", 100) == 100
    assert table3_epoch("cifar10", 2) == 1
    assert table3_epoch("cifar10", 1) == 1


def test_table3_keeps_the_prior_variance_with_the_best_validation_accuracy_at_its_epoch(tmp_path: Path) -> None:
    # CIFAR-10, 5 epochs: Table 3 reads epoch 3. v = 0.1 is best on validation at epoch 3 (but not at the last
    # epoch), so its test accuracy 0.5 is reported, not v = 0.44's 0.9.
    runs = [
        write_result(tmp_path, "sdebnn_w0inf@cifar10/cifar10/w0_prior_variance=0.1/seed=0",
                     history(5, [0.1, 0.2, 0.8, 0.1, 0.1], [0.1, 0.2, 0.5, 0.1, 0.1])),
        write_result(tmp_path, "sdebnn_w0inf@cifar10/cifar10/w0_prior_variance=0.44/seed=0",
                     history(5, [0.1, 0.2, 0.7, 0.9, 0.9], [0.1, 0.2, 0.9, 0.9, 0.9])),
        write_result(tmp_path, "sdebnn@cifar10/cifar10/lr=0.0007/seed=0",
                     history(5, [0.5] * 5, [0.1, 0.2, 0.3, 0.4, 0.6])),
        write_result(tmp_path, "sdebnn@cifar10/cifar10/lr=0.0007/seed=1",
                     history(5, [0.5] * 5, [0.1, 0.2, 0.5, 0.4, 0.6])),
    ]  # fmt: skip
    table = inferred_initial_weights(ArtifactContext("sdebnn_images", "default", run_files=runs)).set_index(
        ["row", "column"]
    )
    assert table.loc[("SDE BNN w_0 inferred", "CIFAR-10 accuracy"), "ours"] == pytest.approx(50.0)
    assert table.loc[("SDE BNN w_0 inferred", "CIFAR-10 ECE"), "ours"] == pytest.approx(5.0)
    assert table.loc[("SDE BNN w_0 inferred", "CIFAR-10 accuracy"), "n_runs"] == 1
    point = table.loc[("SDE BNN", "CIFAR-10 accuracy")]
    assert (point["ours"], point["n_runs"]) == (pytest.approx(40.0), 2)
    assert point["ours_error"] == pytest.approx(pd.Series([30.0, 50.0]).std())


def test_table4_reports_cifar10_training_metrics_in_the_papers_units(tmp_path: Path) -> None:
    rows = [
        {"method": m, "dataset": d, "metric": k, "value": v}
        for m, d in (
            ("sdebnn@cifar10_tiny", "cifar10"),
            ("sdebnn_stl@cifar10_tiny", "cifar10"),
            ("sdebnn@mnist_tiny", "mnist"),
            ("odenet@cifar10_tiny", "cifar10"),
        )  # fmt: skip
        for k, v in (
            ("last_train_accuracy", 0.9),
            ("last_train_nll", 2e-4),
            ("last_train_loss", 1.5),
            ("test_ece", 0.1),
        )
    ]
    metrics_file = tmp_path / "metrics.csv"
    pd.DataFrame(rows).to_csv(metrics_file, index=False)
    table = stl_training_metrics(ArtifactContext("sdebnn_images", "default", metrics_file=metrics_file))
    assert set(table["row"]) == {"SDE BNN", "SDE BNN (+STL)"}
    values = table.set_index(["row", "column"])["ours"]
    assert values[("SDE BNN", "accuracy")] == pytest.approx(90.0)
    assert values[("SDE BNN", "NLL")] == pytest.approx(2.0)
    assert values[("SDE BNN (+STL)", "ELBO")] == pytest.approx(1.5)
    assert len(table) == 6

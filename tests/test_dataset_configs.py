"""Every download has a Hydra dataset config whose preprocessing its loader applies, and a training job
knows when it reads a stand-in (the report marks those numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bnnrepro.data.registry import dataset, downloads, generate_instance, is_standin, load_splits, resolve
from bnnrepro.train import compose_config

SMALL = ["uci_yacht", "uci_boston", "cmu_mocap35", "mnist", "svhn"]


@pytest.mark.parametrize("name", [d.name for d in downloads()])
def test_every_download_has_a_dataset_config(name: str) -> None:
    cfg = compose_config([f"dataset={name}", "dataset.path=unused", "run_dir=unused"])
    assert cfg.dataset.name == name and cfg.dataset.task in ("classification", "regression", "forecasting")


@pytest.mark.parametrize("name", SMALL)
def test_a_job_reads_the_standin_through_its_config(name: str, tmp_path: Path) -> None:
    entry = dataset(name)
    path = tmp_path / Path(entry.prepared_file(standin=True)).name
    resolve(entry.standin)(entry, path)
    cfg = compose_config([f"dataset={name}", f"dataset.path={path}", "run_dir=unused"])
    splits = load_splits(cfg.dataset)
    assert is_standin(cfg.dataset.path) and not is_standin("results/data/uci_yacht.npz")
    assert len(splits.x("train")) > 0 or name == "svhn"
    assert len(splits.x("test")) > 0


def test_uci_loader_standardises_with_the_training_split(tmp_path: Path) -> None:
    entry = dataset("uci_boston")
    path = tmp_path / "uci_boston-standin.npz"
    resolve(entry.standin)(entry, path)
    cfg = compose_config(["dataset=uci_boston", f"dataset.path={path}", "run_dir=unused", "dataset.protocol=udn"])
    splits = load_splits(cfg.dataset)
    assert [len(splits.y(s)) for s in ("train", "val", "test")] == [404, 51, 51]  # UDN paper App. B.4
    np.testing.assert_allclose(splits.x("train").mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(splits.y("train").std(), 1, rtol=1e-4)
    assert abs(float(splits.y("test").mean())) > 1e-6  # test data use the training statistics, not their own


def test_max_examples_keeps_the_first_examples_of_the_splits_named(tmp_path: Path) -> None:
    path = tmp_path / "omega=2+seed=0.npz"
    generate_instance("spirals", "omega=2+seed=0", path)
    full = load_splits({"name": "spirals", "path": str(path)})
    small = load_splits({"name": "spirals", "path": str(path), "max_examples": {"train": 10, "test": None}})
    assert small.x("train").shape[0] == 10 and (small.y("train") == full.y("train")[:10]).all()
    assert small.x("test").shape == full.x("test").shape and small.x("val").shape == full.x("val").shape

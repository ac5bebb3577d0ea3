"""The dataset registry as a user extends it: config/datasets.yaml checked against its schema, function references
that must resolve, datasets a package ships, tabular splits, generated instances that record their values, and the
choice of real data or stand-in apart from the scale."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.datasets import load_diabetes

from bnnrepro.data import csv_tables, registry, tabular
from bnnrepro.data.registry import (
    RegistryError,
    check_real_data,
    check_references,
    dataset,
    generate_instance,
    load_splits,
    prepared_file,
)
from bnnrepro.overrides import quote_path_values
from bnnrepro.pipeline.studies import load_study
from bnnrepro.train import compose_config
from bnnrepro.train_configs import check_protocol_files, protocol_override, run_protocol_file
from tests.conftest import ROOT

DIABETES = {
    "title": "Diabetes progression (scikit-learn)",
    "licence": "BSD-3-Clause (scikit-learn)",
    "source": "sklearn.datasets:load_diabetes",
    "loader": "bnnrepro.data.tabular:load",
    "options": {"return_X_y": True},
}


@pytest.fixture
def write_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """`write(registry)` makes a project whose config/datasets.yaml is `registry` (a dict) the registry's."""

    def write(raw: dict) -> Path:
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config/datasets.yaml").write_text(yaml.safe_dump(raw))
        monkeypatch.setenv("BNNREPRO_ROOT", str(tmp_path))
        registry._registry.cache_clear()
        return tmp_path

    yield write
    registry._registry.cache_clear()


def test_a_misspelt_field_is_named_with_the_valid_fields(write_registry) -> None:
    write_registry({"packaged": {"diabetes": {**DIABETES, "lodaer": DIABETES["loader"]}}})
    with pytest.raises(RegistryError, match=r"packaged\.diabetes: unknown field\(s\) 'lodaer'; valid fields: title"):
        dataset("diabetes")


def test_a_missing_field_names_the_required_ones(write_registry) -> None:
    write_registry({"generated": {"mine": {"title": "t", "generator": "bnnrepro.data.spirals:generate"}}})
    with pytest.raises(RegistryError, match=r"generated\.mine: 'data_keys' is a required property"):
        dataset("mine")


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("bnnrepro.data.tabular:lod", "defines no 'lod' at its top level"),
        ("bnnrepro.data.tabulr:load", "'bnnrepro.data.tabulr' is not installed or does not exist"),
        ("nopackage.data:load", "'nopackage.data' is not installed or does not exist"),
    ],
)
def test_a_function_reference_that_does_not_resolve_is_named(write_registry, reference: str, why: str) -> None:
    write_registry({"packaged": {"diabetes": {**DIABETES, "loader": reference}}})
    with pytest.raises(RegistryError, match=f"diabetes.loader = {reference}: .*{why}"):
        check_references()


def test_the_projects_registry_resolves() -> None:
    check_references()


def test_a_packaged_dataset_is_prepared_and_split_by_dataset_split(write_registry, tmp_path: Path) -> None:
    write_registry({"packaged": {"diabetes": DIABETES}})
    entry = dataset("diabetes")
    assert prepared_file("diabetes", "smoke") == prepared_file("diabetes", "paper") == "results/data/diabetes.npz"
    out = tmp_path / "diabetes.npz"
    tabular.prepare_packaged(entry, out)
    x, y = load_diabetes(return_X_y=True)
    config = {"name": "diabetes", "path": str(out), "split": 3, "train_fraction": 0.8, "val_fraction": 0.1}
    splits = load_splits({**config, "standardize": True})
    assert [len(splits.y(s)) for s in ("train", "val", "test")] == [353, 44, 45]  # floor(0.8 N), round(0.1 N), rest
    order = np.arange(len(y))
    np.random.RandomState(3).shuffle(order)  # split K is the UDN code's RandomState(K) permutation
    train = order[:353]
    np.testing.assert_allclose(splits.y("test")[:, 0] * y[train].std() + y[train].mean(), y[order[397:]], rtol=1e-5)
    np.testing.assert_allclose(splits.x("train").mean(0), 0, atol=1e-5)
    raw = load_splits({**config, "standardize": False})
    np.testing.assert_allclose(raw.x("val"), x[order[353:397]], rtol=1e-6)
    other = load_splits({**config, "split": 4, "standardize": False})
    assert not np.array_equal(raw.y("test"), other.y("test"))


def test_a_csv_download_is_prepared_with_its_target_column(tmp_path: Path) -> None:
    (tmp_path / "wine.csv").write_text("acidity;sugar;quality\n7.4;1.9;5\n7.8;2.6;6\n")
    csv_tables.prepare_csv(tmp_path, tmp_path / "wine.npz", file="wine.csv", target="quality", delimiter=";")
    with np.load(tmp_path / "wine.npz") as data:
        np.testing.assert_array_equal(data["x"], [[7.4, 1.9], [7.8, 2.6]])
        np.testing.assert_array_equal(data["y"], [5, 6])
    wrong_target = "no column 'qualty' for the target; its columns are 'acidity', 'sugar', 'quality'"
    with pytest.raises(ValueError, match=wrong_target):
        csv_tables.prepare_csv(tmp_path, tmp_path / "bad.npz", file="wine.csv", target="qualty", delimiter=";")


def test_an_r_write_csv_export_drops_its_row_names(tmp_path: Path) -> None:
    # R's write.csv (the MASS exports): an empty first header field and a quoted row name starting each row
    (tmp_path / "Boston.csv").write_text('"","crim","zn","medv"\n"1",0.00632,18,24\n"2",0.02731,0,21.6\n')
    csv_tables.prepare_csv(tmp_path, tmp_path / "boston.npz", file="Boston.csv", target="medv")
    with np.load(tmp_path / "boston.npz") as data:
        np.testing.assert_array_equal(data["x"], [[0.00632, 18], [0.02731, 0]])
        np.testing.assert_array_equal(data["y"], [24, 21.6])


WINE = "id;acidity;sugar;alcohol;quality\n1;7.4;1.9;9.4;5\n2;7.8;2.6;9.8;6\n"


@pytest.mark.parametrize(
    ("selection", "x"),
    [
        ({"features": ["alcohol", "acidity"]}, [[9.4, 7.4], [9.8, 7.8]]),
        ({"drop": ["id"]}, [[7.4, 1.9, 9.4], [7.8, 2.6, 9.8]]),
        ({}, [[1, 7.4, 1.9, 9.4], [2, 7.8, 2.6, 9.8]]),  # a named column is a feature unless dropped
    ],
)
def test_a_csv_download_keeps_the_feature_columns_it_names(tmp_path: Path, selection: dict, x: list) -> None:
    (tmp_path / "wine.csv").write_text(WINE)
    csv_tables.prepare_csv(
        tmp_path, tmp_path / "wine.npz", file="wine.csv", target="quality", delimiter=";", **selection
    )
    with np.load(tmp_path / "wine.npz") as data:
        np.testing.assert_array_equal(data["x"], x)


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (
            {"features": ["acidity", "sugr"]},
            r"wine.csv: no feature column\(s\) 'sugr'; available columns .*: id, acidity, sugar",
        ),
        ({"drop": ["ID", "quality"]}, r"no feature column\(s\) 'ID', 'quality'; available columns \(the target is not"),
        ({"features": ["sugar"], "drop": ["id"]}, r"wine.csv: give `features` .* or `drop` .*, not both"),
    ],
)
def test_a_csv_column_selection_names_unknown_columns(tmp_path: Path, selection: dict, message: str) -> None:
    (tmp_path / "wine.csv").write_text(WINE)
    with pytest.raises(ValueError, match=message):
        csv_tables.prepare_csv(
            tmp_path, tmp_path / "w.npz", file="wine.csv", target="quality", delimiter=";", **selection
        )


def csv_download(standin_shape: list[int] | None) -> dict:
    """A registry entry of a CSV download of wine.csv (with standin_shape when given)."""
    entry = {
        "title": "Wine",
        "url": "https://example.org/",
        "mirror_path": "wine/",
        "licence": "CC BY 4.0",
        "format": "CSV",
        "files": [{"name": "wine.csv", "md5": "0" * 32}],
        "prepare": "bnnrepro.data.csv_tables:prepare_csv",
        "loader": "bnnrepro.data.tabular:load",
        "standin": "bnnrepro.data.tabular:standin",
        "options": {"file": "wine.csv", "target": "quality", "delimiter": ";"},
    }
    return entry if standin_shape is None else {**entry, "standin_shape": standin_shape}


@pytest.mark.parametrize("standin_shape", [[2, 3], [1000, 4]])
def test_a_standin_shape_that_is_not_the_real_datas_stops_the_prepare_step(
    write_registry, tmp_path: Path, standin_shape: list[int]
) -> None:
    root = write_registry({"downloads": {"wine": csv_download(standin_shape)}})
    (tmp_path / "wine.csv").write_text(WINE)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"config/datasets.yaml: dataset 'wine' declares standin_shape: {standin_shape} (rows, features), but its "
            "prepared data has shape [2, 4]; set standin_shape: [2, 4]"
        ),
    ):
        csv_tables.prepare_csv(
            tmp_path, root / dataset("wine").prepared_file(standin=False), **csv_download(None)["options"]
        )


@pytest.mark.parametrize("standin_shape", [[2, 4], None])
def test_a_standin_shape_of_the_real_data_or_none_passes(write_registry, tmp_path: Path, standin_shape) -> None:
    root = write_registry({"downloads": {"wine": csv_download(standin_shape)}})
    (tmp_path / "wine.csv").write_text(WINE)
    out = root / dataset("wine").prepared_file(standin=False)
    csv_tables.prepare_csv(tmp_path, out, **csv_download(None)["options"])
    assert out.is_file()


def test_every_download_with_a_standin_shape_is_checked_when_prepared() -> None:
    # prepare_csv checks a declared standin_shape against the real data: one on a download prepared otherwise
    # would go unchecked
    for entry in registry.downloads():
        if entry.standin_shape is not None:
            assert entry.prepare == "bnnrepro.data.csv_tables:prepare_csv", entry.name


def test_the_udn_uci_protocol_is_the_tabular_rule() -> None:
    rows = tabular.seeded_split(506, 7, 0.8, 0.1)
    # boston's 80/10/10 in the UDN authors' code (`ANazaret/unbounded-depth-neural-networks`,
    # `experiments/load_data.py`; App. B.4)
    assert [len(r) for r in rows] == [404, 51, 51]


def test_a_generated_instance_records_its_values_and_a_run_asking_for_others_stops(tmp_path: Path) -> None:
    path = tmp_path / "omega=2+seed=5.npz"
    generate_instance("spirals", "omega=2+seed=5", path)
    with np.load(path) as data:
        recorded = json.loads(str(data["generated_with"]))
    assert recorded == {"omega": 2, "n_train": 1024, "n_val": 1024, "n_test": 1024, "noise_std": 0.02, "seed": 5}
    splits = load_splits({"name": "spirals", "path": str(path), "omega": 2.0, "noise_std": 0.02})
    assert "generated_with" not in splits.arrays
    with pytest.raises(RegistryError, match=r"asks for dataset\.omega=3 \(the file's: 2\).*omega=3\+seed=5\.npz"):
        load_splits({"name": "spirals", "path": str(path), "omega": 3})


def test_a_missing_data_file_names_the_snakemake_target(tmp_path: Path) -> None:
    missing = tmp_path / "results/data/spirals/omega=9+seed=0.npz"
    with pytest.raises(FileNotFoundError, match=re.escape(f"snakemake --cores 1 {missing}")):
        load_splits({"name": "spirals", "path": str(missing)})


def test_real_data_below_paper_is_a_setting_of_its_own() -> None:
    run = next(run for run in load_study("sdebnn_images").runs("smoke") if run.dataset == "mnist")
    assert run.data_file() == "results/data/mnist-standin.npz"
    assert run.data_file(["mnist"]) == run.data_file("all") == "results/data/mnist.npz"
    assert run.data_file(["cifar10"]) == "results/data/mnist-standin.npz"
    paper = next(run for run in load_study("sdebnn_images").runs("paper") if run.dataset == "mnist")
    assert paper.data_file() == "results/data/mnist.npz"
    with pytest.raises(RegistryError, match="'mnsit' is no download"):
        check_real_data(["mnsit"])


def test_a_dataset_without_protocol_files_takes_its_tasks_defaults_or_names_the_files_to_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = load_study("sdebnn_toy").runs("smoke")
    check_protocol_files(runs, "smoke")
    other = [type(run)(**{**run.__dict__, "dataset": "svhn"}) for run in runs[:1]]
    check_protocol_files(other, "smoke")  # svhn has none of its own: the defaults of classification
    assert run_protocol_file("svhn", "smoke").name == "classification_smoke.yaml"
    assert protocol_override("svhn", "smoke") == ["protocol=classification_smoke"]
    assert protocol_override("sdebnn_toy", "smoke") == []  # its own file is Hydra's default
    shutil.copytree(ROOT / "config", tmp_path / "config")
    (tmp_path / "config/train/protocol/classification_smoke.yaml").unlink()
    monkeypatch.setenv("BNNREPRO_ROOT", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="add config/train/protocol/svhn_smoke.yaml, .*_paper.yaml"):
        check_protocol_files(other, "smoke")


def test_paths_with_equals_signs_need_no_hydra_quoting() -> None:
    path = "results/data/spirals/omega=4+seed=0.npz"
    assert quote_path_values([f"dataset.path={path}", "dataset.omega=4", "run_dir='a=b'"]) == [
        f"dataset.path='{path}'", "dataset.omega=4", "run_dir='a=b'"
    ]  # fmt: skip
    cfg = compose_config(["dataset=spirals", f"dataset.path={path}", "run_dir=results/smoke/x/lr=0.1+seed=0"])
    assert cfg.dataset.path == path and cfg.run_dir == "results/smoke/x/lr=0.1+seed=0"
    with pytest.raises(Exception, match="must be quoted for Hydra: key='value'"):
        compose_config(["dataset=spirals", "dataset.omega=a=b", "run_dir=x"])


def test_a_protocol_file_without_its_package_line_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without '# @package _global_' Hydra files a protocol's settings under `protocol:` and the run ignores them."""
    protocol = tmp_path / "config/train/protocol"
    protocol.mkdir(parents=True)
    (protocol / "sdebnn_toy_smoke.yaml").write_text("train: {epochs: 3}\n")
    monkeypatch.setenv("BNNREPRO_ROOT", str(tmp_path))
    with pytest.raises(ValueError, match="sdebnn_toy_smoke.yaml: its first line must be '# @package _global_'"):
        check_protocol_files(load_study("sdebnn_toy").runs("smoke"), "smoke")

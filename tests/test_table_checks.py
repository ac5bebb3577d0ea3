"""Bad tables refused when prepared (bnnrepro.data.table_checks), each error naming the file, the column and the fix;
the same table without the fault prepares (the control). Before these checks, a NaN cell was prepared and trained
on, a text column failed as "could not convert string to float" without its column or file, and a repeated header
name was renamed by pandas in silence."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnnrepro.data import csv_tables, tabular
from bnnrepro.data.registry import PackagedDataset
from bnnrepro.data.table_checks import TableError, numeric_arrays

CLEAN = "region,year,size,price\n1,2001,50,100\n2,2002,70,150\n1,2003,65,130\n2,2004,80,170\n"


def prepared(tmp_path: Path, text: str, **options: object) -> np.lib.npyio.NpzFile:
    (tmp_path / "homes.csv").write_text(text)
    out = tmp_path / "homes.npz"
    csv_tables.prepare_csv(tmp_path, out, file="homes.csv", **({"target": "price"} | options))
    return np.load(out)


def test_a_clean_table_prepares(tmp_path: Path) -> None:
    arrays = prepared(tmp_path, CLEAN)
    assert arrays["x"].shape == (4, 3) and arrays["y"].tolist() == [100, 150, 130, 170]


@pytest.mark.parametrize(
    ("text", "options", "named"),
    [
        # a missing cell: its column and line (the header is line 1)
        (CLEAN.replace("65,130", "65,"), {}, ["'price'", "line(s) 4", "does not impute"]),
        (CLEAN.replace("2002,70", "2002,"), {}, ["feature column 'size'", "line(s) 3", "delete those rows"]),
        # a text feature: the value, its line and the fix
        (CLEAN.replace("2,2004", "east,2004"), {}, ["'region' is not numeric", "'east' on line 5", "drop: [region]"]),
        # a misspelt target
        (CLEAN, {"target": "prize"}, ["no column 'prize'", "'price'", "set `target:`"]),
        # a repeated header name (pandas would call the second one size.1)
        (CLEAN.replace("year,size", "size,size"), {}, ["'size' more than once", "rename"]),
        # a constant feature
        (CLEAN.replace(",50,", ",70,").replace(",65,", ",70,").replace(",80,", ",70,"), {}, ["'size' has one value"]),
    ],
)
def test_a_faulty_table_is_refused_naming_file_column_and_fix(
    tmp_path: Path, text: str, options: dict, named: list[str]
) -> None:
    with pytest.raises(TableError) as error:
        prepared(tmp_path, text, **options)
    message = str(error.value)
    assert "dataset 'homes'" in message and str(tmp_path / "homes.csv") in message
    assert all(part in message for part in named), message
    assert not (tmp_path / "homes.npz").exists()


def test_a_json_table_prepares_as_the_same_csv_and_is_checked_alike(tmp_path: Path) -> None:
    csv = prepared(tmp_path, CLEAN)
    rows = pd.read_csv(io.StringIO(CLEAN)).to_dict(orient="records")
    (tmp_path / "homes.json").write_text(json.dumps(rows))
    csv_tables.prepare_csv(tmp_path, tmp_path / "homes.npz", file="homes.json", target="price")
    arrays = np.load(tmp_path / "homes.npz")
    assert all(np.array_equal(arrays[key], csv[key]) for key in ("x", "y"))
    rows[2]["size"] = None  # the row of line 4, had it been the CSV
    (tmp_path / "homes.json").write_text(json.dumps(rows))
    with pytest.raises(TableError, match=r"feature column 'size' has no value on line\(s\) 4"):
        csv_tables.prepare_csv(tmp_path, tmp_path / "faulty.npz", file="homes.json", target="price")


@pytest.mark.skipif(
    any(importlib.util.find_spec(engine) for engine in ("pyarrow", "fastparquet")), reason="a parquet engine is here"
)
def test_a_format_whose_reader_package_is_missing_is_refused_naming_the_package(tmp_path: Path) -> None:
    (tmp_path / "homes.parquet").write_bytes(b"PAR1")
    with pytest.raises(TableError) as error:
        csv_tables.prepare_csv(tmp_path, tmp_path / "homes.npz", file="homes.parquet", target="price")
    message = str(error.value)
    assert "dataset 'homes'" in message and "homes.parquet" in message and "pyarrow" in message
    assert "save the table as CSV" in message


def test_a_packaged_table_with_a_missing_value_is_refused(tmp_path: Path) -> None:
    x, y = np.arange(12.0).reshape(4, 3), np.array([1.0, 2.0, 3.0, 4.0])
    assert numeric_arrays(x, y, "toy", "pkg:load")[0].shape == (4, 3)  # the control
    x[2, 1] = np.nan
    with pytest.raises(TableError, match=r"dataset 'toy' \(pkg:load\): feature column 1 .* first in row 2"):
        numeric_arrays(x, y, "toy", "pkg:load")
    with pytest.raises(TableError, match="not numeric"):
        numeric_arrays(np.array([["a", "b"], ["c", "d"]]), np.array([1.0, 2.0]), "toy", "pkg:load")


def table_with_a_constant_column() -> tuple[np.ndarray, np.ndarray]:
    """A package's table whose first feature is the same in every row."""
    return np.column_stack([np.ones(5), np.arange(5.0)]), np.arange(5.0) ** 2


def test_a_packaged_dataset_is_checked_when_prepared(tmp_path: Path) -> None:
    entry = PackagedDataset(
        name="constant", title="", licence="", source="tests.test_table_checks:table_with_a_constant_column",
        loader="bnnrepro.data.tabular:load",
    )  # fmt: skip
    with pytest.raises(TableError, match="dataset 'constant' .*feature column 0 has one value"):
        tabular.prepare_packaged(entry, tmp_path / "constant.npz")
    assert not (tmp_path / "constant.npz").exists()


LABELLED = "size,price,kind\n50,100,flat\n70,150,house\n65,130,flat\n80,170,villa\n"


def test_a_classification_table_keeps_its_classes_as_indices_with_their_names(tmp_path: Path) -> None:
    arrays = prepared(tmp_path, LABELLED, target="kind", task="classification")
    assert arrays["y"].dtype == np.int64 and arrays["y"].tolist() == [0, 1, 0, 2]  # sorted: flat, house, villa
    assert arrays["class_names"].tolist() == ["flat", "house", "villa"]
    declared = prepared(
        tmp_path, LABELLED, target="kind", task="classification", class_labels=["villa", "house", "flat"]
    )
    assert declared["y"].tolist() == [2, 1, 2, 0]  # the declared order decides the indices
    named = prepared(tmp_path, CLEAN, target="region", task="classification", class_labels={1: "north", 2: "south"})
    assert named["y"].tolist() == [0, 1, 0, 1] and named["class_names"].tolist() == ["north", "south"]
    # the control: the same column as a regression target stays a number
    assert prepared(tmp_path, CLEAN, target="region")["y"].dtype == np.float64


@pytest.mark.parametrize(
    ("text", "options", "named"),
    [
        (LABELLED, {"class_labels": ["flat", "house"]}, ["'villa'", "does not declare", "class_labels"]),
        (LABELLED.replace("house", "flat").replace("villa", "flat"), {}, ["1 class(es)", "two or more"]),
        (LABELLED.replace("70,150,house", "70,150,"), {}, ["the target column 'kind'", "line(s) 3"]),
    ],
)
def test_a_faulty_classification_target_is_refused(tmp_path: Path, text: str, options: dict, named: list[str]) -> None:
    with pytest.raises(TableError) as error:
        prepared(tmp_path, text, target="kind", task="classification", **options)
    assert all(part in str(error.value) for part in named), str(error.value)


def test_a_classification_standin_has_the_declared_classes(tmp_path: Path) -> None:
    from bnnrepro.data.registry import Download

    entry = Download(name="homes", title="", url="", mirror_path="", licence="", format="", files=(), prepare="",
                     loader="", standin="", standin_shape=(60, 3), task="classification",
                     class_labels=["low", "mid", "high"])  # fmt: skip
    tabular.standin(entry, tmp_path / "homes-standin.npz")
    arrays = np.load(tmp_path / "homes-standin.npz")
    assert arrays["class_names"].tolist() == ["low", "mid", "high"] and set(arrays["y"].tolist()) == {0, 1, 2}


@pytest.mark.slow
def test_a_misspelt_target_of_a_fetched_csv_stops_the_workflow_before_any_job(tmp_path: Path) -> None:
    """The CSV is at hand (fetched before): its header is checked when the DAG is built, not in the first job."""
    from bnnrepro import layout
    from tests.conftest import copy_project, csv_download_entry, run

    project = copy_project(tmp_path / "project")
    raw = project / layout.raw_download_folder("homes")
    raw.mkdir(parents=True)
    (raw / "homes.csv").write_text(CLEAN)
    registry_file = project / "config/datasets.yaml"
    registry = registry_file.read_text()
    (project / "config/train/dataset/homes.yaml").write_text("defaults: [tabular, _self_]\nname: homes\n")
    study = "paper: own\ngrids:\n  main: {method: [mc_dropout], dataset: [homes], dataset.split: [0], seed: [0]}\n"
    (project / "config/studies/homes.yaml").write_text(study)
    dry_run = ["snakemake", "-n", "--config", "studies=[homes]", "scale=smoke"]
    for target, fails in (("prize", True), ("price", False)):  # the control: the column the file has
        entry = csv_download_entry("homes", target, CLEAN.encode())
        registry_file.write_text(registry.replace("downloads:\n", "downloads:\n" + entry, 1))
        result = run(dry_run, project, check=False)
        assert (result.returncode != 0) == fails, (result.stdout + result.stderr)[-2000:]
        if fails:
            output = result.stdout + result.stderr
            assert "no column 'prize' for the target" in output and "homes.csv" in output, output[-2000:]
    assert (raw / "homes.csv").read_text() == CLEAN  # nothing lost

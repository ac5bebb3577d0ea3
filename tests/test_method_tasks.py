"""A study that pairs a method with data of a task it does not take is an error when the workflow checks the study
(bnnrepro.pipeline.studies.check_overrides, before any job runs), naming the study file, the method, the dataset, its
task and the fix; the committed studies pass the check at every scale."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from bnnrepro.data.registry import dataset_config
from bnnrepro.methods import METHOD_MODULES
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline import method_tasks as method_tasks_module
from bnnrepro.pipeline import studies
from bnnrepro.pipeline.method_tasks import (
    KNOWN_TASKS,
    method_configs,
    method_tasks,
    methods_taking,
    task_table,
    why_not,
)
from bnnrepro.pipeline.studies import task_mismatch
from bnnrepro.train_configs import SCALES, dataset_task
from tests.conftest import ROOT


def test_every_method_declares_the_tasks_it_takes() -> None:
    declared = method_tasks()
    assert set(declared) == set(METHOD_MODULES)
    assert all(tasks and set(tasks) <= set(KNOWN_TASKS) for tasks in declared.values()), declared
    assert declared["mc_dropout"] == ("classification", "regression")
    assert {declared[name] for name in ("laplace", "gp", "deep_ensemble", "mfvi")} == {("regression",)}
    assert declared["bedl"] == ("classification", "regression") and declared["edl"] == ("classification",)
    assert declared["repulsive_ensemble"] == ("classification", "regression", "sampling")
    assert methods_taking("forecasting") == ["bnsde"]


def test_a_module_without_tasks_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(method_tasks_module, "_declarations", lambda module: {})
    with pytest.raises(ValueError, match=r"declares no TASKS: add `TASKS = \(\.\.\.\)`"):
        method_tasks_module.method_tasks()


def test_the_table_of_methods_by_task_on_a_table_marks_each_declared_task_and_says_why_not() -> None:
    table = task_table().splitlines()
    header = "| method | configs for a table | module | classification | regression | not on a table |"
    assert table[0] == header
    assert "| `bnsde` |  | `bnnrepro.methods.bnsde` |  |  | `bnsde`: takes forecasting data only |" in table
    assert "| `edl` | `edl` | `bnnrepro.methods.evidential` | yes |  |  |" in table
    odenet = next(row for row in table if row.startswith("| `odenet` |"))
    assert "| `odenet` |" in odenet and "`odenet_mnist`" in odenet.rsplit("|", 2)[1]  # its image configs: why not
    assert len(table) == 2 + len(METHOD_MODULES)


def test_every_method_has_a_config_a_study_can_name_and_every_config_names_a_method() -> None:
    """The table names configs, not the modules' method names: `hyperodenet` is no config (its configs are
    `hyperodenet_mnist` and `hyperodenet_cifar10`); a config whose chain of defaults names no method (the repulsive
    ensembles' shared `posterior_network`) is not in it."""
    configs = method_configs()
    assert set(configs) == set(METHOD_MODULES)
    assert configs["hyperodenet"] == ["hyperodenet_cifar10", "hyperodenet_mnist"]
    named = {config for names in configs.values() for config in names}
    on_disk = {path.stem for path in (train_config_dir() / "method").glob("*.yaml")}
    assert on_disk - named == {"posterior_network"}
    assert "hyperodenet" not in on_disk


def test_a_datasets_task_is_its_merged_configs() -> None:
    for path in (train_config_dir() / "dataset").glob("*.yaml"):
        assert dataset_task(path.stem) == dataset_config(path.stem)["task"], path.name


def test_a_classification_method_on_regression_data_is_refused_before_any_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "config", tmp_path / "config")
    monkeypatch.setenv("BNNREPRO_ROOT", str(tmp_path))
    study_file = tmp_path / "config/studies/dropout_on_uci.yaml"
    study_file.write_text(
        yaml.safe_dump(
            {
                "paper": "own",
                "grids": {"uci": {"method": ["edl"], "dataset": ["uci_boston"], "seed": [0]}},
                "method_variants": {"edl": {"method": "edl"}},
            }
        )
    )
    study = studies.load_study.__wrapped__("dropout_on_uci")
    with pytest.raises(studies.StudyError) as error:
        studies.check_overrides(study, ["smoke"])
    assert str(error.value) == (
        "config/studies/dropout_on_uci.yaml: method 'edl' takes classification data only ("
        + why_not("edl", "regression")
        + "), but dataset 'uci_boston' is regression (grid uci); remove the pair from the grid or pick a method that "
        "takes regression: " + ", ".join(methods_taking("regression"))
    )
    assert "udn" in methods_taking("regression") and "edl" not in methods_taking("regression")


@pytest.mark.parametrize("name", studies.available_studies())
def test_every_committed_study_pairs_each_method_with_data_it_takes(name: str) -> None:
    study = studies.load_study(name)
    for scale in SCALES:
        assert task_mismatch(study, study.runs(scale)) is None

"""A study that pairs a method with data of a task it does not take is an error when the workflow checks the study
(bnnrepro.pipeline.studies.check_overrides, before any job runs), naming the study file, the method, the dataset, its
task and the fix; the committed studies pass the check at every scale."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from bnnrepro.data.registry import dataset_config
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline import studies
from bnnrepro.pipeline.method_tasks import dataset_task, method_tasks
from bnnrepro.pipeline.studies import task_mismatch
from bnnrepro.train_configs import SCALES
from tests.conftest import ROOT


def test_the_task_restricted_methods_declare_their_tasks() -> None:
    declared = method_tasks()
    assert declared["mc_dropout"] == ("classification",)
    assert {declared[name] for name in ("laplace", "gp", "deep_ensemble", "mfvi")} == {("regression",)}
    assert declared["udn"] is None  # a module without TASKS takes any task


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
                "grids": {"uci": {"method": ["mc_dropout"], "dataset": ["uci_boston"], "seed": [0]}},
                "method_variants": {"mc_dropout": {"method": "mc_dropout"}},
            }
        )
    )
    study = studies.load_study.__wrapped__("dropout_on_uci")
    with pytest.raises(studies.StudyError) as error:
        studies.check_overrides(study, ["smoke"])
    assert str(error.value) == (
        "config/studies/dropout_on_uci.yaml: method 'mc_dropout' takes classification data only, but dataset "
        "'uci_boston' is regression (grid uci); remove the pair from the grid or pick a method that takes regression"
    )


@pytest.mark.parametrize("name", studies.available_studies())
def test_every_committed_study_pairs_each_method_with_data_it_takes(name: str) -> None:
    study = studies.load_study(name)
    for scale in SCALES:
        assert task_mismatch(study, study.runs(scale)) is None

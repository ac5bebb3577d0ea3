"""The table of methods by task on a table (docs/own_data.md, `bnnrepro.pipeline.method_tasks.task_table`) promises
only what runs: every config it lists trains at smoke scale, through the training job, on a small table of each task
it marks, registered in a copy of the project as a user registers theirs (a packaged classification table with its
class names, a packaged regression table); and a config it says does not train on a table is refused when a study
is checked, before any job."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bnnrepro.data import registry
from bnnrepro.data.tabular import prepare_packaged
from bnnrepro.pipeline.method_tasks import TABLE_TASKS, method_tasks, table_configs, table_error
from bnnrepro.train import main as train_main
from tests.conftest import copy_project

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TABLES = {
    "classification": ("sklearn_wine", "sklearn.datasets:load_wine", "tabular_classification"),
    "regression": ("sklearn_diabetes", "sklearn.datasets:load_diabetes", "tabular"),
}
"""task: (dataset, its source, the shared training config its own extends)."""
REGISTRY_ENTRY = """  {name}:
    title: {name}, as scikit-learn ships it
    licence: BSD-3-Clause (scikit-learn)
    source: {source}
    loader: bnnrepro.data.tabular:load
    task: {task}
"""
PAIRS = [
    (config, task)
    for method, configs in table_configs().items()
    for config in configs
    for task in TABLE_TASKS
    if task in method_tasks()[method]
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{task: the prepared table} in a copy of the project whose registry holds both tables (BNNREPRO_ROOT)."""
    project = copy_project(tmp_path_factory.mktemp("tables") / "project", dag_record=False)
    entries = "".join(REGISTRY_ENTRY.format(name=n, source=s, task=t) for t, (n, s, _) in TABLES.items())
    registry_file = project / "config/datasets.yaml"
    registry_file.write_text(registry_file.read_text() + "\npackaged:\n" + entries)
    for name, _, shared in TABLES.values():
        (project / f"config/train/dataset/{name}.yaml").write_text(f"defaults: [{shared}, _self_]\nname: {name}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BNNREPRO_ROOT", str(project))
        registry._registry.cache_clear()
        prepared = {}
        for task, (name, *_) in TABLES.items():
            prepared[task] = project / f"results/data/{name}.npz"
            prepare_packaged(registry.dataset(name), prepared[task])
        yield prepared
    registry._registry.cache_clear()


@pytest.mark.slow
@pytest.mark.parametrize(("config", "task"), PAIRS, ids=[f"{c}-{t}" for c, t in PAIRS])
def test_every_listed_config_trains_on_a_table_of_each_task_it_takes(
    config: str, task: str, tables: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BNNREPRO_ROOT", str(tables[task].parents[2]))
    name = TABLES[task][0]
    train_main([f"method={config}", f"dataset={name}", f"dataset.path={tables[task]}", f"run_dir={tmp_path}",
                "scale=smoke", f"protocol={task}_smoke", "device=cpu"])  # fmt: skip
    result = json.loads((tmp_path / "metrics.json").read_text())
    recorded = "test_accuracy" if task == "classification" else "test_rmse_original"
    assert math.isfinite(result["metrics"][recorded]) and result["health"]["status"] != "error", result["health"]


def test_the_classification_table_keeps_its_classes_and_their_names(tables: dict[str, Path]) -> None:
    splits = registry.load_splits(
        {"name": "sklearn_wine", "path": str(tables["classification"]), "split": 0, "train_fraction": 0.8,
         "val_fraction": 0.1, "standardize": True}
    )  # fmt: skip
    assert splits.y("train").dtype.kind == "i" and splits.y("train").ndim == 1
    assert sorted(set(splits.y("train").tolist())) == [0, 1, 2]
    assert list(splits.arrays["class_names"]) == ["class_0", "class_1", "class_2"]
    assert splits.spec("classification").num_classes == 3


def test_a_config_the_table_refuses_is_refused_on_a_table_and_not_on_images() -> None:
    assert "image network" in table_error("odenet_mnist", "uci_yacht")
    assert "odenet" in table_error("odenet_mnist", "uci_yacht").rsplit(":", 1)[1]  # the config that does
    assert "one path" in table_error("latent_sde", "uci_yacht")
    assert table_error("odenet", "uci_yacht") is None  # the control: the MLP config on the same table
    assert table_error("resnet32", "mnist") is None  # and the image config on images


def test_a_tables_training_config_must_agree_with_its_registry_entry_on_the_task(tables: dict[str, Path]) -> None:
    error = registry.table_task_error("sklearn_wine", "regression")  # as `defaults: [tabular, _self_]` would say
    assert "declares task classification" in error and "tabular_classification" in error
    assert registry.table_task_error("sklearn_wine", "classification") is None  # the control
    assert "declares task regression" in registry.table_task_error("sklearn_diabetes", "classification")
    assert registry.table_task_error("mnist", "classification") is None  # not a table of the tabular loader

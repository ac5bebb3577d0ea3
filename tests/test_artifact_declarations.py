"""The artifacts' declarations that the workflow reads at DAG time without importing the drawing code."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from bnnrepro import layout
from bnnrepro.artifacts import declarations as declarations_module
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.artifacts.registry import implementations
from bnnrepro.pipeline.sources import PACKAGE_DIR
from bnnrepro.train_configs import SCALES
from tests.conftest import copy_project, run
from tests.test_pipeline import scheduled_jobs


@pytest.mark.parametrize("scale", SCALES)
def test_declarations_say_what_the_registered_implementations_say(scale: str) -> None:
    declared = declarations(scale)
    drawn = implementations()
    assert declared.keys() == drawn.keys()
    for artifact_id, implementation in drawn.items():
        declaration = declared[artifact_id]
        assert declaration.stem == implementation.stem
        assert (declaration.output, declaration.uses) == (implementation.output, implementation.uses)
        assert declaration.module == implementation.draw.__module__
        assert PACKAGE_DIR / declaration.source_file == Path(inspect.getsourcefile(implementation.draw))
        assert (declaration.run_file, declaration.methods, declaration.datasets) == (
            implementation.run_file,
            implementation.methods,
            implementation.datasets,
        )
        expected_data = tuple(implementation.data_files(scale)) if implementation.data_files else ()
        assert declaration.data_files == expected_data


def test_declarations_are_recorded_until_a_config_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = copy_project(tmp_path / "project", dag_record=False)
    monkeypatch.setenv("BNNREPRO_ROOT", str(project))
    record = project / layout.DAG_CACHE
    declared = []
    real_declare = declarations_module._declare
    monkeypatch.setattr(declarations_module, "_declare", lambda scale: declared.append(scale) or real_declare(scale))
    first = declarations("smoke", record)
    assert declarations("smoke", record) == first and declared == ["smoke"]
    assert "artifacts/smoke" in json.loads(record.read_text())
    declarations("default", record)
    assert declared == ["smoke", "default"]
    registry = project / "config/datasets.yaml"
    registry.write_text(registry.read_text() + "\n# an edit\n")
    declarations("smoke", record)
    assert declared == ["smoke", "default", "smoke"]


def test_a_copied_project_plans_with_the_record_it_copied(tmp_path: Path) -> None:
    """The DAG-time record holds paths relative to the project (a declaration's file relative to the package): a
    copy made with `cp -a`, record included, plans the same jobs as the project it was copied from."""
    project = copy_project(tmp_path / "project")
    planned = run(["snakemake", "-n", "--config", "scale=smoke"], project).stdout
    assert not re.search(r'"/', (project / layout.DAG_CACHE).read_text())  # no absolute path: nothing names a place
    copy = tmp_path / "elsewhere" / "project"
    copy.parent.mkdir()
    run(["cp", "-a", str(project), str(copy)], tmp_path)
    assert scheduled_jobs(run(["snakemake", "-n", "--config", "scale=smoke"], copy).stdout) == scheduled_jobs(planned)

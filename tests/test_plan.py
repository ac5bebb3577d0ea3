"""The workflow's DAG as plain Python (bnnrepro.pipeline.plan), without Snakemake: every file a planned job reads is
a source file of the project or a result the plan makes; a configuration it cannot plan is an error naming the fix;
building a plan writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.paths import project_root
from bnnrepro.pipeline.plan import EXECUTION_SETTINGS, Plan, PlanError
from bnnrepro.pipeline.studies import StudyError, load_study
from bnnrepro.report import files as report_files
from tests.conftest import copy_project


def workflow_config(**changes) -> dict:
    """config/config.yaml as the workflow reads it, with `changes`."""
    return yaml.safe_load((project_root() / "config/config.yaml").read_text()) | changes


@pytest.fixture(scope="module")
def smoke_plan() -> Plan:
    return Plan.build(workflow_config(scale="smoke"))


def test_every_run_of_every_study_is_planned_with_its_outputs(smoke_plan: Plan) -> None:
    results = set(smoke_plan.result_files())
    for name, study in smoke_plan.studies.items():
        runs = study.runs("smoke")
        assert runs, name
        for run in runs:
            assert smoke_plan.runs[run.folder] == (study, run)
            assert {run.file(f) for f in layout.TRAINING_OUTPUTS.values()} <= results
            assert run.data_file(()) in results
    assert {report_files.REPORT_PDF, layout.report_manifest_file("smoke")} <= results


def is_source(path: str) -> bool:
    return (project_root() / path).is_file() and not path.startswith(("results/", "reports/"))


def test_every_file_a_planned_job_reads_is_a_source_or_a_planned_result(smoke_plan: Plan) -> None:
    """Training, evaluation and drawing jobs read source files (code, configs) or results of other planned jobs: a
    file neither is would be an input no job makes."""
    results = set(smoke_plan.result_files())
    for _, run in smoke_plan.runs.values():
        wildcards = SimpleNamespace(scale="smoke", run=run.folder_name)
        assert smoke_plan.run_data(wildcards) in results
        assert smoke_plan.train_code(wildcards) in results  # an input list, made by rule input_list
        listed = smoke_plan.listed_files(SimpleNamespace(name=Path(smoke_plan.train_code(wildcards)).stem))
        assert listed and all(is_source(f) for f in listed), listed
        assert all(is_source(f) for f in smoke_plan.train_configs(wildcards))
    for name in smoke_plan.drawn_studies():
        inputs = smoke_plan.drawing_inputs(name)
        assert all(is_source(f) for f in inputs["code"]), name
        assert inputs["configs"] in results
        missing = [f for f in inputs["results"] if f not in results and not is_source(f)]
        assert not missing, (name, missing[:3])
    assert set(smoke_plan.input_lists) >= {Path(f).stem for f in smoke_plan.job_input_lists()}


def test_the_report_config_leaves_out_where_jobs_compute(smoke_plan: Plan) -> None:
    shown = yaml.safe_load(smoke_plan.report_config().strip("'"))
    assert not set(EXECUTION_SETTINGS) & set(shown) and shown["scale"] == "smoke"


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"studies": ["udn_spiral"]}, "unknown study 'udn_spiral'; available studies: "),
        ({"studies": ["udn_uci"], "study_scales": {"udn_spirals": "paper"}}, "'udn_spirals' not among the enabled"),
        ({"datasets": ["uci_bostn"]}, "config 'datasets'"),
    ],
)
def test_a_configuration_it_cannot_plan_is_named(changes: dict, named: str) -> None:
    with pytest.raises(PlanError) as error:
        plan = Plan.build(workflow_config(scale="smoke", **changes))
        plan.prepared_datasets()
    assert named in str(error.value)


def test_a_run_the_plan_does_not_have_says_why_and_how_to_list_the_runs(smoke_plan: Plan) -> None:
    cases = [
        (SimpleNamespace(scale="paper", run="udn~0123abcd/spirals/default/seed=0"), "no study runs at scale 'paper'"),
        (SimpleNamespace(scale="smoke", run="udn~0123abcd/spirals/default/seed=0"), "has this run in its grid"),
    ]
    for wildcards, why in cases:
        with pytest.raises(PlanError) as error:
            smoke_plan.run_of(wildcards)
        assert why in str(error.value) and "python -m bnnrepro.fidelity targets" in str(error.value)
    with pytest.raises(PlanError, match="no job of this DAG reads that input list"):
        smoke_plan.listed_files(SimpleNamespace(name="train_code-0000"))


def test_two_studies_that_plan_one_run_folder_with_other_overrides_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Studies share a run folder where they plan the same run (bnnrepro.layout); grid keys that end alike
    (`train.epochs`, `method.epochs`) give one folder name to two different runs, which the plan refuses, naming
    both studies and the fix. The control: the same grids under one key share the folder."""
    project = copy_project(tmp_path / "project", dag_record=False)
    monkeypatch.setenv("BNNREPRO_ROOT", str(project))
    grid = "paper: own\ngrids:\n  main: {{method: [mc_dropout], dataset: [uci_yacht], {key}: [3], seed: [0]}}\n"
    (project / "config/studies/first.yaml").write_text(grid.format(key="train.epochs"))
    config = workflow_config(scale="smoke", studies=["first", "second"])
    (project / "config/studies/second.yaml").write_text(grid.format(key="train.epochs"))
    load_study.cache_clear()
    assert len(Plan.build(config, check_study_overrides=False).runs) == 1
    (project / "config/studies/second.yaml").write_text(grid.format(key="method.epochs"))
    load_study.cache_clear()
    with pytest.raises(PlanError, match="studies first and second both plan this run folder with other overrides"):
        Plan.build(config, check_study_overrides=False)


def test_a_study_named_like_the_run_folders_is_refused() -> None:
    with pytest.raises(StudyError, match="config/studies/runs.yaml: a study cannot be called 'runs'"):
        load_study("runs")


@pytest.mark.slow
def test_building_a_plan_writes_no_file() -> None:
    """The plan reads the configuration and changes nothing: no result, report, config or Snakemake record appears
    or changes (the DAG cache is written only where a record file is given)."""

    def snapshot() -> dict[str, int]:
        folders = [project_root() / name for name in ("results", "reports", "config", ".snakemake")]
        return {str(p): p.stat().st_mtime_ns for folder in folders for p in folder.rglob("*") if p.is_file()}

    before = snapshot()
    Plan.build(workflow_config(scale="default")).result_files()
    assert snapshot() == before


def test_checks_kept_in_the_dag_record_run_again_when_a_file_they_read_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The configuration checks that a no-op `snakemake -n` skips (they passed before on the same files: repeated
    YAML keys, the registry's references, each study's schema and grids) run again on an edit: a key given twice in
    a study file, and a misspelt key of a study, are caught with the record in place."""
    project = copy_project(tmp_path / "project", dag_record=False)
    monkeypatch.setenv("BNNREPRO_ROOT", str(project))
    record = tmp_path / "dag_cache.json"
    config = workflow_config(scale="smoke", studies=["udn_spirals"])
    Plan.build(config, record)
    assert {"checked:unique_keys", "checked:registry_references", "checked_study:udn_spirals"} <= set(
        json.loads(record.read_text())
    )
    study = project / "config/studies/udn_spirals.yaml"
    text = study.read_text()
    study.write_text(text + "paper: udn\n")
    with pytest.raises(PlanError, match="udn_spirals.yaml"):
        Plan.build(config, record)
    study.write_text(text.replace("\nmethod_variants:", "\nmethod_variant:"))
    load_study.cache_clear()  # each `snakemake` call is a new process
    with pytest.raises(PlanError, match="method_variant"):
        Plan.build(config, record)

"""The results layout: run paths round-trip through the parser, the workflow's rules make exactly the files the
layout names, and the DVC stages cache its folders."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.artifacts.registry import implementations
from bnnrepro.pipeline.studies import load_study
from bnnrepro.pipeline.training_inputs import training_code
from bnnrepro.report import files as report_files
from tests.conftest import ROOT, run

STUDY = "sdebnn_toy"  # its artifacts draw from training outputs (config.yaml) and from evaluations
EVALUATION = "toy_paths"


def test_a_run_file_round_trips_through_the_parser() -> None:
    runs = load_study(STUDY).runs("smoke")
    for study_run in runs:
        run_files = (*layout.TRAINING_OUTPUTS.values(), layout.RUN_LOG, layout.RUN_RESUME)
        for name in (*run_files, layout.evaluation_file(EVALUATION)):
            for prefix in (Path(), Path("/tmp/clone")):
                parsed = layout.parse_run_path(prefix / study_run.file(name))
                assert parsed.run == study_run.folder_name and parsed.run_id == study_run.id and parsed.file == name
                assert parsed.folder == prefix / study_run.folder
                assert parsed.scale_folder == prefix / layout.RESULTS / "smoke"
                assert parsed.sibling(layout.RUN_METRICS) == prefix / study_run.file(layout.RUN_METRICS)
    assert layout.parse_run_path(runs[0].folder).file == ""


def test_a_run_id_is_its_method_dataset_hyperparameters_and_seed() -> None:
    run_id = layout.run_id("udn", "spirals", "omega=2+lr=0.005", 3)
    assert run_id == "udn/spirals/omega=2+lr=0.005/seed=3"
    folder_name = layout.run_folder_name(run_id, "0123abcd")
    assert folder_name == "udn~0123abcd/spirals/omega=2+lr=0.005/seed=3"
    assert layout.parse_run_path(layout.run_file(layout.RUN_CONFIG, "paper", folder_name)).run_id == run_id


def test_a_run_folder_is_named_by_the_variants_overrides_not_by_the_study() -> None:
    """Two studies that give a method variant the same overrides plan the same run folder whatever their names; other
    overrides under the same variant name plan another (the control)."""
    study = load_study("udn_spirals")
    renamed = dataclasses.replace(study, name="spirals_again")
    assert [run.folder for run in renamed.runs("smoke")] == [run.folder for run in study.runs("smoke")]
    assert all(run.folder.startswith("results/smoke/runs/") for run in study.runs("smoke"))
    other = dataclasses.replace(study, common={"optim.weight_decay": 0.001})
    assert not {run.folder for run in other.runs("smoke")} & {run.folder for run in study.runs("smoke")}


@pytest.mark.parametrize("path", ["results/smoke/udn_spirals/metrics.csv", "results/smoke/runs/udn~0123abcd/spirals/x"])
def test_a_path_outside_a_run_folder_is_named(path: str) -> None:
    with pytest.raises(ValueError, match=f"{path} is not in a run folder"):
        layout.parse_run_path(path)


def test_evaluation_files_name_their_evaluation() -> None:
    assert layout.evaluation_name(layout.evaluation_file(EVALUATION)) == EVALUATION
    assert layout.evaluation_name(layout.RUN_METRICS) is None


def test_without_values_the_layout_gives_snakemake_patterns() -> None:
    assert layout.run_file(layout.RUN_METRICS) == "results/{scale}/runs/{run}/metrics.json"
    assert layout.run_file(layout.evaluation_file()) == "results/{scale}/runs/{run}/eval/{evaluation}.npz"
    assert report_files.artifact_files("table") == {e: f"reports/tables/{{stem}}.{e}" for e in ("csv", "md", "tex")}


def test_an_artifact_format_outside_the_layout_is_an_error() -> None:
    with pytest.raises(ValueError, match="a figure is written as pdf, png, not 'csv'"):
        report_files.artifact_file("figure", "csv", "udn_fig2")


def planned_jobs(dry_run: str) -> dict[str, list[dict[str, list[str]]]]:
    """The jobs of `snakemake -n` by rule, each with its `input` and `output` files."""
    jobs: dict[str, list[dict[str, list[str]]]] = {}
    job: dict[str, list[str]] = {}
    for line in map(str.strip, dry_run.splitlines()):
        if line.startswith("rule ") and line.endswith(":"):
            job = {"input": [], "output": []}
            jobs.setdefault(line[5:-1], []).append(job)
        elif line.startswith(("input: ", "output: ")):
            key, _, files = line.partition(": ")
            job[key] = [file.removesuffix(" (update)") for file in files.split(", ")]
    return jobs


def test_the_reports_layout_is_no_part_of_any_training_runs_code() -> None:
    """Naming a report file must leave every trained run's code digest alone (bnnrepro.fidelity.code_digest)."""
    study = load_study("uci_benchmark")
    code = {file for run in study.runs("smoke") for file in training_code(study, run)}
    assert "src/bnnrepro/layout.py" in code
    assert not [file for file in code if file.startswith("src/bnnrepro/report/")]


def test_the_rules_make_the_files_the_layout_names(project: Path) -> None:
    """A dry run asked for one file of each kind the layout names plans the rule that makes it; the report's
    manifest also reads the files of the functions it names by line."""
    study_run = next(r for r in load_study(STUDY).runs("smoke") if r.method == "sdebnn")
    made_by = {
        "fetch": layout.raw_download_folder("uci_yacht"),
        "prepare_download": layout.prepared_download_file("uci_yacht"),
        "standin": layout.prepared_download_file("uci_yacht", standin=True),
        "generate_data": study_run.data_file(),
        "train": study_run.file(layout.RUN_CHECKPOINT),
        "evaluate": study_run.file(layout.evaluation_file(EVALUATION)),
        "aggregate": layout.study_metrics_file("smoke", STUDY),
        f"draw_{STUDY}": report_files.artifact_file("figure", "png", "sdebnn_fig1"),
        "report_manifest": layout.report_manifest_file("smoke"),
        "report": report_files.REPORT_TYPST,
        "record_timestamps": layout.timestamps_file("smoke"),
    }
    config = ["--config", "scale=smoke", f"studies=[{STUDY}]", "datasets=[]"]
    targets = [*made_by.items(), (f"draw_{STUDY}", report_files.artifact_file("table", "tex", "sdebnn_table2"))]
    jobs = planned_jobs(run(["snakemake", "-n", *(t for _, t in targets), *config], project).stdout)
    for rule, target in targets:
        assert any(target in job["output"] for job in jobs.get(rule, [])), (rule, target, jobs.get(rule))
    train_outputs = {Path(f).name for f in jobs["train"][0]["output"]}
    assert train_outputs == set(layout.TRAINING_OUTPUTS.values())
    # the training job's code is one input list (bnnrepro.pipeline.input_lists), planned with the files it names as
    # inputs
    training = next(job for job in jobs["train"] if made_by["train"] in job["output"])
    code = [f for f in training["input"] if f.startswith(layout.INPUT_LISTS)]
    listing = [job for job in jobs["input_list"] if job["output"] == code]
    assert len(code) == 1 and {"src/bnnrepro/train.py", "src/bnnrepro/methods/continuous_depth.py"} <= set(
        listing[0]["input"]
    )

    draw_files = {
        f"src/{impl.draw.__module__.replace('.', '/')}.py"
        for impl in implementations().values()
        if impl.artifact_id in load_study(STUDY).artifacts
    }
    assert draw_files and draw_files <= set(jobs["report_manifest"][0]["input"])


def test_the_dvc_stages_cache_the_layouts_folders() -> None:
    report = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["report"]
    assert [next(iter(out)) for out in report["outs"]] == [layout.RESULTS, layout.REPORTS]
    fetch = yaml.safe_load((ROOT / "data/dvc.yaml").read_text())["stages"]["fetch"]["do"]
    assert fetch["outs"] == [layout.raw_download_folder("${key}")]

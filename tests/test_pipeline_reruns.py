"""The built smoke DAG (`built`, tests/conftest.py) after an edit: a changed code file, study config, config/train file
or evaluation declaration plans again exactly the jobs it affects, and nothing else (dry runs; each test puts the
edited file back as it was)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.methods import METHOD_MODULES, config_method_name
from bnnrepro.pipeline.sources import source_files
from bnnrepro.pipeline.studies import load_study
from tests.conftest import run
from tests.test_pipeline import planned_outputs, scheduled_jobs


def test_a_code_change_reruns_only_the_jobs_that_run_that_code(built: Path) -> None:
    module = built / "src/bnnrepro/artifacts/udn_spirals.py"
    original = module.read_text()
    module.write_text(original + "\n# an edit\n")
    try:
        jobs = scheduled_jobs(run(["snakemake", "-n"], built).stdout)
    finally:
        module.write_text(original)
    # the one job that draws udn_spirals' five figures and its table; no other study's drawing, no run
    assert jobs == {"draw_udn_spirals": 1, "report_manifest": 1, "report": 1, "record_timestamps": 1, "all": 1}


def test_a_method_code_change_reruns_exactly_the_runs_and_evaluations_that_run_it(built: Path) -> None:
    """Training and evaluation jobs declare the source files they run through input lists
    (bnnrepro.pipeline.input_lists): editing a method module remakes the lists that name it and plans again exactly
    the jobs that run it."""
    edited = "src/bnnrepro/methods/continuous_depth.py"
    runs = [run for name in yaml.safe_load((built / "config/config.yaml").read_text())["studies"]
            for run in load_study(name).runs("smoke")]  # fmt: skip
    running = {run.folder for run in runs if edited in job_code(run)}
    by_folder = {run.folder: run for run in runs}
    evaluations = [p.relative_to(built) for p in built.glob(f"results/smoke/runs/**/{layout.EVALUATIONS}/*.npz")]
    evaluating = {str(p) for p in evaluations if edited in job_code(by_folder[str(p.parent.parent)], p.stem)}
    naming = [p for p in (built / layout.INPUT_LISTS).glob("*.txt") if f"  {edited}\n" in p.read_text()]
    path = built / edited
    original, stat = path.read_text(), path.stat()
    path.write_text(original + "\n# an edit\n")
    try:
        planned = run(["snakemake", "-n"], built).stdout
    finally:
        path.write_text(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert len(running) == 28  # the SDE-BNNs and ODE nets: sdebnn_images' 18, sdebnn_solvers' 6, sdebnn_toy's 4
    assert {str(Path(f).parent) for f in planned_outputs(planned, "train")} == running
    assert evaluating and set(planned_outputs(planned, "evaluate")) == evaluating
    assert sorted(planned_outputs(planned, "input_list")) == sorted(str(p.relative_to(built)) for p in naming)
    assert "generate_data" not in scheduled_jobs(planned)


def job_code(run, evaluation: str | None = None) -> list[str]:
    """The source files that a run's training job, or its evaluation `evaluation`, runs."""
    method = load_study(run.study).method_variants[run.method]["method"]
    module = METHOD_MODULES[config_method_name(method)]
    if evaluation is None:
        return source_files("bnnrepro.train", module)
    return source_files("bnnrepro.evaluations.__main__", module, declared_evaluation(evaluation).code)


def test_a_changed_study_config_reruns_only_what_depends_on_it(built: Path) -> None:
    study_file = built / "config/studies/udn_spirals.yaml"
    original = study_file.read_text()
    study = yaml.safe_load(original)
    study["scales"]["smoke"]["lr_0.01"]["method"].append("finite_4")
    study_file.write_text(yaml.safe_dump(study))
    try:
        jobs = scheduled_jobs(run(["snakemake", "-n"], built).stdout)
    finally:
        study_file.write_text(original)
    assert jobs["train"] == 2  # finite_4 at the two smoke omegas; nothing else retrains
    assert "generate_data" not in jobs
    assert jobs["aggregate"] == 1 and jobs["report"] == 1


@pytest.mark.parametrize(
    ("config_file", "retrained", "regenerated"),
    [
        # the finite runs: udn_spirals' finite_3 at 2 omegas x 2 learning rates, udn_uci's f2, udn_images' finite_5
        # and uci_benchmark's finite at its 2 smoke splits
        ("config/train/method/finite.yaml", 8, 0),
        # every depth network (method files nest it): 10 of udn_spirals, 2 of udn_uci, 4 of udn_images, 2 of
        # uci_benchmark
        ("config/train/depth_generator/default.yaml", 18, 0),
        # every run of sdebnn_toy (7 models and the Laplace row), and its one data instance (seed=0), whose data keys
        # default to that file's values
        ("config/train/dataset/sdebnn_toy.yaml", 8, 1),
        ("config/train/protocol/spirals_smoke.yaml", 10, 0),  # every run of udn_spirals at smoke
    ],
)
def test_an_edited_train_config_reruns_exactly_the_runs_that_compose_it(
    built: Path, config_file: str, retrained: int, regenerated: int
) -> None:
    """A method, dataset or protocol file of config/train is an input of the training jobs that compose it (and of
    nothing else; a dataset file also of the data instances it gives values to): editing it plans those jobs again,
    and no other training or data job."""
    path = built / config_file
    original, stat = path.read_text(), path.stat()
    path.write_text(original + "\n# an edit\n")
    try:
        jobs = scheduled_jobs(run(["snakemake", "-n"], built).stdout)
    finally:
        path.write_text(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert jobs["train"] == retrained
    assert jobs.get("generate_data", 0) == regenerated


def test_an_edited_evaluation_reruns_only_its_own_jobs(built: Path) -> None:
    """Each evaluation is declared in its own file (config/evaluations/<name>.yaml), an input of its jobs alone: an
    edit plans again the evaluations of that name; a new declaration that no study uses plans nothing."""
    declaration, unused = built / "config/evaluations/toy_paths.yaml", built / "config/evaluations/unused.yaml"
    original, stat = declaration.read_text(), declaration.stat()
    unused.write_text(original)
    try:
        assert "Nothing to be done" in run(["snakemake", "-n"], built).stdout
        declaration.write_text(original + "\n# an edit\n")
        planned = run(["snakemake", "-n"], built).stdout
    finally:
        unused.unlink()
        declaration.write_text(original)
        os.utime(declaration, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    toy_paths = {
        str(p.relative_to(built)) for p in built.glob(f"results/smoke/runs/**/{layout.EVALUATIONS}/toy_paths.npz")
    }
    assert toy_paths and set(planned_outputs(planned, "evaluate")) == toy_paths
    assert "train" not in scheduled_jobs(planned)

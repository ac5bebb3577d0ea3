"""Nothing lost and nothing stale, as a user meets it on a one-study project: the README's own-dataset walk-through
(four regression methods on scikit-learn's diabetes data, eight runs at smoke) built with `dvc repro`, then changed.

Each test copies the built project and does one thing a user does: asks for a GPU the machine lacks, changes a
setting that cannot change a result, checks out results made from another config, has a job fail, kills a run.
The principles: nothing is deleted before the job that replaces it can start; whether a result is current is decided
by content; the report never outlives its inputs; only settings that can change a result rerun anything.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.pipeline.studies import variant_folder_digest
from tests.conftest import OFFLINE, ROOT, copy_project, environment, run
from tests.test_own_dataset import walkthrough_blocks
from tests.test_pipeline import planned_outputs, scheduled_jobs

pytestmark = pytest.mark.slow

RUNS = "results/smoke/runs"
GP_RUN = layout.run_folder(
    "smoke", layout.run_folder_name("gp/sklearn_diabetes/split=0/seed=0", variant_folder_digest({"method": "gp"}))
)
"""The GP's run of split 0 in the README's walk-through study (its variant: the method as configured)."""
PROTOCOL = "config/train/protocol/regression_smoke.yaml"  # the walk-through dataset trains by its task's defaults


@pytest.fixture(scope="module")
def built_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_project(tmp_path_factory.mktemp("one_study") / "project")
    for action, path, text in walkthrough_blocks((ROOT / "README.md").read_text()):
        target = project / path
        target.write_text(target.read_text() + "\n" + text if action == "append to" else text)
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config.update(scale="smoke", studies=["diabetes"], datasets=[])
    (project / "config/config.yaml").write_text(yaml.safe_dump(config))
    run(["git", "init", "-q"], project)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", "--allow-empty"], project)
    run(["dvc", "init", "-q"], project)
    run(["dvc", "config", "core.analytics", "false"], project)
    run([*OFFLINE, "dvc", "repro"], project, timeout=900)
    return project


@pytest.fixture
def tree(built_study: Path, tmp_path: Path) -> Path:
    """A copy of the built project, file times kept."""
    return Path(shutil.copytree(built_study, tmp_path / "project", symlinks=True))


def result_times(tree: Path) -> dict[str, int]:
    return {str(p.relative_to(tree)): p.stat().st_mtime_ns for p in (tree / "results").rglob("*") if p.is_file()}


def nothing_to_do(output: str) -> bool:
    return "Nothing to be done" in output


def test_device_cuda_without_a_gpu_stops_before_it_deletes_anything(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")  # no GPU, also on a machine that has one
    (tree / GP_RUN / "metrics.json").unlink()  # one run to do
    before = result_times(tree)
    planned = run(["snakemake", "-n", "--config", "device=cuda"], tree).stdout
    assert scheduled_jobs(planned)["train"] == 1  # the device is no rerun trigger: the other seven stay done
    result = run(["snakemake", "--cores", "1", "--config", "device=cuda"], tree, check=False)
    assert result.returncode != 0
    assert "config 'device' is cuda, but this machine shows no GPU" in result.stdout + result.stderr
    assert "device=auto" in result.stdout + result.stderr  # the fix
    assert result_times(tree) == before  # the unfinished run's other files included


@pytest.mark.parametrize("setting", ["threads_per_job=2", "device=cpu"])
def test_a_setting_that_cannot_change_results_reruns_nothing(tree: Path, setting: str) -> None:
    assert nothing_to_do(run(["snakemake", "-n", "--config", setting], tree).stdout)
    # control: a change that can change results is planned (the gp runs compose this file)
    method = tree / "config/train/method/gp.yaml"
    method.write_text(method.read_text() + "\n# an edit\n")
    assert scheduled_jobs(run(["snakemake", "-n", "--config", setting], tree).stdout)["train"] == 2


def test_results_checked_out_after_a_config_edit_are_rerun_where_the_edit_reaches(tree: Path) -> None:
    """`dvc checkout` writes the cached results newer than the edit; their recorded sources tell them apart."""
    run(["rm", "-rf", "results", "reports"], tree)
    run(["dvc", "checkout", "-q", "report"], tree)
    assert nothing_to_do(run(["snakemake", "-n"], tree).stdout)  # control: the same sources, nothing to do

    method = tree / "config/train/method/gp.yaml"
    method.write_text(method.read_text() + "\n# an edit that no run has seen\n")
    run(["rm", "-rf", "results", "reports"], tree)
    run(["dvc", "checkout", "-q", "report"], tree)
    assert (tree / GP_RUN / "metrics.json").stat().st_mtime_ns > method.stat().st_mtime_ns  # what fooled Snakemake
    planned = run(["snakemake", "-n"], tree).stdout
    assert sorted(str(Path(f).parent) for f in planned_outputs(planned, "train")) == [
        GP_RUN.replace("split=0", f"split={split}") for split in (0, 1)
    ]


def test_a_failed_job_leaves_no_report_that_shows_what_it_removed(tree: Path) -> None:
    protocol = tree / PROTOCOL
    original = protocol.read_text()
    protocol.write_text(original.replace("batch_size: 512", "batch_size: 0"))  # every run fails in its job
    result = run(["snakemake", "--cores", "1"], tree, check=False)
    assert result.returncode != 0
    assert len(list((tree / RUNS).rglob("metrics.json"))) < 8  # Snakemake removed the failed job's outputs
    assert not (tree / "reports/report.pdf").exists()
    assert (tree / "reports/report-outdated.pdf").stat().st_size > 0  # set aside, not lost
    assert "moved to reports/report-outdated.pdf" in result.stdout + result.stderr

    protocol.write_text(original)  # control: the next run that succeeds writes the report again
    run(["snakemake", "--cores", "1"], tree)
    assert (tree / "reports/report.pdf").exists() and not (tree / "reports/report-outdated.pdf").exists()


def test_the_train_log_of_a_resumed_run_keeps_every_attempt(tree: Path) -> None:
    protocol = tree / PROTOCOL
    settings = yaml.safe_load(protocol.read_text())
    settings["train"].update(epochs=200, eval_every=100, checkpoint_every=10)  # 20 ms an epoch
    protocol.write_text("# @package _global_\n" + yaml.safe_dump(settings))
    target = [f"{GP_RUN}/metrics.json"]
    command = ["snakemake", "--cores", "1", *target, "--config", "job_server=False"]
    job = subprocess.Popen(command, cwd=tree, env=environment(tree), start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while not (tree / GP_RUN / "resume.pt").exists() and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.poll() is None and (tree / GP_RUN / "resume.pt").exists(), "the run ended before it could be killed"
    os.killpg(job.pid, signal.SIGKILL)  # snakemake and its job
    job.wait()
    run(["snakemake", "--unlock"], tree)
    run(command, tree)
    log = (tree / GP_RUN / "train.log").read_text()
    attempts = re.findall(r"=== attempt \d+ started on \S+, config (\w+): (.*)", log)
    # the built run's (another protocol), the killed one and the one that resumed it
    assert [start for _, start in attempts[:2]] == ["training from the start"] * 2
    assert attempts[2][1].startswith("resuming from resume.pt saved by attempt 2 ")
    assert attempts[0][0] != attempts[1][0] == attempts[2][0]


def test_a_copied_project_is_current_and_runs_its_own_code(built_study: Path, tmp_path: Path) -> None:
    """`cp -a` elsewhere: nothing to do; a job of the copy runs the copy's code, not the tree the environment was
    installed from (control: a line added to the copy's training entry point shows in the retrained run's log)."""
    copy = tmp_path / "moved" / "project"
    copy.parent.mkdir()
    run(["cp", "-a", str(built_study), str(copy)], tmp_path)
    assert nothing_to_do(run(["snakemake", "-n"], copy).stdout)
    train = copy / "src/bnnrepro/train.py"
    train.write_text(
        train.read_text().replace("    (own_training_job(", '    log.info("the copy\'s code")\n    (own_training_job(')
    )
    run(["snakemake", "--cores", "1", f"{GP_RUN}/metrics.json"], copy)
    assert "the copy's code" in (copy / GP_RUN / "train.log").read_text()


@pytest.mark.parametrize("checkout", ["dvc checkout", "git stash, dvc checkout, git stash pop"])
def test_results_checked_out_after_a_run_of_an_edit_are_planned_again(tree: Path, checkout: str) -> None:
    """Edit, run, `dvc checkout --force` (or with the edit stashed meanwhile): the results are the earlier config's
    again, while Snakemake's records describe those they replaced (which had the edit); each metrics.json's identity
    tells them apart."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    run([*git, "add", "config"], tree)
    run([*git, "commit", "-qm", "config"], tree)
    method = tree / "config/train/method/gp.yaml"
    method.write_text(method.read_text() + "\n# an edit\n")
    run(["snakemake", "--cores", "1"], tree)
    stashed = checkout.startswith("git stash")
    if stashed:
        run([*git, "stash", "-q"], tree)
    run(["dvc", "checkout", "-q", "--force", "report"], tree)
    if stashed:
        run([*git, "stash", "pop", "-q"], tree)
        assert "# an edit" in method.read_text()
    planned = run(["snakemake", "-n"], tree).stdout
    assert "2 run results do not match their runs as planned now, planned again" in planned
    assert sorted(str(Path(f).parent) for f in planned_outputs(planned, "train")) == [
        GP_RUN.replace("split=0", f"split={split}") for split in (0, 1)
    ]


def tree_state(tree: Path) -> dict[str, tuple[int, int]]:
    """The size and modification time of every file and folder of the project but Snakemake's own records."""
    state = {}
    for folder, folders, files in os.walk(tree):
        folders[:] = [name for name in folders if name != ".snakemake"]
        for path in [Path(folder), *(Path(folder) / name for name in files)]:
            stat = path.lstat()
            state[str(path.relative_to(tree))] = (stat.st_size, stat.st_mtime_ns)
    return state


def test_a_dry_run_changes_nothing_on_disk_and_plans_what_the_run_does(tree: Path) -> None:
    """A checkout of a config the results were not made from, then the results pulled (new times, newest first) and
    the code touched: a run first puts the results' times back in order and gives the changed config the current time
    (bnnrepro.pipeline.run_steps.TreeRepairs). A dry run changes no file and plans what that run then does (control:
    before it, the dry run set the times itself)."""
    method = tree / "config/train/method/gp.yaml"
    method.write_text(method.read_text() + "\n# a config no result was made from\n")
    recorded = [entry["path"] for entry in json.loads((tree / "results/smoke/timestamps.json").read_text())["files"]]
    now = time.time_ns()
    for i, name in enumerate(reversed([*recorded, "results/smoke/timestamps.json"])):
        os.utime(tree / name, ns=(now + i * 10**6,) * 2)  # dvc pull: the same bytes, newer than the config
    for source in (tree / "src/bnnrepro").glob("*.py"):
        source.touch()
    before = tree_state(tree)
    planned = run(["snakemake", "-n"], tree)
    assert tree_state(tree) == before
    log = planned.stdout + planned.stderr
    assert f"A run restores the recorded time order of {len(recorded)} cached result files" in log
    assert "1 source files differ from those the results" in log and "config/train/method/gp.yaml" in log
    jobs = scheduled_jobs(planned.stdout)
    assert jobs["train"] == 2  # the gp runs, which compose the changed config; nothing for the touched code
    made = run(["snakemake", "--cores", "1"], tree)
    assert f"Restored the recorded time order of {len(recorded)} cached result files" in made.stdout + made.stderr
    assert scheduled_jobs(made.stdout + made.stderr) == jobs
    assert nothing_to_do(run(["snakemake", "-n"], tree).stdout)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("copy", "it is the result of another run"),
        ("nan", "its values are not those its job wrote"),
        ("drop", "it lacks 'train_seconds'"),
    ],
)
def test_a_result_that_is_not_its_runs_own_is_planned_again_and_never_aggregated(
    tree: Path, change: str, why: str
) -> None:
    metrics = tree / GP_RUN / "metrics.json"
    other = tree / GP_RUN.replace("split=0", "split=1") / "metrics.json"
    result = json.loads(metrics.read_text())
    if change == "copy":
        shutil.copy2(other, metrics)
    elif change == "nan":
        result["metrics"]["test_rmse"] = float("nan")
    else:
        del result["train_seconds"]
    if change != "copy":
        metrics.write_text(json.dumps(result))
    os.utime(metrics, ns=(other.stat().st_mtime_ns,) * 2)  # as old as the others: no time says it changed
    planned = run(["snakemake", "-n"], tree).stdout
    assert f"{GP_RUN}/metrics.json: {why}" in planned
    assert [str(Path(f).parent) for f in planned_outputs(planned, "train")] == [GP_RUN]
    aggregation = run(["python", "-m", "bnnrepro.aggregate", "diabetes", "smoke", "out.csv"], tree, check=False)
    assert aggregation.returncode != 0 and not (tree / "out.csv").exists()
    assert f"{GP_RUN}/metrics.json: not a readable run result (metrics.json) of this run ({why}" in aggregation.stderr
    assert "Delete it" in aggregation.stderr

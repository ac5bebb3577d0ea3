"""Every attempt kept, on the one-study project of tests/test_reliability.py: a training job killed as the OOM killer
kills (SIGKILL to the training process alone) or failing keeps its lines in the run's train.log, and the attempt that
resumes it names the attempt whose state it resumes; interrupting the workflow (SIGINT to the snakemake process alone,
or to its process group) stops its jobs, which resume at the next run.

Each case but the SIGINT to the whole group failed before: Snakemake put back the train.log from before a failed job
(an `update()` output), and on a SIGINT sent to it alone waited for its jobs, which ran to their end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests import test_reliability
from tests.conftest import environment, run
from tests.test_reliability import GP_RUN, PROTOCOL

pytestmark = pytest.mark.slow

built_study, tree = test_reliability.built_study, test_reliability.tree  # the fixtures: this module builds its own

ATTEMPT = re.compile(r"=== attempt (\d+) started on \S+, config (\w+): (.*)")
RESUMED = re.compile(r"resuming from resume\.pt saved by attempt (\d+) \(started [\d-]+ [\d:]+ on \S+\) at epoch (\d+)")
TARGET = f"{GP_RUN}/metrics.json"


def attempts(tree: Path) -> list[tuple[int, str, str]]:
    """The attempts that the gp run's train.log marks: (number, config digest, where it started)."""
    return [(int(n), digest, start) for n, digest, start in ATTEMPT.findall((tree / GP_RUN / "train.log").read_text())]


def set_epochs(tree: Path, epochs: int) -> None:
    """The gp runs train `epochs` epochs (about 20 ms each) and save a resumable state every 10."""
    protocol = tree / PROTOCOL
    settings = yaml.safe_load(protocol.read_text())
    settings["train"].update(epochs=epochs, eval_every=100, checkpoint_every=10)
    protocol.write_text("# @package _global_\n" + yaml.safe_dump(settings))


def start_workflow(tree: Path, job_server: bool) -> subprocess.Popen:
    """snakemake making the gp run, in a process group of its own."""
    command = ["snakemake", "--cores", "1", TARGET, "--config", f"job_server={job_server}"]
    return subprocess.Popen(command, cwd=tree, env=environment(tree), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def training_process(tree: Path, workflow: subprocess.Popen) -> psutil.Process:
    """The process that trains the gp run (the one that holds its train.log open), once it has saved a resumable
    state: the command's own process, or the job server's child that runs the job."""
    log = os.path.realpath(tree / GP_RUN / "train.log")
    for _ in range(3000):
        if (tree / GP_RUN / "resume.pt").exists():
            for process in psutil.Process(workflow.pid).children(recursive=True):
                if any(file.path == log for file in process.open_files()):
                    return process
        assert workflow.poll() is None, "the workflow ended before its training job could be reached"
        time.sleep(0.1)
    raise AssertionError("no training process saved a resumable state in 300 s")


def rerun(tree: Path, job_server: bool) -> None:
    run(["snakemake", "--unlock"], tree)
    run(["snakemake", "--cores", "1", TARGET, "--config", f"job_server={job_server}"], tree)


@pytest.mark.parametrize("job_server", [True, False])
def test_a_training_process_killed_as_the_oom_killer_kills_keeps_its_lines_and_is_resumed(
    tree: Path, job_server: bool
) -> None:
    set_epochs(tree, 200)
    workflow = start_workflow(tree, job_server)
    training_process(tree, workflow).kill()
    assert workflow.wait(timeout=300) != 0
    assert not (tree / GP_RUN / "config.yaml").exists()  # control: Snakemake handled the failed job (its outputs)
    assert [start for _, _, start in attempts(tree)] == ["training from the start"] * 2  # the built one, the killed one

    rerun(tree, job_server)
    (_, built, _), (_, killed, _), (third, resumed, start) = attempts(tree)
    assert built != killed == resumed and third == 3
    saver, epoch = RESUMED.fullmatch(start).groups()
    assert saver == "2" and f"from epoch {epoch}" in (tree / GP_RUN / "train.log").read_text()
    assert not (tree / GP_RUN / "resume.pt").exists()


def test_a_failed_attempt_keeps_its_lines(tree: Path) -> None:
    protocol = tree / PROTOCOL
    original = protocol.read_text()
    protocol.write_text(original.replace("batch_size: 512", "batch_size: 0"))  # the job fails after it starts
    failed = run(["snakemake", "--cores", "1", TARGET], tree, check=False)
    assert failed.returncode != 0
    assert not (tree / GP_RUN / "config.yaml").exists()  # control: Snakemake handled the failed job (its outputs)
    assert [start for _, _, start in attempts(tree)] == ["training from the start"] * 2

    protocol.write_text(original)
    run(["snakemake", "--cores", "1", TARGET], tree)
    (_, built, _), (_, failing, _), (third, again, _) = attempts(tree)
    assert built == again != failing and third == 3


@pytest.mark.parametrize(
    ("group", "job_server"), [(False, True), (True, True), (False, False)], ids=["alone", "group", "no_server"]
)
def test_an_interrupted_workflow_stops_its_jobs_and_they_resume(tree: Path, group: bool, job_server: bool) -> None:
    set_epochs(tree, 1000)  # a job left running ends within a minute, and removes its resume.pt
    workflow = start_workflow(tree, job_server)
    try:
        trainer = training_process(tree, workflow)
        (os.killpg if group else os.kill)(workflow.pid, signal.SIGINT)
        assert workflow.wait(timeout=300) != 0
        assert not psutil.wait_procs([trainer], timeout=60)[1]
        assert (tree / GP_RUN / "resume.pt").exists()  # stopped, not run to its end
        assert not (tree / GP_RUN / "metrics.json").exists()
    finally:
        if workflow.poll() is None:
            os.killpg(workflow.pid, signal.SIGKILL)

    rerun(tree, job_server)
    assert [number for number, _, _ in attempts(tree)] == [1, 2, 3]  # the built run's, the interrupted one, this one
    saver, _ = RESUMED.fullmatch(attempts(tree)[-1][2]).groups()
    assert saver == "2"

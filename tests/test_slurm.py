"""The smoke DAG of one study through profiles/slurm on a real single-node SLURM (Debian's Slurm 22.05,
munge, no accounting), brought up in a private network namespace by tests/slurm/run_in_cluster.sh and
shut down by its PID files. Every training job must run as a SLURM job, and the outputs must equal a
local run's. `.ci/run` installs the Debian packages; without them (or without root) the test is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, copy_project, run

MISSING = [tool for tool in ("slurmctld", "slurmd", "munged", "sbatch", "unshare") if shutil.which(tool) is None]
# one study, as the issue asks: the UDN against f2 on a UCI stand-in, two runs (each SLURM job costs seconds of
# submission and status polling, so the ten runs of udn_spirals took two and a half minutes)
STUDY = "udn_uci"
SMOKE = ["--config", "scale=smoke", "datasets=[]", f"studies=[{STUDY}]"]
# Settings of this test cluster; everything else comes from profiles/slurm/profile.yaml.
TEST_CLUSTER = [
    "--workflow-profile", "none", "--jobs", "2",
    "--slurm-status-command", "squeue",  # no accounting daemon, so no sacct
    "--slurm-init-seconds-before-status-checks", "2",
    "--default-resources", "slurm_partition=debug", "mem_mb=500", "runtime=10",
    "--set-resources", "train:mem_mb=1000",
]  # fmt: skip


def run_metrics(project: Path) -> dict[str, dict]:
    folder = project / "results/smoke/runs"  # only STUDY's runs: the project runs no other
    return {str(p.parent.relative_to(folder)): json.loads(p.read_text()) for p in folder.rglob("metrics.json")}


@pytest.fixture
def state() -> Iterator[Path]:
    """The cluster's state folder, at a short path: slurmd's Unix sockets live in it, and a socket's path may not
    exceed 108 bytes (pytest's tmp_path under an xdist worker is longer)."""
    folder = Path(tempfile.mkdtemp(prefix="slurm-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(bool(MISSING), reason=f"SLURM test needs {', '.join(MISSING)} (`.ci/run` installs them)")
@pytest.mark.skipif(os.geteuid() != 0, reason="the SLURM daemons and /etc/slurm/slurm.conf need root")
def test_smoke_study_through_the_slurm_profile_equals_a_local_run(tmp_path: Path, state: Path) -> None:
    local = copy_project(tmp_path / "local")
    started = time.perf_counter()
    run(["snakemake", "--cores", "2", *SMOKE], local)
    local_seconds = time.perf_counter() - started

    cluster = copy_project(tmp_path / "cluster")
    command = [
        "unshare", "--net", str(ROOT / "tests/slurm/run_in_cluster.sh"), str(state),
        "timeout", "-s", "INT", "-k", "20", "600",  # SIGINT lets Snakemake cancel its jobs
        "snakemake", "--profile", "profiles/slurm", *TEST_CLUSTER, *SMOKE,
    ]  # fmt: skip
    started = time.perf_counter()
    result = run(command, cluster, timeout=700)
    slurm_seconds = time.perf_counter() - started
    print(f"smoke study: local {local_seconds:.0f} s, through SLURM {slurm_seconds:.0f} s")

    on_cluster, on_workstation = run_metrics(cluster), run_metrics(local)
    assert on_cluster.keys() == on_workstation.keys() and len(on_cluster) == 2
    job_ids = {m["ran_on"]["slurm_job_id"] for m in on_cluster.values()}
    assert None not in job_ids and len(job_ids) == len(on_cluster)  # every training run was its own SLURM job
    assert result.stdout.count("has been submitted with SLURM jobid") + result.stderr.count(
        "has been submitted with SLURM jobid"
    ) == len(on_cluster)
    assert all(m["ran_on"]["slurm_job_id"] is None for m in on_workstation.values())
    for run_id, metrics in on_cluster.items():
        assert metrics["history"] == on_workstation[run_id]["history"], run_id
    assert (cluster / "reports/report.pdf").exists()
    started = (state / "started.pids").read_text().split()
    assert len(started) == 3  # slurmctld, slurmd, munged
    assert not [pid for pid in started if Path(f"/proc/{pid}").exists()], "a daemon outlived the test"
    # the test cluster's configuration is gone from /etc/slurm (left there, every later snakemake call waits 10 s)
    assert not Path("/etc/slurm/slurm.conf").resolve().is_relative_to(state)

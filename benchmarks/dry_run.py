"""A no-op `snakemake -n` on a finished tree against Snakemake alone on a trivial DAG of as many jobs.

The project's tree is built first (`snakemake --cores 2`) in a fresh copy, or `--project DIR` names a built one. The
trivial DAG has one `touch` rule per job, built first too. Each dry run is run once untimed (file-system caches,
the project's DAG-time record), then `--repeats` times; printed: the median wall and main-process CPU seconds of
both, and their ratio.
Usage: python -m benchmarks.dry_run [--scale smoke|default] [--project DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.scheduler_overhead import Usage, main_process
from tests.conftest import copy_project


def trivial_dag(folder: Path, jobs: int) -> Path:
    """A Snakefile of `jobs` jobs that each touch one file, built once."""
    folder.mkdir()
    (folder / "Snakefile").write_text(
        f"rule all:\n    input: expand('out/{{i}}.txt', i=range({jobs - 1}))\n\n"
        "rule one:\n    output: 'out/{i}.txt'\n    shell: 'touch {output}'\n"
    )
    subprocess.run(["snakemake", "--cores", "2", "-q"], cwd=folder, check=True, capture_output=True)
    return folder


def median_dry_run(project: Path, repeats: int, *config: str) -> Usage:
    main_process(project, "-n", *config)
    runs = [main_process(project, "-n", *config) for _ in range(repeats)]
    assert all("Nothing to be done" in run.output for run in runs), runs[-1].output[-2000:]
    wall, cpu = (statistics.median(getattr(run, field) for run in runs) for field in ("wall", "cpu"))
    return Usage(wall, cpu, 0.0, runs[-1].output)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="smoke", choices=("smoke", "default"))
    parser.add_argument("--project", type=Path, help="a project whose tree is built at --scale")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, scale={args.scale}")
    config = ("--config", f"scale={args.scale}")
    with tempfile.TemporaryDirectory() as folder:
        project = args.project
        if project is None:
            project = copy_project(Path(folder) / "project")
            main_process(project, "--cores", "2", *config)
        planned = main_process(project, "-n", "--forceall", "--quiet", "rules", *config).output
        jobs = int(re.search(r"^total\s+(\d+)$", planned, flags=re.MULTILINE).group(1))
        ours = median_dry_run(project, args.repeats, *config)
        trivial = median_dry_run(trivial_dag(Path(folder) / "trivial", jobs), args.repeats)
    print(f"no-op snakemake -n, {jobs} jobs: this project {ours.wall:.2f} s wall ({ours.cpu:.2f} s CPU); "
          f"a trivial DAG {trivial.wall:.2f} s ({trivial.cpu:.2f} s CPU); ratio {ours.wall / trivial.wall:.2f}x wall, "
          f"{ours.cpu / trivial.cpu:.2f}x CPU")  # fmt: skip


if __name__ == "__main__":
    main()

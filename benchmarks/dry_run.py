"""A no-op `snakemake -n` on a finished tree against Snakemake alone on a trivial DAG of as many jobs.

The project's tree is built first (`snakemake --cores 2`) in a fresh copy, or `--project DIR` names a built one. The
trivial DAG has one `touch` rule per job, built first too; a second trivial DAG gives each job as many inputs as the
project's jobs have on average (most of them the source and config files a job declares, so that a code edit reruns
it): Snakemake's own cost of that many inputs. Each dry run is run once untimed (file-system caches,
the project's DAG-time record), then `--repeats` times; printed: the median wall and main-process CPU seconds of
both, and their ratio.
Usage: python -m benchmarks.dry_run [--scale smoke|default] [--project DIR] [--repeats N]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import platform
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.scheduler_overhead import Usage, main_process
from tests.conftest import copy_project


def trivial_dag(folder: Path, jobs: int, inputs: int = 0) -> Path:
    """A Snakefile of `jobs` jobs that each touch one file after reading `inputs` shared files, built once."""
    (folder / "in").mkdir(parents=True)
    for k in range(inputs):
        (folder / "in" / f"{k}.txt").touch()
    (folder / "Snakefile").write_text(
        f"rule all:\n    input: expand('out/{{i}}.txt', i=range({jobs - 1}))\n\n"
        f"rule one:\n    input: expand('in/{{k}}.txt', k=range({inputs}))\n    output: 'out/{{i}}.txt'\n"
        "    shell: 'touch {output}'\n"
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
        inputs = round(inputs_per_job(project, *config))
        trivial = median_dry_run(trivial_dag(Path(folder) / "trivial", jobs), args.repeats)
        with_inputs = median_dry_run(trivial_dag(Path(folder) / "trivial_inputs", jobs, inputs), args.repeats)
    print(f"no-op snakemake -n, {jobs} jobs: this project {ours.wall:.2f} s wall ({ours.cpu:.2f} s CPU)")
    for name, usage in (("a trivial DAG", trivial), (f"a trivial DAG, {inputs} inputs per job", with_inputs)):
        print(f"  {name}: {usage.wall:.2f} s ({usage.cpu:.2f} s CPU); this project {ours.wall / usage.wall:.2f}x "
              f"wall, {ours.cpu / usage.cpu:.2f}x CPU")  # fmt: skip


def inputs_per_job(project: Path, *config: str) -> float:
    """Mean number of input files of the project's jobs (`snakemake --detailed-summary`: a row per output file)."""
    summary = main_process(project, "--detailed-summary", *config).output
    jobs = {
        (row["rule"], row["input-file(s)"], row["log-file(s)"])
        for row in csv.DictReader(io.StringIO(summary[summary.index("output_file\t") :]), delimiter="\t")
        if row["input-file(s)"] is not None  # the table's rows, not the log lines after it
    }
    return statistics.mean(len(inputs.split(",")) if inputs else 0 for _, inputs, _ in jobs)


if __name__ == "__main__":
    main()

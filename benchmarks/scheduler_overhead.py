"""The CPU of Snakemake's own main process while it runs the whole DAG, measured side by side in one run.

The whole DAG at a scale (smoke by default) in two fresh copies of the project: once with Snakemake's default
job-rate limiter (`--max-jobs-per-timespan 100/1s`, whose reevaluation timers multiply with every finished job)
and once with the project's profile (1000/30s). Printed: wall time, the main process's own CPU time (its rusage, not
its jobs') and the jobs' CPU time (its children's rusage). `--keep DIR` keeps the profile's built tree there
(benchmarks/dry_run.py times a no-op dry run on it).
Usage: python -m benchmarks.scheduler_overhead [--scale smoke|default] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import copy_project, environment

MAIN_PROCESS = (
    "import atexit, resource, sys, time\n"
    "started = time.perf_counter()\n"
    "def report():\n"
    "    own, jobs = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
    "    sys.stderr.write(f'MAIN_PROCESS cpu={own.ru_utime + own.ru_stime:.2f} "
    "jobs={jobs.ru_utime + jobs.ru_stime:.2f} wall={time.perf_counter() - started:.2f}\\n')\n"
    "atexit.register(report)\n"
    "from snakemake.cli import main\n"
    "sys.argv = ['snakemake', *sys.argv[1:]]\n"
    "main()\n"
)
VARIANTS = {"snakemake default 100/1s": ["--max-jobs-per-timespan", "100/1s"], "profile": []}


@dataclass(frozen=True)
class Usage:
    """One snakemake call: wall seconds, its main process's CPU seconds, its jobs' CPU seconds, its output."""

    wall: float
    cpu: float
    jobs_cpu: float
    output: str


def main_process(project: Path, *args: str) -> Usage:
    """Run snakemake in `project` and measure its main process and its jobs."""
    result = subprocess.run(
        [sys.executable, "-c", MAIN_PROCESS, *args], cwd=project, env=environment(project), capture_output=True,
        text=True,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    cpu, jobs, wall = re.search(r"MAIN_PROCESS cpu=([\d.]+) jobs=([\d.]+) wall=([\d.]+)", result.stderr).groups()
    return Usage(float(wall), float(cpu), float(jobs), result.stdout + result.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="smoke", choices=("smoke", "default"))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--keep", type=Path, help="keep the last variant's built project here")
    args = parser.parse_args()
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, scale={args.scale}")
    with tempfile.TemporaryDirectory() as folder:
        for label in args.variants:
            kept = args.keep if args.keep and label == args.variants[-1] else None
            project = copy_project(kept or Path(folder) / label.replace(" ", "_").replace("/", "_"))
            usage = main_process(project, "--cores", "2", "--config", f"scale={args.scale}", *VARIANTS[label])
            jobs = int(re.search(r"(\d+) of \1 steps \(100%\) done", usage.output).group(1))
            share = 100 * usage.cpu / (usage.cpu + usage.jobs_cpu)
            print(
                f"{label:26s} {jobs} jobs  wall {usage.wall:7.1f} s  main process CPU {usage.cpu:6.1f} s "
                f"({100 * usage.cpu / usage.wall:.1f}% of a core; {share:.1f}% of all CPU)  "
                f"jobs CPU {usage.jobs_cpu:7.1f} s"
            )


if __name__ == "__main__":
    main()

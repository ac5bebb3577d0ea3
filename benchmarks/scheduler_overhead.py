"""The CPU of Snakemake's own main process, and its no-op dry run, measured side by side in one run.

1. The whole DAG at a scale (smoke by default) in two fresh copies of the project: once with Snakemake's default
   job-rate limiter (`--max-jobs-per-timespan 100/1s`, whose reevaluation timers multiply with every finished job)
   and once with the project's profile (1000/30s). Printed: wall time and the main process's own CPU time (its
   rusage, not its jobs').
2. A no-op `snakemake -n` on the finished tree against Snakemake alone on a trivial DAG of as many jobs (one
   `touch` rule per job, built first), both twice, the second timed.
Usage: python benchmarks/scheduler_overhead.py [--scale smoke|default]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.conftest import copy_project, environment

MAIN_PROCESS = (
    "import atexit, resource, sys, time\n"
    "started = time.perf_counter()\n"
    "def report():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    sys.stderr.write(f'MAIN_PROCESS cpu={usage.ru_utime + usage.ru_stime:.2f} "
    "wall={time.perf_counter() - started:.2f}\\n')\n"
    "atexit.register(report)\n"
    "from snakemake.cli import main\n"
    "sys.argv = ['snakemake', *sys.argv[1:]]\n"
    "main()\n"
)


def main_process(project: Path, *args: str) -> tuple[float, float, str]:
    """(wall seconds, main-process CPU seconds, output) of one snakemake call."""
    result = subprocess.run(
        [sys.executable, "-c", MAIN_PROCESS, *args], cwd=project, env=environment(project), capture_output=True,
        text=True,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    cpu, wall = re.search(r"MAIN_PROCESS cpu=([\d.]+) wall=([\d.]+)", result.stderr).groups()
    return float(wall), float(cpu), result.stdout + result.stderr


def trivial_dag(folder: Path, jobs: int) -> Path:
    """A Snakefile of `jobs` jobs that each touch one file, built once."""
    folder.mkdir()
    (folder / "Snakefile").write_text(
        f"rule all:\n    input: expand('out/{{i}}.txt', i=range({jobs - 1}))\n\n"
        "rule one:\n    output: 'out/{i}.txt'\n    shell: 'touch {output}'\n"
    )
    subprocess.run(["snakemake", "--cores", "2", "-q"], cwd=folder, check=True, capture_output=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="smoke", choices=("smoke", "default"))
    scale = parser.parse_args().scale
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, scale={scale}")
    with tempfile.TemporaryDirectory() as folder:
        runs = {}
        for label, extra in (("snakemake default 100/1s", ["--max-jobs-per-timespan", "100/1s"]), ("profile", [])):
            project = copy_project(Path(folder) / label.replace(" ", "_").replace("/", "_"))
            wall, cpu, output = main_process(project, "--cores", "2", "--config", f"scale={scale}", *extra)
            runs[label] = project
            jobs = int(re.search(r"(\d+) of \1 steps \(100%\) done", output).group(1))
            print(
                f"{label:28s} {jobs} jobs  wall {wall:7.1f} s  main process CPU {cpu:6.1f} s ({100 * cpu / wall:.1f}%)"
            )
        project = runs["profile"]
        main_process(project, "-n", "--config", f"scale={scale}")
        noop_wall, noop_cpu, output = main_process(project, "-n", "--config", f"scale={scale}")
        assert "Nothing to be done" in output, output[-2000:]
        trivial = trivial_dag(Path(folder) / "trivial", jobs)
        subprocess.run(["snakemake", "-n"], cwd=trivial, check=True, capture_output=True)
        started = time.perf_counter()
        subprocess.run(["snakemake", "-n"], cwd=trivial, check=True, capture_output=True)
        trivial_wall = time.perf_counter() - started
        print(f"no-op snakemake -n: {noop_wall:.1f} s (CPU {noop_cpu:.1f} s); a trivial DAG of {jobs} jobs: "
              f"{trivial_wall:.1f} s; ratio {noop_wall / trivial_wall:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()

"""Wall time of `make` (the whole DAG at `default` scale, or chosen studies), from nothing to reports/report.pdf.

Copies the workflow into a fresh folder and runs `snakemake --cores N` there (default N = 2, the CI machine), so no
cached result is reused; prints the wall time, then where it went (`benchmarks.job_times`). `--keep DIR` builds in
DIR and leaves the tree there (for `python -m bnnrepro.report.page_layout DIR/reports/report.pdf
DIR/results/default/report_manifest.json`, or `benchmarks.job_times DIR` again).
Usage: python -m benchmarks.default_build [--cores N] [--scale S] [--studies A B ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.job_times import main as job_times
from tests.conftest import copy_project, environment


def build(project: Path, cores: int, scale: str, studies: list[str]) -> float:
    """Seconds `snakemake --cores N` takes to build a fresh copy of the workflow in `project`."""
    copy_project(project)
    command = ["snakemake", "--cores", str(cores), "--config", f"scale={scale}"]
    if studies:
        command.append(f"studies=[{','.join(studies)}]")
    started = time.perf_counter()
    subprocess.run(command, cwd=project, env=environment(project), check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--scale", default="default")
    parser.add_argument("--studies", nargs="*", default=[], help="default: config/config.yaml's")
    parser.add_argument("--keep", type=Path, help="build in this (new) folder and leave the tree there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = args.keep or Path(folder) / "project"
        elapsed = build(project, args.cores, args.scale, args.studies)
        print(f"{', '.join(args.studies) or 'every study'} at {args.scale} scale on {args.cores} cores "
              f"({os.cpu_count()} present): {elapsed / 60:.1f} min to reports/report.pdf")  # fmt: skip
        job_times([str(project)])


if __name__ == "__main__":
    main()

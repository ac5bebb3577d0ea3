"""Wall time of the UDN spiral study at `default` scale, from nothing to reports/report.pdf.

Copies the workflow into a temporary folder and runs `snakemake --cores N` there (default N = 2, the
CI machine), so no cached result is reused. Usage: python benchmarks/udn_spirals_default.py [--cores N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bnnrepro.layout import RUN_METRICS  # noqa: E402
from bnnrepro.pipeline.studies import load_study  # noqa: E402
from tests.conftest import copy_project, environment  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--scale", default="default")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = copy_project(Path(folder))
        command = ["snakemake", "--cores", str(args.cores), "--config", f"scale={args.scale}", "studies=[udn_spirals]"]
        started = time.perf_counter()
        subprocess.run(command, cwd=project, env=environment(project), check=True, capture_output=True)
        elapsed = time.perf_counter() - started
        jobs = sum((project / run.file(RUN_METRICS)).is_file() for run in load_study("udn_spirals").runs(args.scale))
    print(f"udn_spirals at {args.scale} scale on {args.cores} cores ({os.cpu_count()} present): "
          f"{elapsed:.0f} s for {jobs} training jobs and the report")  # fmt: skip


if __name__ == "__main__":
    main()

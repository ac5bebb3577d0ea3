"""Per-job overhead of training and figure/table jobs against bare imports of what they need, measured in one run.

Prints the median wall time over N repetitions of, for a training job (against a bare `python -c "import torch"`):
  imports         python -c "import bnnrepro.train"
  start-up        imports + Hydra composition of the job's config (what a job does before training)
  whole job       `python -m bnnrepro.train` for 1 epoch of the UDN on spirals, minus its training time
  served job      the same job through a job server (`python -m bnnrepro.pipeline.job_server run bnnrepro.train ...`)
and for the job that draws a study's figures and tables (against a bare `python -c "import matplotlib.pyplot,
pandas"`), per study: the imports of `python -m bnnrepro.artifacts` drawing all its artifacts (their drawing and
claims modules), in all and per artifact; and against `import matplotlib.pyplot, pandas, seaborn`, the floor of a
job that draws with seaborn (its import loads scipy.stats).
The job processes freeze their imported objects (bnnrepro.pipeline.job_process) before they start work; so do the
measured imports.
Usage: python benchmarks/job_overhead.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bnnrepro.artifacts.declarations import declarations
from bnnrepro.data.registry import generate_instance
from bnnrepro.layout import RUN_METRICS
from bnnrepro.pipeline.job_server import ADDRESS_VARIABLE, StartedServer, server_environment
from bnnrepro.pipeline.studies import available_studies, load_study

FREEZE = "; from bnnrepro.pipeline.job_process import freeze_imported_objects; freeze_imported_objects()"
"""What an entry point does once its imports are done (bnnrepro.pipeline.job_process)."""
COMPOSE = (
    "from bnnrepro.train import compose_config" + FREEZE + "; "
    "compose_config(['method=udn', 'dataset=spirals', 'scale=default', 'run_dir=x', 'dataset.path=x'])"
)


def wall_time(command: list[str], environment: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=environment)
    return time.perf_counter() - started


def median_time(command: list[str], repeats: int) -> float:
    wall_time(command)  # warm the file cache
    return statistics.median(wall_time(command) for _ in range(repeats))


def whole_job(repeats: int, served: bool = False) -> float:
    """A 1-epoch training job's wall time minus its training time: as a new process, or through a job server
    (`served`: `python -m bnnrepro.pipeline.job_server run`, the workflow's command, with a server started here)."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "spirals.npz"
        generate_instance("spirals", "omega=4+seed=0", data)
        environment = server_environment()
        module = ["-m", "bnnrepro.pipeline.job_server", "run", "bnnrepro.train"] if served else ["-m", "bnnrepro.train"]
        server = StartedServer(Path(folder) / "server.log", environment) if served else None
        if server:
            server.wait_until_ready()
            environment[ADDRESS_VARIABLE] = server.address
        times = []
        for i in range(repeats + 1):
            run_dir = Path(folder) / f"run{i}"
            command = [sys.executable, *module, "method=udn", f"dataset.path='{data}'", f"run_dir='{run_dir}'",
                       "train.epochs=1"]  # fmt: skip
            elapsed = wall_time(command, environment)
            times.append(elapsed - json.loads((run_dir / RUN_METRICS).read_text())["train_seconds"])
        if server:
            server.stop()
        return statistics.median(times[1:])


def drawing_job_imports() -> dict[str, tuple[int, list[str]]]:
    """{study: (how many artifacts it draws, the modules its drawing job imports)}, for each study that draws."""
    declared = declarations("smoke")
    studies = {}
    for name in available_studies():
        drawn = [declared[artifact] for artifact in load_study(name).artifacts]
        modules = {d.module for d in drawn} | {d.claims_module for d in drawn if d.claims_module}
        if drawn:
            studies[name] = (len(drawn), ["bnnrepro.artifacts.__main__", *sorted(modules)])
    return studies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    bare = median_time([sys.executable, "-c", "import torch"], repeats)
    results = {
        "bare torch import, then gc.freeze": median_time([sys.executable, "-c", "import torch" + FREEZE], repeats),
        "imports (bnnrepro.train)": median_time([sys.executable, "-c", "import bnnrepro.train" + FREEZE], repeats),
        "start-up (imports + config composition)": median_time([sys.executable, "-c", COMPOSE], repeats),
        "whole 1-epoch job minus training": whole_job(repeats),
        "the same through the job server": whole_job(repeats, served=True),
    }
    plotting = median_time([sys.executable, "-c", "import matplotlib.pyplot, pandas"], repeats)
    with_seaborn = median_time([sys.executable, "-c", "import matplotlib.pyplot, pandas, seaborn"], repeats)
    drawing_jobs = {
        study: (artifacts, median_time([sys.executable, "-c", f"import {', '.join(modules)}" + FREEZE], repeats))
        for study, (artifacts, modules) in drawing_job_imports().items()
    }
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}, median of {repeats}")
    print(f"{'bare torch import':42s} {bare:6.2f} s")
    for name, seconds in results.items():
        print(f"{name:42s} {seconds:6.2f} s   {seconds / bare:5.2f} x bare torch")
    print(f"{'bare matplotlib.pyplot + pandas import':42s} {plotting:6.2f} s")
    print(f"{'bare matplotlib.pyplot + pandas + seaborn':42s} {with_seaborn:6.2f} s")
    for study, (artifacts, seconds) in drawing_jobs.items():
        name = f"drawing job, {study} ({artifacts})"
        ratios = f"{seconds / plotting:5.2f} x bare, {seconds / with_seaborn:5.2f} x with seaborn"
        print(f"{name:42s} {seconds:6.2f} s   {ratios}, {seconds / artifacts / plotting:5.2f} x bare per artifact")


if __name__ == "__main__":
    main()

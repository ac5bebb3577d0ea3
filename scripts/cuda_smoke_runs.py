"""One smoke-scale training run of every method variant of every study, on the GPU: does each method's CUDA path run?

For each (study, method variant) the first smoke run whose data needs no download (a generated instance, or a
download's offline stand-in) is trained with `python -m bnnrepro.train ... device=cuda`, several at once, in a
scratch folder; the data files are made there too. Prints one line per variant (`ran on cuda` or the error's last
lines) and exits non-zero if any failed. Needs a CUDA GPU; tests/test_training_job.py runs it where there is one.

Usage: python scripts/cuda_smoke_runs.py [--jobs N] [METHOD ...]   (no METHOD: every variant)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bnnrepro.data.registry import Download, GeneratedDataset, dataset, generate_instance
from bnnrepro.pipeline.studies import Run, Study, available_studies, load_study
from bnnrepro.pipeline.training_inputs import training_overrides


def variant_runs(methods: list[str]) -> dict[tuple[str, str], tuple[Study, Run]]:
    """{(study, method variant): (study, its first smoke run)} of the variants named (all without names)."""
    picked = {}
    for name in available_studies():
        study = load_study(name)
        for run in study.runs("smoke"):
            needs_no_download = isinstance(dataset(run.dataset), (GeneratedDataset, Download))
            if needs_no_download and (not methods or run.method in methods):
                picked.setdefault((name, run.method), (study, run))
    return picked


def make_data(run: Run, root: Path) -> None:
    """The run's data file under `root`: a generated instance, or a download's stand-in."""
    path = root / run.data_file()
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(dataset(run.dataset), GeneratedDataset):
        generate_instance(run.dataset, path.stem, path)
    else:
        subprocess.run([sys.executable, "-m", "bnnrepro.data", "standin", run.dataset, str(path)], check=True)


def train_on_cuda(study: Study, run: Run, root: Path) -> str:
    """'ran on cuda', or the last lines of the job's error."""
    overrides = [o.replace("dataset.path='", f"dataset.path='{root}/") for o in training_overrides(study, run, "smoke")]
    run_dir = root / run.folder
    command = [sys.executable, "-m", "bnnrepro.train", *overrides, f"run_dir='{run_dir}'", "device=cuda"]
    job = subprocess.run(command, capture_output=True, text=True)
    if job.returncode:
        return "FAILED: " + "\n  ".join(job.stderr.strip().splitlines()[-6:])
    return "ran on " + json.loads((run_dir / "metrics.json").read_text())["ran_on"]["device"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("methods", nargs="*", help="method variants (default: all)")
    parser.add_argument("--jobs", type=int, default=8, help="runs at once")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cuda-smoke-"))
    picked = variant_runs(args.methods)
    for _, run in picked.values():
        make_data(run, root)
    with ThreadPoolExecutor(args.jobs) as pool:
        outcomes = pool.map(lambda item: (item[0], train_on_cuda(*item[1], root)), picked.items())
        failed = 0
        for (study, method), outcome in outcomes:
            print(f"{study} {method}: {outcome}", flush=True)
            failed += outcome != "ran on cuda"
    print(f"{len(picked) - failed} of {len(picked)} method variants trained on cuda")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

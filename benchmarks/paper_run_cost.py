"""What one `paper`-scale run costs on this machine, measured before its batch: each selected run of a study trained
for `--epochs` epoch(s) into a temporary folder, exactly as its training job would (its Hydra overrides, the
workflow's environment, one torch thread), its seconds of training per epoch read from its metrics.json
(`train_seconds`), times the run's own epochs: the estimated training time of the paper run. The data are prepared
by the workflow first (with the `data_source` of config/config.yaml or `--data-source`).

Where one epoch is itself long (the SDE-BNN's 20 solver steps a layer over 60,000 images), `--examples N` trains the
epoch on the first N training images and scales its time to the whole training set (an epoch's training time is
proportional to its images: the same batches, N/B of them). A run with no epochs (a sampler, a labelling loop: its
length is set otherwise) is timed whole at its own settings unless `--max-seconds` stops it: then its cost is only
bounded from below.

Usage: python -m benchmarks.paper_run_cost STUDY [KEY=V1,V2 ...] [--epochs 1] [--examples N] [--data-source package]
       (KEY=V1,V2 as `python -m bnnrepro.fidelity targets`: keep the runs whose grid value KEY is one of these)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.timing import machine  # noqa: E402
from bnnrepro import layout  # noqa: E402
from bnnrepro.fidelity.run_selection import selected_runs  # noqa: E402
from bnnrepro.files import read_npz  # noqa: E402
from bnnrepro.pipeline.studies import Run, load_study  # noqa: E402
from bnnrepro.pipeline.training_inputs import training_overrides  # noqa: E402
from bnnrepro.train_configs import compose_config  # noqa: E402
from tests.conftest import environment  # noqa: E402

SCALE = "paper"


def paper_epochs(overrides: list[str]) -> int | None:
    """The run's epochs as its paper-scale composition sets them (None for a method that has none)."""
    epochs = compose_config(overrides).get("train", {}).get("epochs")
    return None if epochs is None else int(epochs)


def measured_seconds(command: list[str], run_dir: Path, max_seconds: float) -> tuple[float, float | None]:
    """(wall seconds, the run's train_seconds) of one training command; train_seconds is None when it was stopped."""
    started = time.perf_counter()
    try:
        subprocess.run(command, cwd=ROOT, env=environment(ROOT), check=True, capture_output=True, timeout=max_seconds)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, None
    wall = time.perf_counter() - started
    metrics = json.loads((run_dir / layout.RUN_METRICS).read_text())
    return wall, float(metrics["train_seconds"])


def training_images(data_file: str) -> int:
    """The number of training examples of a prepared data file."""
    return len(read_npz(ROOT / data_file, ["y_train"])["y_train"])


def cost_line(study_name: str, run: Run, epochs: int, examples: int | None, max_seconds: float, folder: Path) -> str:
    study = load_study(study_name)
    overrides = training_overrides(study, run, SCALE)
    total = paper_epochs(overrides)
    run_dir = folder / run.id.replace("/", "_")
    shortened = [f"train.epochs={epochs}"] if total is not None else []
    share = 1.0
    if examples is not None:
        # the evaluations on as many images (they are not part of train_seconds)
        shortened.append(f"dataset.max_examples={{train: {examples}, val: {examples}, test: {examples}}}")
        share = examples / training_images(run.data_file())
    command = [sys.executable, "-m", "bnnrepro.train", *overrides, *shortened, f"run_dir='{run_dir}'", "threads=1"]
    wall, trained = measured_seconds(command, run_dir, max_seconds)
    if trained is None:
        return f"{run.id}: stopped after {wall:.0f} s: a paper run takes longer"
    if total is None:
        return f"{run.id}: {trained:.0f} s of training ({wall:.0f} s wall), the whole run"
    per_epoch = trained / epochs / share
    subset = f" on {examples} images, scaled to the training set" if examples is not None else ""
    return (
        f"{run.id}: {per_epoch:.1f} s of training per epoch ({wall:.0f} s wall for {epochs}{subset}); "
        f"{total} epochs: about {per_epoch * total / 60:.0f} min"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paper_run_cost")
    parser.add_argument("study")
    parser.add_argument("keep", nargs="*", help="KEY=V1,V2: keep the runs whose KEY (short name) is one of these")
    parser.add_argument("--epochs", type=int, default=1, help="epochs trained per measured run")
    parser.add_argument("--examples", type=int, help="train the measured epoch(s) on the first N training images")
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="stop a measured run after this long")
    parser.add_argument("--data-source", default="auto", help="`data_source` for the data the runs read")
    args = parser.parse_args()
    kept = {key: set(values.split(",")) for key, _, values in (item.partition("=") for item in args.keep)}
    runs = selected_runs(load_study(args.study).runs(SCALE), kept)
    data = sorted({run.data_file() for run in runs})
    config = ["--config", f"study_scales={{{args.study}: {SCALE}}}", f"studies=[{args.study}]"]
    config.append(f"data_source={args.data_source}")
    subprocess.run(["snakemake", "--cores", "1", *data, *config], cwd=ROOT, env=environment(ROOT), check=True)
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        for run in runs:
            print(cost_line(args.study, run, args.epochs, args.examples, args.max_seconds, Path(folder)), flush=True)


if __name__ == "__main__":
    main()

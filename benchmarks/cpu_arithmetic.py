"""The speed cost of `cpu_arithmetic: portable` against `native` (bnnrepro.cpu_arithmetic): the same training jobs,
timed in turns under each setting as the workflow starts them (their environment, then `python -m bnnrepro.train`).

Two jobs: a UDN on the spirals at paper settings (omega 20, lr 0.005, seed 0; the row the setting was made for), its
epochs capped (`--spiral-epochs`), and one run of the UCI benchmark (the deep ensemble on boston's split 0, at the
`default` scale so that it needs no download). Each job's data file is built first through the workflow. On an AVX2
CPU both settings run the same ATen kernels, so the difference is MKL's and oneDNN's pinned branch; on an AVX-512 CPU
it is the cost of not using the wider kernels.

Usage: python benchmarks/cpu_arithmetic.py [--repeats 3] [--spiral-epochs 500]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.timing import machine  # noqa: E402
from bnnrepro import cpu_arithmetic  # noqa: E402
from bnnrepro.pipeline.studies import load_study  # noqa: E402
from bnnrepro.pipeline.training_inputs import training_overrides  # noqa: E402
from tests.conftest import environment  # noqa: E402

JOBS = {
    "udn_spirals": ("paper", {"method": "udn", "dataset.omega": 20, "optim.lr": 0.005, "seed": 0}),
    "uci_benchmark": ("default", {"method": "deep_ensemble", "dataset": "uci_boston", "dataset.split": 0}),
}


def selected_run(study_name: str, scale: str, wanted: dict):
    """The first run of the study at `scale` whose values include `wanted`."""
    for run in load_study(study_name).runs(scale, sensitivity=False):
        values = {"method": run.method, "dataset": run.dataset, "seed": run.seed, **dict(run.hparams)}
        if all(str(values.get(k)) == str(v) for k, v in wanted.items()):
            return run
    raise SystemExit(f"no run of {study_name} at {scale} has {wanted}")


def job_command(study_name: str, scale: str, wanted: dict, run_dir: Path, extra: list[str]) -> tuple[list[str], str]:
    """The training command of the selected run into `run_dir`, and its data file (relative to the project)."""
    study = load_study(study_name)
    run = selected_run(study_name, scale, wanted)
    overrides = [*training_overrides(study, run, scale, ()), f"run_dir='{run_dir}'", *extra]
    return [sys.executable, "-m", "bnnrepro.train", *overrides], run.data_file(())


def timed(command: list[str], setting: str) -> float:
    env = {k: v for k, v in environment(ROOT).items() if k not in cpu_arithmetic.VARIABLES}
    env.update(cpu_arithmetic.environment(setting))
    started = time.perf_counter()
    subprocess.run([*command, f"cpu_arithmetic={setting}"], cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--spiral-epochs", type=int, default=500)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        for study_name, (scale, wanted) in JOBS.items():
            extra = [f"train.epochs={args.spiral_epochs}"] if study_name == "udn_spirals" else []
            command, data = job_command(study_name, scale, wanted, Path(folder) / study_name, extra)
            snakemake = ["snakemake", "--cores", "1", data, "--config", f"study_scales={{{study_name}: {scale}}}"]
            subprocess.run(snakemake, cwd=ROOT, env=environment(ROOT), check=True, capture_output=True)
            seconds: dict[str, list[float]] = {"native": [], "portable": []}
            for repeat in range(args.repeats):
                for setting in ("native", "portable") if repeat % 2 == 0 else ("portable", "native"):
                    seconds[setting].append(timed(command, setting))
            native, pinned = (statistics.median(seconds[s]) for s in ("native", "portable"))
            shown = " ".join(shlex.quote(c) for c in command[3:6])
            print(f"{study_name} ({scale}, {shown} ...): native {native:.1f} s, portable {pinned:.1f} s "
                  f"(median of {args.repeats}; {pinned / native - 1:+.1%})")  # fmt: skip


if __name__ == "__main__":
    main()

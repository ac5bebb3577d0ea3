"""What flushing subnormal floats to zero buys a training job (bnnrepro.cpu_arithmetic.set_up_process), and whether
it changes what the job computes (466 of the default build's 467 runs were bit-identical; not the SDE-BNN toy's
last-layer Laplace, whose full-batch training amplifies any difference).

Trains default-scale runs of the thesis studies in this process, each twice from the same seed: once keeping
subnormals (torch's default) and once flushing them, one thread, under the workflow's CPU arithmetic (set it with
`cpu_arithmetic.environment` before running: ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2).
Prints each run's median seconds per epoch with and without flushing, and whether the trained parameters are
bit-identical. The runs (`--runs`, default all):

  bedl_pac_cifar10   thesis ch. 5 BEDL-PAC, the 96-channel CNN at width 0.25 on the CIFAR-10 stand-in
  vbp_cifar10        thesis ch. 3 VBP, the CIFAR LeNet5 at width 0.25 on the CIFAR-10 stand-in
  clt_bnn            thesis ch. 4 CLT-BNN (Fig. 4.5) on the FashionMNIST stand-in
  deep_ensemble_uci  the UCI benchmark's deep ensemble on the boston stand-in's split 0 (the control: no moments)

Each run's data file is built through the workflow first.
Usage: python benchmarks/subnormals.py [--runs bedl_pac_cifar10,clt_bnn] [--epochs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.cpu_arithmetic import selected_run  # noqa: E402
from benchmarks.timing import machine  # noqa: E402
from bnnrepro.data.registry import load_splits  # noqa: E402
from bnnrepro.methods import build_method  # noqa: E402
from bnnrepro.optim import build_optimizer  # noqa: E402
from bnnrepro.pipeline.studies import load_study  # noqa: E402
from bnnrepro.pipeline.training_inputs import training_overrides  # noqa: E402
from bnnrepro.train_configs import compose_config  # noqa: E402
from tests.conftest import environment  # noqa: E402

RUNS = {
    "bedl_pac_cifar10": ("thesis_bedl", {"method": "bedl_pac@cnn96", "dataset": "cifar10"}),
    "vbp_cifar10": ("thesis_vbp", {"method": "vbp@lenet5_cifar", "dataset": "cifar10"}),
    "clt_bnn": ("thesis_ral", {"method": "clt_bnn"}),
    "deep_ensemble_uci": ("uci_benchmark", {"method": "deep_ensemble", "dataset": "uci_boston", "dataset.split": 0}),
}


def train_epochs(overrides: list[str], epochs: int, flush: bool) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Seconds per epoch of `epochs` epochs of the composed run's training steps, and its trained parameters."""
    torch.set_flush_denormal(flush)
    cfg = compose_config([*overrides, "run_dir=unused", "device=cpu", "threads=1"])
    torch.manual_seed(cfg.seed)
    splits = load_splits(cfg.dataset)
    method = build_method(cfg, splits.spec(cfg.dataset.task), splits)
    optimizer = build_optimizer(cfg.optim, method.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    shuffle = torch.Generator().manual_seed(cfg.seed)
    seconds = []
    method.train()
    for _ in range(epochs):
        started = time.perf_counter()
        for batch in torch.randperm(len(x), generator=shuffle).split(cfg.train.batch_size):
            method.training_step(x[batch], y[batch], len(x), optimizer)
        method.end_epoch(x, y)
        seconds.append(time.perf_counter() - started)
    return seconds, {name: value.detach().clone() for name, value in method.state_dict().items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    os.chdir(ROOT)  # the runs' data paths are the project's
    torch.set_num_threads(1)
    print(machine() + f", torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()} kernels")
    for name in args.runs.split(","):
        study_name, wanted = RUNS[name]
        study, run = load_study(study_name), selected_run(study_name, "default", wanted)
        data = run.data_file(())
        snakemake = ["snakemake", "--cores", "1", data, "--config", f"study_scales={{{study_name}: default}}"]
        subprocess.run(snakemake, cwd=ROOT, env=environment(ROOT), check=True, capture_output=True)
        overrides = training_overrides(study, run, "default")
        kept, kept_state = train_epochs(overrides, args.epochs, flush=False)
        flushed, flushed_state = train_epochs(overrides, args.epochs, flush=True)
        identical = all(torch.equal(kept_state[k], flushed_state[k]) for k in kept_state)
        slow, fast = statistics.median(kept), statistics.median(flushed)
        print(f"{name} ({run.method}, {run.dataset}): {slow:.2f} s per epoch keeping subnormals, {fast:.2f} s "
              f"flushing them ({slow / fast:.1f}x); parameters after {args.epochs} epochs "
              f"{'bit-identical' if identical else 'DIFFER'}")  # fmt: skip


if __name__ == "__main__":
    main()

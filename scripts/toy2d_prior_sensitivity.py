"""How the 2-D classification benchmark's variational classifiers (VBP, DVI, VarOut) move with their prior precision
alpha: each method on every problem of config/studies/toy2d_benchmark.yaml at `paper` scale, for the first seeds,
trained exactly as the benchmark's run (its Hydra overrides) but at each alpha of `--alphas`. Prints a CSV, one row
per run: method, dataset, omega, seed, alpha, test accuracy and NLL (at the epoch the run reports), the final KL of
q to the prior, the training NLL it implies (the last training loss less KL / N) and the training seconds.

    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 \\
    python scripts/toy2d_prior_sensitivity.py TREE --methods vbp,dvi,varout --alphas 1,10,100 --seeds 0,1

TREE is a project folder holding the benchmark's prepared data (results/data/spirals/..., results/data/repulsive_2d/
...: `snakemake <the runs' data files>` there). Its runs use the committed batches' `cpu_arithmetic: portable`
(README), whose variables must be set before Python starts, as above.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

import torch

from bnnrepro.files import read_npz
from bnnrepro.pipeline.studies import load_study
from bnnrepro.pipeline.training_inputs import training_overrides
from bnnrepro.runs import RunFolder
from bnnrepro.train import train
from bnnrepro.train_configs import compose_config

STUDY = "toy2d_benchmark"
COLUMNS = "method,dataset,omega,seed,alpha,test_accuracy,test_nll,kl,train_nll,train_seconds"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--methods", default="vbp,dvi,varout")
    parser.add_argument("--alphas", default="1,10,100")
    parser.add_argument("--seeds", default="0,1")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.INFO)
    os.chdir(args.tree)  # the runs' data paths are relative to their project
    methods, seeds = args.methods.split(","), {int(seed) for seed in args.seeds.split(",")}
    study = load_study(STUDY)
    runs = [run for run in study.runs("paper") if run.method in methods and run.seed in seeds]
    print(COLUMNS)
    for run in runs:
        omega = dict(run.hparams).get("dataset.omega", "")
        for alpha in args.alphas.split(","):
            with tempfile.TemporaryDirectory() as run_dir:
                overrides = [*training_overrides(study, run, "paper"), f"method.prior_precision={alpha}",
                             "cpu_arithmetic=portable", f"run_dir={run_dir}"]  # fmt: skip
                result = train(compose_config(overrides), RunFolder(Path(run_dir)))
            metrics = result["metrics"]
            points = len(read_npz(Path(run.data_file()), ["y_train"])["y_train"])
            train_nll = metrics["last_train_loss"] - metrics["last_kl"] / points
            cells = [run.method, run.dataset, omega, run.seed, alpha, f"{metrics['test_accuracy']:.4f}",
                     f"{metrics['test_nll']:.4f}", f"{metrics['last_kl']:.1f}", f"{train_nll:.4f}",
                     f"{result['train_seconds']:.1f}"]  # fmt: skip
            print(",".join(map(str, cells)), flush=True)


if __name__ == "__main__":
    main()

"""How a UCI benchmark result moves with the training budget and the validation holdout: one method on the first
splits of one set, trained at the benchmark's protocol (40 epochs, a validation fifth held out) and with each changed
(no holdout; 400 epochs, the 10x of Gal & Ghahramani's 2018 update; both). Prints a CSV of test NLL and RMSE in the
targets' units, mean and standard error over the splits.

    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 \\
    python scripts/uci_budget_sensitivity.py uci_yacht results/data/uci_yacht.npz --method mc_dropout \\
        --override method.dropout=0.01 --splits 5

Its runs use the committed batches' `cpu_arithmetic: portable` (README), whose variables must be set before Python
starts, as above; without them the first run stops and names them.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
from pathlib import Path

import torch

from bnnrepro.runs import RunFolder
from bnnrepro.train import train
from bnnrepro.train_configs import compose_config, protocol_override

VARIANTS = {
    "benchmark (40 epochs, 1/5 held out)": ["dataset.val_fraction=0.2"],
    "no holdout": ["dataset.val_fraction=0.0"],
    "400 epochs": ["dataset.val_fraction=0.2", "train.epochs=400"],
    "400 epochs, no holdout": ["dataset.val_fraction=0.0", "train.epochs=400"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("data", type=Path, help="the set's prepared file, e.g. results/data/uci_yacht.npz")
    parser.add_argument("--method", default="mc_dropout")
    parser.add_argument("--override", action="append", default=[], help="a Hydra override of the method")
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.INFO)
    print("variant,test_nll_original,se,test_rmse_original,se,splits")
    for name, variant in VARIANTS.items():
        values: dict[str, list[float]] = {"test_nll_original": [], "test_rmse_original": []}
        for split in range(args.splits):
            with tempfile.TemporaryDirectory() as run_dir:
                overrides = [
                    f"method={args.method}", *args.override, f"dataset={args.dataset}", f"dataset.split={split}",
                    f"seed={split}", "optim.lr=0.01", "scale=paper", "cpu_arithmetic=portable",
                    f"dataset.path='{args.data.resolve()}'", f"run_dir={run_dir}",
                    *protocol_override(args.dataset, "paper"), *variant,
                ]  # fmt: skip
                metrics = train(compose_config(overrides), RunFolder(Path(run_dir)))["metrics"]
            for key, kept in values.items():
                kept.append(metrics[key])
        cells = [f"{statistics.mean(v):.3f},{statistics.stdev(v) / len(v) ** 0.5:.3f}" for v in values.values()]
        print(f'"{name}",{",".join(cells)},{args.splits}', flush=True)  # the name has commas: quoted


if __name__ == "__main__":
    main()

"""Where the exact GP's test NLL on the UCI benchmark comes from: per kept GP run, its test rows split into those whose
inputs equal one of the rows it was trained on (a duplicate row of the set on both sides of the split) and the others,
and its Gaussian predictive NLL in the targets' units on each (R&W eqs. 2.25-2.26 from the run's checkpoint: its
learned lengthscale, signal and noise variance and the training rows it conditions on). Prints a CSV, one row per
dataset: test rows, the share that duplicates a training row's inputs (and of those, with the same target), the NLL
(mean over the splits of each split's mean) on all test rows, on the duplicated and on the other rows.

    python scripts/gp_duplicate_rows.py <tree> > docs/benchmark/paper/uci_benchmark/gp_duplicate_rows.csv

<tree>: a checkout whose results/paper/runs holds the uci_benchmark's GP runs and results/data the prepared sets.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from bnnrepro.data import uci
from bnnrepro.data.tabular import standardised_splits
from bnnrepro.methods.toy_baselines import GaussianProcessRegression
from bnnrepro.pipeline.studies import load_study


def split_rows(tree: Path, run) -> dict[str, float]:
    """One GP run's test rows: how many duplicate a training row's inputs, and the NLL on each kind."""
    data = dict(np.load(tree / f"results/data/{run.dataset}.npz"))
    train, val, test = uci.split_indices(data, dict(run.hparams)["dataset.split"], "standard", 0.2)
    splits = standardised_splits(data["x"], data["y"], (train, val, test), standardize=True).arrays
    state = torch.load(tree / run.file("checkpoint.pt"), weights_only=True)["model"]
    model = GaussianProcessRegression(data["x"].shape[1], 1.0, 1.0, 1.0, eval_samples=1)
    model.condition_on(state["x_train"], state["y_train"][:, None])  # the buffers' sizes, then their values
    model.load_state_dict(state)
    with torch.no_grad():
        mean, covariance = model.posterior(torch.from_numpy(splits["x_test"]).double())
        variance = covariance.diagonal() + model.noise_variance()
    y = torch.from_numpy(splits["y_test"][:, 0]).double()
    nll = 0.5 * torch.log(2 * math.pi * variance) + (y - mean) ** 2 / (2 * variance) + math.log(splits["y_std"])
    seen = {tuple(row): target for row, target in zip(data["x"][train], data["y"][train], strict=True)}
    duplicated = np.array([tuple(row) in seen for row in data["x"][test]])
    same_target = np.array([seen.get(tuple(row)) == target for row, target in zip(data["x"][test], data["y"][test],
                                                                                  strict=True)])  # fmt: skip
    nll = nll.numpy()
    return {
        "test rows": len(test), "duplicated": duplicated.mean(), "same target": same_target.mean(),
        "nll": nll.mean(), "nll duplicated": nll[duplicated].mean() if duplicated.any() else np.nan,
        "nll other": nll[~duplicated].mean(),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    tree = parser.parse_args().tree
    runs = [run for run in load_study("uci_benchmark").runs("paper") if run.method == "gp"]
    rows = [
        {"dataset": run.dataset, **split_rows(tree, run)}
        for run in runs
        if (tree / run.file("checkpoint.pt")).is_file()
    ]
    table = pd.DataFrame(rows).groupby("dataset").agg(
        splits=("nll", "size"), test_rows=("test rows", "mean"), duplicated=("duplicated", "mean"),
        same_target=("same target", "mean"), nll=("nll", "mean"), nll_duplicated=("nll duplicated", "mean"),
        nll_other=("nll other", "mean"),
    )  # fmt: skip
    table.round(4).to_csv(sys.stdout)


if __name__ == "__main__":
    main()

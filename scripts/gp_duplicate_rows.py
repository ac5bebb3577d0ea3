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
import yaml

from bnnrepro.data import uci
from bnnrepro.data.tabular import standardised_splits
from bnnrepro.methods.toy_baselines import GaussianProcessRegression
from bnnrepro.metrics import gaussian_predictive_nll
from bnnrepro.pipeline.studies import load_study


def split_rows(tree: Path, run) -> dict[str, float]:
    """One GP run's test rows: how many duplicate a training row's inputs, and the NLL on each kind (the run's
    split as its composed config gives it)."""
    dataset = yaml.safe_load((tree / run.file("config.yaml")).read_text())["dataset"]
    data = dict(np.load(tree / f"results/data/{run.dataset}.npz"))
    rows = uci.split_indices(data, dataset["split"], dataset["protocol"], dataset["val_fraction"])
    splits = standardised_splits(data["x"], data["y"], rows, dataset["standardize"]).arrays
    state = torch.load(tree / run.file("checkpoint.pt"), weights_only=True)["model"]
    model = GaussianProcessRegression(data["x"].shape[1], 1.0, 1.0, 1.0, eval_samples=1)
    model.condition_on(state["x_train"], state["y_train"][:, None])  # the buffers' sizes, then their values
    model.load_state_dict(state)
    with torch.no_grad():
        mean, covariance = model.posterior(torch.from_numpy(splits["x_test"]).double())
        variance = covariance.diagonal() + model.noise_variance()
    targets = torch.from_numpy(splits["y_test"]).double()

    def nll(chosen: np.ndarray) -> float:
        """The predictive NLL of the chosen test rows, in the targets' units (the latent's mean as one sample and
        its variance plus the noise's as the noise variance: the Gaussian predictive itself)."""
        if not chosen.any():
            return math.nan
        chosen = torch.from_numpy(chosen)
        score = gaussian_predictive_nll(mean[None, chosen, None], targets[chosen], variance[chosen, None])
        return score + math.log(splits["y_std"])

    train, _, test = rows
    seen = {tuple(row): target for row, target in zip(data["x"][train], data["y"][train], strict=True)}
    duplicated = np.array([tuple(row) in seen for row in data["x"][test]])
    same_target = np.array([seen.get(tuple(row)) == target for row, target in zip(data["x"][test], data["y"][test],
                                                                                  strict=True)])  # fmt: skip
    return {
        "test rows": len(test), "duplicated": duplicated.mean(), "same target": same_target.mean(),
        "nll": nll(np.ones(len(test), dtype=bool)), "nll duplicated": nll(duplicated), "nll other": nll(~duplicated),
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

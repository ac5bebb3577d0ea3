"""The results table of a study of your own (`paper: own`), which no published artifact describes.

One row per method variant (and hyperparameter setting), one column per dataset and test metric at the selected
evaluation (`train.select_by`), each cell the mean over seeds and data splits (`dataset.split`, the UCI benchmarks'
replicates) with its standard error; in the table layout of the
published artifacts (bnnrepro.artifacts.render), without published numbers, so the report shows it the same way.
"""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.render import TABLE_COLUMNS, standard_error
from bnnrepro.layout import PAIR_SEPARATOR

REPLICATES = ("split",)
"""Hyperparameters averaged over like seeds: a dataset's split K is a replicate of the experiment, not a setting."""

TEST_PREFIX = "test_"
"""The metrics a summary shows: those of the test split at the selected evaluation (not `last_*`, not training)."""


def row_label(method: str, hparams: str) -> str:
    """'mfvi' for the slug 'default' or 'split=3'; 'mfvi [lr=0.01]' for 'lr=0.01+split=3'."""
    pairs = [pair for pair in hparams.split(PAIR_SEPARATOR) if pair.split("=", 1)[0] not in REPLICATES + ("default",)]
    return f"{method} [{PAIR_SEPARATOR.join(pairs)}]" if pairs else method


def study_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """A study's tidy metrics (bnnrepro.aggregate) as a table of seed means and standard errors."""
    test = metrics[metrics["metric"].str.startswith(TEST_PREFIX)].copy()
    if test.empty:
        raise ValueError("the study's runs record no test metrics (test_*): is its test split empty?")
    test["row"] = [row_label(m, h) for m, h in zip(test["method"], test["hparams"], strict=True)]
    test["column"] = test["dataset"] + " " + test["metric"].str.removeprefix(TEST_PREFIX)
    groups = test.groupby(["row", "column"], sort=False)["value"]
    table = groups.agg(ours="mean", ours_error=standard_error, n_runs="count").reset_index()
    table["standin"] = bool(test["standin"].any())
    return table.reindex(columns=TABLE_COLUMNS)

"""The methods of a study of your own ranked over its datasets and replicates, as Demšar (2006) compares classifiers
over data sets: per metric, each block (a dataset and one replicate of it: a seed, or a data split `dataset.split`)
ranks the methods (1 = best, ties share their mean rank); a method's average rank is the mean over the blocks where
every method has a result; the Friedman test asks whether the average ranks differ more than chance allows, and the
Nemenyi post-hoc test which pairs differ (scikit-posthocs), drawn as a critical-difference diagram.

The metrics ranked are those of the study's task (`RANKED_METRICS`), at each run's selected evaluation on the test
split; a method variant with several hyperparameter settings is one entrant per setting (`study_summary.row_label`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scikit_posthocs
from scipy import stats

from bnnrepro.artifacts.render import TABLE_COLUMNS
from bnnrepro.layout import PAIR_SEPARATOR
from bnnrepro.report.study_summary import REPLICATES, TEST_PREFIX, row_label

RANKED_METRICS = {
    "regression": {"rmse_original": "lower", "nll_original": "lower"},
    "classification": {"accuracy": "higher", "nll": "lower", "ece": "lower"},
}
"""The test metrics ranked per task, with the direction that is better (RMSE and NLL in the targets' units)."""

SIGNIFICANCE = 0.05
"""The level of the Friedman test and of the Nemenyi post-hoc test (Demšar 2006 uses 0.05)."""


@dataclass(frozen=True)
class Ranking:
    """One metric's ranking: the blocks [blocks x entrants] of values, each entrant's average rank (best first),
    the Friedman test's p-value (None with fewer than 3 entrants or 2 blocks) and the Nemenyi p-values
    [entrants x entrants] (None where the Friedman test is)."""

    metric: str
    blocks: pd.DataFrame
    average_ranks: pd.Series
    friedman_p: float | None
    nemenyi_p: pd.DataFrame | None


def replicate(seed: object, hparams: str) -> str:
    """The replicate a run is of its dataset: its data split (`split=K` among its hyperparameters) and seed."""
    splits = [pair for pair in str(hparams).split(PAIR_SEPARATOR) if pair.split("=", 1)[0] in REPLICATES]
    return PAIR_SEPARATOR.join([*splits, f"seed={seed}"])


def metric_blocks(metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The test values of `metric` as [blocks x entrants], a block per (dataset, replicate) where every entrant has a
    finite value (the comparison is paired: a block missing one entrant is left out)."""
    rows = metrics[metrics["metric"] == TEST_PREFIX + metric]
    if rows.empty:
        raise ValueError(f"the study's runs record no {TEST_PREFIX}{metric}: it cannot be ranked")
    frame = pd.DataFrame(
        {
            "block": rows["dataset"]
            + " "
            + [replicate(s, h) for s, h in zip(rows["seed"], rows["hparams"], strict=True)],
            "entrant": [row_label(m, h) for m, h in zip(rows["method"], rows["hparams"], strict=True)],
            "value": rows["value"].astype(float),
        }
    )
    table = frame.pivot_table(index="block", columns="entrant", values="value", aggfunc="mean")
    return table[np.isfinite(table).all(axis=1)]


def rank_metric(metrics: pd.DataFrame, metric: str, better: str) -> Ranking:
    """The ranking of every entrant on `metric`, `better` 'lower' or 'higher'."""
    blocks = metric_blocks(metrics, metric)
    ranks = (blocks if better == "lower" else -blocks).rank(axis=1, method="average")
    average = ranks.mean().sort_values()
    friedman_p, nemenyi = None, None
    if blocks.shape[1] >= 3 and blocks.shape[0] >= 2:
        friedman_p = float(stats.friedmanchisquare(*(blocks[column] for column in blocks)).pvalue)
        nemenyi = scikit_posthocs.posthoc_nemenyi_friedman(blocks.to_numpy())
        nemenyi.index = nemenyi.columns = blocks.columns
    return Ranking(metric, blocks, average, friedman_p, nemenyi)


def study_rankings(metrics: pd.DataFrame, task: str) -> list[Ranking]:
    """The ranking of each metric of `task` (the task of the datasets of `metrics`) that the runs record."""
    recorded = set(metrics["metric"])
    return [
        rank_metric(metrics, metric, better)
        for metric, better in RANKED_METRICS.get(task, {}).items()
        if TEST_PREFIX + metric in recorded
    ]


def ranking_table(rankings: list[Ranking], standin: bool) -> pd.DataFrame:
    """The average ranks in the layout of the report's tables: a row per entrant, a column per metric, n = blocks."""
    rows = [
        {
            "row": entrant,
            "column": f"{ranking.metric} rank",
            "ours": rank,
            "ours_error": math.nan,
            "n_runs": len(ranking.blocks),
            "standin": standin,
        }
        for ranking in rankings
        for entrant, rank in ranking.average_ranks.items()
    ]
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)


def ranking_title(ranking: Ranking) -> str:
    """'nll_original: Friedman p = 0.003 over 10 blocks' (or why there is no test)."""
    blocks = len(ranking.blocks)
    if ranking.friedman_p is None:
        return f"{ranking.metric}: {blocks} blocks, {ranking.blocks.shape[1]} methods (no test: it needs 3 and 2)"
    return f"{ranking.metric}: Friedman p = {ranking.friedman_p:.2g} over {blocks} blocks"


def draw_critical_differences(rankings: list[Ranking], axes) -> None:
    """One critical-difference diagram per ranking on `axes`: the average ranks on an axis, a bar joining the
    methods that the Nemenyi test does not tell apart at SIGNIFICANCE (scikit-posthocs)."""
    for ranking, ax in zip(rankings, axes, strict=True):
        ax.set_title(ranking_title(ranking), fontsize=9, pad=16)
        if ranking.nemenyi_p is None:
            ax.axis("off")
            continue
        scikit_posthocs.critical_difference_diagram(
            ranking.average_ranks, ranking.nemenyi_p, ax=ax, alpha=SIGNIFICANCE, label_props={"fontsize": 8}
        )

"""The methods of a study of your own ranked as Demšar (2006) compares classifiers over data sets: per metric, each
block ranks the methods (1 = best, ties share their mean rank); a method's average rank is the mean over the blocks
where every method has a result; the Friedman test asks whether the average ranks differ more than chance allows,
and the Nemenyi post-hoc test which pairs differ (scikit-posthocs), drawn as a critical-difference diagram with the
critical difference printed.

The unit is the dataset (`block_unit`): with two or more datasets a block is a dataset, its value an entrant's mean
over the replicates (seeds, data splits `dataset.split`) where every entrant has a result; the replicates of one
dataset are repeated measures of it, not independent data sets, and counting them as blocks would shrink the
critical difference with the number of splits (pseudo-replication). A study of one dataset ranks over its
replicates: its tests are about that dataset alone.

The metrics ranked are those of the task (`RANKED_METRICS`), at each run's selected evaluation on the test split; a
method variant with several hyperparameter settings is one entrant per setting (`study_summary.row_label`).
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
    unit: str = "dataset"  # what a block is: "dataset", or "replicate" (of a study's one dataset)

    def critical_difference(self) -> float | None:
        """The Nemenyi critical difference of the average ranks at SIGNIFICANCE (Demšar 2006, eq. 5: q_alpha
        sqrt(k (k + 1) / (6 N)), q_alpha the studentized range quantile over sqrt 2), None where there is no test."""
        if self.nemenyi_p is None:
            return None
        k, n = self.blocks.shape[1], self.blocks.shape[0]
        q = stats.studentized_range.ppf(1 - SIGNIFICANCE, k, np.inf) / math.sqrt(2)
        return float(q * math.sqrt(k * (k + 1) / (6 * n)))

    def posthoc_p(self) -> pd.DataFrame | None:
        """The Nemenyi p-values to read: the post-hoc test follows a rejection of the Friedman test at SIGNIFICANCE
        (Demšar 2006, sec. 3.2.2), so where it does not reject every pair's p-value is 1 (none told apart); None where
        there is no test."""
        if self.nemenyi_p is None or self.friedman_p < SIGNIFICANCE:
            return self.nemenyi_p
        return pd.DataFrame(1.0, index=self.nemenyi_p.index, columns=self.nemenyi_p.columns)


def replicate(seed: object, hparams: str) -> str:
    """The replicate a run is of its dataset: its data split (`split=K` among its hyperparameters) and seed."""
    splits = [pair for pair in str(hparams).split(PAIR_SEPARATOR) if pair.split("=", 1)[0] in REPLICATES]
    return PAIR_SEPARATOR.join([*splits, f"seed={seed}"])


def block_unit(metrics: pd.DataFrame) -> str:
    """'dataset' where `metrics` hold two or more datasets, else 'replicate'."""
    return "dataset" if metrics["dataset"].nunique() >= 2 else "replicate"


def metric_blocks(metrics: pd.DataFrame, metric: str, unit: str = "replicate") -> pd.DataFrame:
    """The test values of `metric` as [blocks x entrants]: a block per (dataset, replicate) where every entrant has a
    finite value (the comparison is paired: a block missing one entrant is left out); with `unit` 'dataset', the
    mean of each dataset's such replicates, a block per dataset."""
    rows = metrics[metrics["metric"] == TEST_PREFIX + metric]
    if rows.empty:
        raise ValueError(f"the study's runs record no {TEST_PREFIX}{metric}: it cannot be ranked")
    frame = pd.DataFrame(
        {
            "dataset": rows["dataset"],
            "replicate": [replicate(s, h) for s, h in zip(rows["seed"], rows["hparams"], strict=True)],
            "entrant": [row_label(m, h) for m, h in zip(rows["method"], rows["hparams"], strict=True)],
            "value": rows["value"].astype(float),
        }
    )
    table = frame.pivot_table(index=["dataset", "replicate"], columns="entrant", values="value", aggfunc="mean")
    table = table[np.isfinite(table).all(axis=1)]
    if unit == "dataset":
        return table.groupby(level="dataset", sort=False).mean()
    table.index = [f"{dataset} {replicate}" for dataset, replicate in table.index]
    return table


def average_ranks(blocks: pd.DataFrame, better: str) -> pd.Series:
    """Each entrant's mean rank over the blocks (1 = best; ties share their mean rank), best first."""
    return (blocks if better == "lower" else -blocks).rank(axis=1, method="average").mean().sort_values()


def rank_metric(metrics: pd.DataFrame, metric: str, better: str, unit: str | None = None) -> Ranking:
    """The ranking of every entrant on `metric`, `better` 'lower' or 'higher', over blocks of `unit` (by default the
    dataset where there are two or more: `block_unit`)."""
    unit = unit or block_unit(metrics)
    blocks = metric_blocks(metrics, metric, unit)
    average = average_ranks(blocks, better)
    friedman_p, nemenyi = None, None
    if blocks.shape[1] >= 3 and blocks.shape[0] >= 2:
        friedman_p = float(stats.friedmanchisquare(*(blocks[column] for column in blocks)).pvalue)
        nemenyi = scikit_posthocs.posthoc_nemenyi_friedman(blocks.to_numpy())
        nemenyi.index = nemenyi.columns = blocks.columns
    return Ranking(metric, blocks, average, friedman_p, nemenyi, unit)


def paired_replicates(metrics: pd.DataFrame, task: str) -> pd.DataFrame:
    """`metrics` less the replicates (a dataset's split and seed) where some entrant that ran on the dataset lacks a
    finite test value of one of the task's ranked metrics (each one's `metric_blocks`): every metric is then ranked
    and tested over the same replicates, so a diverged run (an infinite RMSE beside a finite but huge NLL) leaves its
    split out of all of them, not of one. An entrant with no run on a dataset (a method too costly for it) leaves
    that dataset's replicates in, for the tests within the dataset and those of pairs that both ran on it; a ranking
    over datasets leaves the dataset out (`metric_blocks`), or ranks without the entrant (`on_every_dataset`)."""
    recorded = set(metrics["metric"])
    ranked = [metric for metric in RANKED_METRICS.get(task, {}) if TEST_PREFIX + metric in recorded]
    if not ranked:
        return metrics
    per_dataset = [metrics[metrics["dataset"] == dataset] for dataset in metrics["dataset"].unique()]
    complete = {
        block
        for rows in per_dataset
        for block in set.intersection(*(set(metric_blocks(rows, m).index) for m in ranked))
    }
    columns = zip(metrics["dataset"], metrics["seed"], metrics["hparams"], strict=True)
    return metrics[[f"{dataset} {replicate(seed, hparams)}" in complete for dataset, seed, hparams in columns]]


def on_every_dataset(metrics: pd.DataFrame) -> pd.DataFrame:
    """`metrics` of the methods with a run on every dataset of `metrics` (the others' runs left out)."""
    datasets = metrics.groupby("method")["dataset"].nunique()
    return metrics[metrics["method"].isin(datasets[datasets == metrics["dataset"].nunique()].index)]


def study_rankings(metrics: pd.DataFrame, task: str) -> list[Ranking]:
    """The ranking of each metric of `task` (the task of the datasets of `metrics`) that the runs record, each over
    the replicates where every entrant has a finite value of every one of them (`paired_replicates`)."""
    recorded = set(metrics["metric"])
    metrics = paired_replicates(metrics, task)
    return [
        rank_metric(metrics, metric, better)
        for metric, better in RANKED_METRICS.get(task, {}).items()
        if TEST_PREFIX + metric in recorded
    ]


def leave_one_out(ranking: Ranking, better: str) -> pd.DataFrame:
    """The ranking's sensitivity to the pool of methods: per method left out, the best of the others' average ranks
    over the same blocks and Kendall's tau (scipy) between the others' order then and their order in the full pool
    (1: the same order)."""
    full = list(ranking.average_ranks.index)
    rows = []
    for left_out in full:
        average = average_ranks(ranking.blocks.drop(columns=left_out), better)
        others = [m for m in full if m != left_out]
        tau = stats.kendalltau([others.index(m) for m in others], [average[m] for m in others]).statistic
        rows.append({"left_out": left_out, "best": average.index[0], "tau": float(tau)})
    return pd.DataFrame(rows)


COST_COLUMNS = {
    "hidden_layers": "hidden layers", "parameters": "trained parameters", "settings": "settings tried per {replicate}",
    "seconds": "training s per run",
}  # fmt: skip
"""The columns of a method's size and cost in the ranking table (`bnnrepro.report.benchmark.method_costs`); the
settings are counted per replicate (`cost_columns`)."""


def cost_columns(replicate: str) -> dict[str, str]:
    """`COST_COLUMNS` with the settings counted per the benchmark's replicate ('split' or 'seed': `replicate_name`)."""
    return {key: column.format(replicate=replicate) for key, column in COST_COLUMNS.items()}


COST_FORMATS = {"hidden_layers": "{:.2g}", "parameters": "{:,.0f}", "settings": "{:.0f}", "seconds": "{:.3g}"}
"""How a leaderboard prints each of `COST_COLUMNS`: a learned depth to two digits, a parameter count in full."""


def ranking_table(
    rankings: list[Ranking],
    standin: bool,
    costs: pd.DataFrame | None = None,
    unranked: tuple[str, ...] = (),
    replicate: str = "split",
) -> pd.DataFrame:
    """The average ranks in the layout of the report's tables: a row per entrant, a column per metric, n = blocks;
    and, given `costs` (a row per method), each entrant's `cost_columns` that `costs` has, and those of the
    `unranked` methods (rows without ranks, after the ranked)."""
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
    entrants = list(dict.fromkeys([*(row["row"] for row in rows), *unranked]))
    if costs is not None:
        rows += [
            {"row": entrant, "column": column, "ours": costs.loc[entrant, key], "ours_error": math.nan,
             "n_runs": math.nan, "standin": standin}
            for key, column in cost_columns(replicate).items()
            if key in costs
            for entrant in entrants
            if entrant in costs.index
        ]  # fmt: skip
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)


def ranking_title(ranking: Ranking) -> str:
    """'nll_original: Friedman p = 0.003 over 5 datasets, critical difference 2.1' (or why there is no test)."""
    blocks = len(ranking.blocks)
    units = f"{blocks} datasets" if ranking.unit == "dataset" else f"{blocks} replicates of one dataset"
    if ranking.friedman_p is None:
        return f"{ranking.metric}: {units}, {ranking.blocks.shape[1]} methods (no test: needs 3 and 2)"
    not_rejected = " (not rejected: no pair told apart)" if ranking.friedman_p >= SIGNIFICANCE else ""
    return (
        f"{ranking.metric}: Friedman p = {ranking.friedman_p:.2g}{not_rejected} over {units}, critical difference "
        f"{ranking.critical_difference():.2f}"
    )


def draw_critical_differences(rankings: list[Ranking], axes) -> None:
    """One critical-difference diagram per ranking on `axes`: the average ranks on an axis, a bar joining the
    methods that the Nemenyi test does not tell apart at SIGNIFICANCE (scikit-posthocs)."""
    for ranking, ax in zip(rankings, axes, strict=True):
        ax.set_title(ranking_title(ranking), fontsize=9, pad=16)
        if ranking.nemenyi_p is None:
            ax.axis("off")
            continue
        scikit_posthocs.critical_difference_diagram(
            ranking.average_ranks, ranking.posthoc_p(), ax=ax, alpha=SIGNIFICANCE, label_props={"fontsize": 8}
        )

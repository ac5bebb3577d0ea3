"""Which methods are practically equivalent to the best, with the dataset as the unit: the Bayesian signed-rank test
of Benavoli et al. (2017, JMLR 18(77) §5) on each method's per-dataset means against the best method's (baycomp's
`SignedRankTest`), with a region of practical equivalence (ROPE) per metric (`ROPES`). It answers "with what
probability is this method worse than the best by more than the ROPE, within it, or better", where the Friedman and
Nemenyi tests only say which average ranks differ.

This is not the hierarchical test of Corani et al. (2017), which models the splits within each dataset and needs
baycomp's Stan backend (pystan, not installed here); on the dataset means it weighs every dataset alike and ignores
how noisy each mean is, which only a hierarchical model can weigh.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from baycomp import SignedRankTest

from bnnrepro.artifacts.render import TABLE_COLUMNS
from bnnrepro.report.ranking import RANKED_METRICS, Ranking

ROPES = {
    "rmse_original": ("relative", 0.01),
    "nll_original": ("absolute", 0.01),
    "accuracy": ("absolute", 0.005),
    "nll": ("absolute", 0.01),
    "ece": ("absolute", 0.005),
}
"""metric: (how a difference is measured, the ROPE). RMSE in the data's units differs in scale between datasets:
relative to the best's, 1% of it; an NLL per datum in nats, 0.01; accuracy and ECE, half a percentage point."""
RANKED_METRICS_DIRECTION = {metric: better for task in RANKED_METRICS.values() for metric, better in task.items()}
"""metric: 'lower' or 'higher', whichever is better."""
DECIDED = 0.95
"""The posterior probability at which the test's answer counts as decided."""
MIN_DATASETS = 5
"""The fewest datasets a verdict is drawn from. With fewer, the signed-rank test's prior decides: its Dirichlet
process puts one pseudo-observation at zero, so two datasets that agree give P = 0.96 however small they are, and a
question about a new dataset is not answered by two or three (the exact one-sided Wilcoxon signed-rank test
cannot reject at 5% with fewer than five either). The probabilities are still shown."""
SAMPLES, SEED = 50_000, 0
"""Posterior draws of the Dirichlet process (baycomp's default count) and their seed, for a document that does not
change between regenerations."""


@dataclass(frozen=True)
class Comparison:
    """One method against the best on a metric: P(worse than the best by more than the ROPE), P(within it),
    P(better), over `datasets` datasets."""

    method: str
    worse: float
    equivalent: float
    better: float
    datasets: int


def excess(blocks: pd.DataFrame, best: str, metric: str, higher_is_better: bool) -> pd.DataFrame:
    """Each method's per-dataset shortfall against `best` ([datasets x methods], positive = worse), measured as the
    metric's ROPE is (`ROPES`)."""
    kind, _ = ROPES[metric]
    shortfall = blocks.rsub(blocks[best], axis=0) if higher_is_better else blocks.sub(blocks[best], axis=0)
    return shortfall.div(blocks[best].abs(), axis=0) if kind == "relative" else shortfall


def compare_to_best(ranking: Ranking) -> tuple[str, list[Comparison]]:
    """The best method of a ranking over datasets (its best average rank, as the leaderboard's) and each other
    method's comparison with it on the ranking's per-dataset values, most likely equivalent first."""
    if ranking.unit != "dataset":
        raise ValueError(f"{ranking.metric}: the test compares per-dataset means; this ranking is over {ranking.unit}s")
    best = str(ranking.average_ranks.index[0])
    shortfall = excess(ranking.blocks, best, ranking.metric, RANKED_METRICS_DIRECTION[ranking.metric] == "higher")
    comparisons = []
    for method in [m for m in ranking.blocks.columns if m != best]:
        # baycomp's (left, rope, right) for y - x: here the shortfall, so right is "worse than the best"
        better, equivalent, worse = SignedRankTest.probs(
            np.zeros(len(shortfall)), shortfall[method].to_numpy(), rope=ROPES[ranking.metric][1], nsamples=SAMPLES,
            random_state=SEED,
        )  # fmt: skip
        comparisons.append(Comparison(method, float(worse), float(equivalent), float(better), len(shortfall)))
    return best, sorted(comparisons, key=lambda c: (-(c.equivalent + c.better), c.method))


def decided(probability: float, datasets: int) -> bool:
    """Whether an answer of this probability over this many datasets counts as decided (`DECIDED`, `MIN_DATASETS`)."""
    return datasets >= MIN_DATASETS and probability >= DECIDED


def verdict(comparison: Comparison) -> str:
    """'equivalent or better', 'worse' (each `decided`) or 'undecided'."""
    if decided(comparison.equivalent + comparison.better, comparison.datasets):
        return "equivalent or better"
    if decided(comparison.worse, comparison.datasets):
        return "worse"
    return "undecided"


def compare_each(rankings: list[Ranking]) -> dict[str, tuple[str, list[Comparison]]]:
    """{metric: `compare_to_best`} of each ranking over datasets (none over one dataset's replicates)."""
    return {ranking.metric: compare_to_best(ranking) for ranking in rankings if ranking.unit == "dataset"}


def equivalence_table(
    rankings: list[Ranking], standin: bool, compared: dict[str, tuple[str, list[Comparison]]] | None = None
) -> pd.DataFrame:
    """The comparisons of each ranking over datasets (`compare_each`, or the ones already `compared`) in the layout of
    the report's tables: a row per method, per metric the columns 'P(equivalent or better)' and 'P(worse)' against
    that metric's best (the best itself: 1 and 0), n = the datasets the pair shares; empty where the rankings are
    over one dataset's replicates (one dataset decides nothing about data sets)."""
    rows = []
    for metric, (best, comparisons) in (compare_each(rankings) if compared is None else compared).items():
        if not comparisons:
            continue
        datasets = max(c.datasets for c in comparisons)
        reference = Comparison(best, worse=0.0, equivalent=1.0, better=0.0, datasets=datasets)
        for c in [reference, *comparisons]:
            cell = {"ours_error": math.nan, "standin": standin, "n_runs": c.datasets}
            for column, value in (("P(equivalent or better)", c.equivalent + c.better), ("P(worse)", c.worse)):
                rows.append({**cell, "row": c.method, "column": f"{metric} {column}", "ours": value})
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)

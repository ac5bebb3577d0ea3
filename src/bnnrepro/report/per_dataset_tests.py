"""Per dataset, each method against that dataset's best over its data splits: which differences its splits show.

The splits of one dataset are not independent samples (their training sets overlap), so the paired t-test's
variance of the mean difference, var/n, is too small; the corrected resampled t-test (Nadeau & Bengio 2003, eq. for
the "corrected resampled t") scales it to var (1/n + n_test/n_train). Its p-values, two-sided, are corrected with
Holm's method over every comparison of a metric in the benchmark (`holm_adjusted`). The same Student distribution is the
posterior of the Bayesian correlated t-test (Corani & Benavoli 2015, baycomp's `CorrelatedTTest`), from which each
comparison also gets P(within the metric's region of practical equivalence, `ROPES`).

These tests speak of one dataset each; which method to use over datasets is the dataset-level analysis's answer
(`bnnrepro.report.practical_equivalence`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd
from scipy import stats

from bnnrepro.artifacts.verdict_rules import holm_adjusted
from bnnrepro.report.practical_equivalence import DECIDED, RANKED_METRICS_DIRECTION, ROPES, excess
from bnnrepro.report.ranking import SIGNIFICANCE, metric_blocks

HOLDOUT_FRACTION = 0.1
"""The share of each dataset a split holds out for testing: a tenth in the standard UCI splits (Hernandez-Lobato &
Adams 2015, §5), so n_test/n_train = 1/9; a benchmark with other splits states its own (`holdout_fraction`), 0 where
its replicates are independent draws of the data (no training set overlaps another: no correction)."""


def holdout_fraction(benchmark: Mapping) -> float:
    """A benchmark's held-out share per split: its study's `holdout_fraction`, else `HOLDOUT_FRACTION`."""
    return float(benchmark.get("holdout_fraction", HOLDOUT_FRACTION))


@dataclass(frozen=True)
class SplitComparison:
    """One method against its dataset's best on a metric: the mean shortfall over the splits (positive = worse,
    measured as the metric's ROPE is), the two-sided p-value of the corrected resampled t-test (NaN where the
    shortfall does not vary over the splits: no test), the Holm-corrected one, and P(within the ROPE)."""

    dataset: str
    method: str
    best: str
    shortfall: float
    p: float
    p_holm: float
    equivalent: float
    splits: int


def corrected_t(shortfall: pd.Series, holdout: float) -> stats.rv_continuous | None:
    """The Student distribution of the mean shortfall with Nadeau & Bengio's corrected variance (None without spread
    or with one split)."""
    n = len(shortfall)
    variance = float(shortfall.var(ddof=1)) * (1 / n + holdout / (1 - holdout)) if n > 1 else 0.0
    if not variance > 0:
        return None
    return stats.t(df=n - 1, loc=float(shortfall.mean()), scale=math.sqrt(variance))


def compare_within_datasets(
    selected: pd.DataFrame, metric: str, holdout: float = HOLDOUT_FRACTION
) -> list[SplitComparison]:
    """Per dataset of `selected` (the runs at the settings validation chose), each method against the one with the
    best mean `metric` over the splits where every method has a result; Holm over all these comparisons."""
    higher = RANKED_METRICS_DIRECTION[metric] == "higher"
    rope, found = ROPES[metric][1], []
    for dataset in dict.fromkeys(selected["dataset"]):
        blocks = metric_blocks(selected[selected["dataset"] == dataset], metric, unit="replicate")
        if blocks.shape[1] < 2 or blocks.empty:
            continue
        best = str(blocks.mean().idxmax() if higher else blocks.mean().idxmin())
        shortfalls = excess(blocks, best, metric, higher)
        for method in [m for m in blocks.columns if m != best]:
            posterior = corrected_t(shortfalls[method], holdout)
            p = math.nan if posterior is None else min(1.0, 2 * float(min(posterior.cdf(0), posterior.sf(0))))
            equivalent = math.nan if posterior is None else float(posterior.cdf(rope) - posterior.cdf(-rope))
            shortfall = float(shortfalls[method].mean())
            found.append(SplitComparison(dataset, method, best, shortfall, p, math.nan, equivalent, len(blocks)))
    tested = [i for i, c in enumerate(found) if not math.isnan(c.p)]
    holm = holm_adjusted([found[i].p for i in tested])
    adjusted = dict(zip(tested, map(float, holm), strict=True))
    return [replace(c, p_holm=adjusted.get(i, math.nan)) for i, c in enumerate(found)]


def split_verdict(comparison: SplitComparison) -> str:
    """'worse' (the best is better at SIGNIFICANCE after Holm), 'equivalent' (P(within the ROPE) at least DECIDED),
    or 'not told apart'."""
    if comparison.p_holm < SIGNIFICANCE and comparison.shortfall > 0:
        return "worse"
    if comparison.equivalent >= DECIDED:
        return "equivalent"
    return "not told apart"

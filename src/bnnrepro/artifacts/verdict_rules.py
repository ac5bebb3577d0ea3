"""The statistical rules that turn numbers into verdicts: one for a table cell against its published value, one for a
comparison claim over paired repetitions. Every verdict in the tables, the report and docs/fidelity.md comes from here.

A cell (`cell_verdict`). Ours is a mean with its standard error over our n runs; the paper's ± is turned into a
standard error by its kind (a standard error is kept; a standard deviation over the paper's n runs is divided by
sqrt(n); the kind and n are the catalog's `published.spread`). Welch's test on the two means
(`scipy.stats.ttest_ind_from_stats`) at level `LEVEL`, two-sided, then:

- *differs*: the test rejects equal means;
- *undetermined*: it does not reject, but the comparison cannot tell: we have one run (no uncertainty of ours), or our
  standard error is over `WIDER_THAN_PAPER` times the paper's, or the 95% interval of the difference is wider than
  the published number itself (a result of zero, or twice the number, would pass);
- *agrees*: neither;
- *not judged*: no published error, or one the paper does not say how to read (kind or number of runs not stated).

A result drawn from the published distribution with the paper's n agrees in about 99% of draws, one shifted by three
combined standard errors differs in about 90% (tests/test_verdict_rules.py simulates both for every catalog cell).

A comparison claim (`paired_comparison`). The difference `first - second` over repetitions paired by seed or split:
one-sided paired t-tests (`scipy.stats.ttest_rel`) at level `LEVEL`, one in each direction. *holds* when the stated
direction is significant, *contradicted* when the other is, *not resolved* otherwise (fewer than two repetitions,
or too much noise to tell). A margin turns "better" into "not worse by more than the margin" (non-inferiority).
Where a repetition's difference is infinite (a forecast that overflowed), the means say nothing: the signs of the
differences are tested instead (`scipy.stats.binomtest`, one-sided each way; all five of five seeds give p = 0.031).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.05
"""The significance level of every test here."""
WIDER_THAN_PAPER = 3.0
"""Our standard error over the paper's beyond which a cell that passes the test is undetermined, not agreeing."""

AGREES, DIFFERS, UNDETERMINED, NOT_JUDGED = "agrees", "differs", "undetermined", "not judged"
CELL_VERDICTS = (AGREES, DIFFERS, UNDETERMINED, NOT_JUDGED)
HOLDS, CONTRADICTED, NOT_RESOLVED = "holds", "contradicted", "not resolved"

STANDARD_ERROR, STANDARD_DEVIATION, UNSTATED = "standard_error", "standard_deviation", "unstated"


@dataclass(frozen=True)
class PublishedSpread:
    """What a paper's ± is: `kind` (standard error, standard deviation, or unstated) over `runs` runs (None where
    the paper does not say)."""

    kind: str
    runs: int | None

    def standard_error(self, error: float) -> float:
        """The published error as a standard error of the published mean; NaN where it cannot be read as one."""
        if pd.isna(error) or self.runs is None or self.kind == UNSTATED:
            return math.nan
        return float(error) if self.kind == STANDARD_ERROR else float(error) / math.sqrt(self.runs)

    def why_not_judged(self, error: float) -> str | None:
        if pd.isna(error):
            return "no published error"
        if self.kind == UNSTATED:
            return "the paper does not say what its ± is"
        if self.runs is None:
            return "the paper does not say over how many runs its ± is"
        return None


@dataclass(frozen=True)
class CellVerdict:
    label: str  # one of CELL_VERDICTS
    p_value: float  # Welch's two-sided p; NaN where no test was made
    reason: str


def cell_verdict(
    ours: float, ours_error: float, ours_runs: int, published: float, published_error: float, spread: PublishedSpread
) -> CellVerdict:
    """The verdict of our mean `ours` (standard error `ours_error` over `ours_runs` runs) against the published
    value and its ± read by `spread` (see the module docstring)."""
    if pd.isna(ours) or pd.isna(published):
        return CellVerdict(NOT_JUDGED, math.nan, "no value of ours" if pd.isna(ours) else "no published value")
    if (why := spread.why_not_judged(published_error)) is not None:
        return CellVerdict(NOT_JUDGED, math.nan, why)
    paper_se = spread.standard_error(published_error)
    if pd.isna(ours_runs) or ours_runs < 2 or pd.isna(ours_error):
        return CellVerdict(UNDETERMINED, math.nan, "one run of ours: no uncertainty to compare with")
    ours_runs = int(ours_runs)
    paper_runs = spread.runs if spread.kind == STANDARD_DEVIATION else max(spread.runs, 2)
    if ours_error == 0 and paper_se == 0:
        equal = math.isclose(ours, published, rel_tol=1e-12, abs_tol=1e-12)
        return CellVerdict(AGREES if equal else DIFFERS, 1.0 if equal else 0.0, "both without spread")
    test = stats.ttest_ind_from_stats(
        ours, ours_error * math.sqrt(ours_runs), ours_runs,
        published, paper_se * math.sqrt(paper_runs), paper_runs, equal_var=False,
    )  # fmt: skip
    p_value = float(test.pvalue)
    interval = stats.norm.ppf(1 - LEVEL / 2) * math.hypot(ours_error, paper_se)
    if p_value < LEVEL:
        return CellVerdict(DIFFERS, p_value, f"Welch p = {p_value:.2g} < {LEVEL}")
    if ours_error > WIDER_THAN_PAPER * paper_se:
        return CellVerdict(UNDETERMINED, p_value, f"our s.e. {ours_error:.2g} is over {WIDER_THAN_PAPER:g}x the "
                           f"paper's {paper_se:.2g}")  # fmt: skip
    if interval > abs(published):
        return CellVerdict(UNDETERMINED, p_value, f"the 95% interval of the difference (± {interval:.2g}) is wider "
                           "than the published value")  # fmt: skip
    return CellVerdict(AGREES, p_value, f"Welch p = {p_value:.2g}")


def our_standard_error(ours_error: float, runs: int, spread: PublishedSpread) -> float:
    """Our standard error from a table's `ours_error`, which a draw function gives in the paper's kind (a standard
    deviation over our runs beside a paper's standard deviation)."""
    if pd.isna(ours_error):
        return math.nan
    if spread.kind == STANDARD_DEVIATION and not pd.isna(runs) and runs > 0:
        return float(ours_error) / math.sqrt(runs)
    return float(ours_error)


def spread_of(published: dict) -> PublishedSpread:
    """The `spread` of a catalog artifact's `published` block: {kind, runs}; unstated where it has none."""
    spread = published.get("spread") or {}
    return PublishedSpread(spread.get("kind", UNSTATED), spread.get("runs"))


@dataclass(frozen=True)
class Comparison:
    status: str  # HOLDS, CONTRADICTED or NOT_RESOLVED
    mean_difference: float
    repetitions: int
    p_value: float  # the one-sided p of the stated direction

    def describe(self) -> str:
        if self.repetitions < 2:
            return f"difference {self.mean_difference:+.3g} over {self.repetitions} repetition"
        return (f"mean difference {self.mean_difference:+.3g} over {self.repetitions} paired repetitions, "
                f"one-sided p = {self.p_value:.2g}")  # fmt: skip


def paired_comparison(first: pd.Series, second: pd.Series, stated: str, margin: float = 0.0) -> Comparison:
    """Whether `first` is `stated` ("greater" or "less") than `second` over the repetitions the two share (their
    index: seeds or splits), allowing `margin` (first may fall short of second by up to `margin` in the stated
    direction: non-inferiority). See the module docstring."""
    if stated not in ("greater", "less"):
        raise ValueError(f"stated must be 'greater' or 'less', got {stated!r}")
    shared = first.index.intersection(second.index)
    sign = 1.0 if stated == "greater" else -1.0
    with np.errstate(invalid="ignore"):
        difference = sign * (first[shared].astype(float) - second[shared].astype(float)) + margin
    difference = difference[difference.notna()]  # inf - inf: both overflowed, no direction
    if np.isinf(difference).any():
        return _sign_test(difference, sign)
    mean = float(sign * (difference.mean() - margin)) if len(difference) else math.nan
    if len(difference) < 2 or float(difference.std(ddof=1)) == 0.0:
        # no spread: a test cannot tell, unless every repetition shows the same nonzero difference
        constant = len(difference) >= 2 and float(difference.iloc[0]) != 0.0
        status = (HOLDS if difference.iloc[0] > 0 else CONTRADICTED) if constant else NOT_RESOLVED
        return Comparison(status, mean, len(difference), 0.0 if constant else math.nan)
    zeros = np.zeros(len(difference))
    p_stated = float(stats.ttest_rel(difference.to_numpy(), zeros, alternative="greater").pvalue)
    p_other = float(stats.ttest_rel(difference.to_numpy(), zeros, alternative="less").pvalue)
    return Comparison(decided_by(p_stated, p_other), mean, len(difference), p_stated)


def _sign_test(difference: pd.Series, sign: float) -> Comparison:
    """The paired comparison by the signs of the differences (some infinite; positive in the stated direction):
    holds when significantly many are positive, contradicted when significantly many are negative; its difference
    is the median of first - second (`sign` undoes the stated direction)."""
    positive, negative = int((difference > 0).sum()), int((difference < 0).sum())
    trials = positive + negative
    if trials == 0:
        return Comparison(NOT_RESOLVED, math.nan, len(difference), math.nan)
    p_stated = float(stats.binomtest(positive, trials, alternative="greater").pvalue)
    p_other = float(stats.binomtest(negative, trials, alternative="greater").pvalue)
    return Comparison(decided_by(p_stated, p_other), sign * float(difference.median()), len(difference), p_stated)


def decided_by(p_stated: float, p_other: float) -> str:
    """A directional claim from its two one-sided p-values: holds when the stated direction is significant at
    `LEVEL`, contradicted when the other is, not resolved otherwise."""
    return HOLDS if p_stated < LEVEL else CONTRADICTED if p_other < LEVEL else NOT_RESOLVED


def all_of(statuses: list[str]) -> str:
    """A claim over several comparisons ("at every omega", "on every data set"): holds when each holds,
    contradicted when one is contradicted, not resolved otherwise."""
    if statuses and all(s == HOLDS for s in statuses):
        return HOLDS
    return CONTRADICTED if CONTRADICTED in statuses else NOT_RESOLVED

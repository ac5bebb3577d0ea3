"""The statistical rules that turn numbers into verdicts: one for a table cell against its published value, one for a
comparison claim over paired repetitions. Every verdict in the tables, the report and docs/fidelity.md comes from here.

A cell (`cell_verdict`). Ours is a mean with its standard error over our n runs; the paper's ± is turned into a
standard error by its kind (a standard error is kept; a standard deviation over the paper's n runs is divided by
sqrt(n); the kind and n are the catalog's `published.spread`). The difference d = ours - published has the combined
standard error of the two and Welch-Satterthwaite degrees of freedom. Its metric kind gives an equivalence margin
(`MARGINS`: a difference the works themselves would not call one), then:

- *agrees*: equivalence is shown, by two one-sided t-tests at level `LEVEL` (the 90% interval of d lies inside the
  margin): a true difference at the margin or beyond agrees in at most 5% of comparisons;
- *differs*: Welch's two-sided test at `LEVEL` separates the two and equivalence is not shown;
- *undetermined*: neither (the interval is too wide to tell), or we have one run (no uncertainty of ours), or the
  test has no number (NaN);
- *not judged*: no published error, or one the paper does not say how to read (number of runs not stated, a
  standard deviation over one run); a ± whose kind alone is unstated is read both as a standard deviation and as a
  standard error: the verdict where the two readings give the same, undetermined where they do not;
- *not comparable*: the catalog says why the published column cannot be set beside ours (`not_comparable`).

Where a source publishes its own runs on the splits we run (`paired_cell_verdict`), the difference is taken per split
and the same three outcomes are decided by paired tests over the n splits (n - 1 degrees of freedom): the splits'
shared difficulty cancels.

Rates, simulated at each judged catalog cell's own n (tests/test_verdict_rates.py, 400 draws a cell): a result
drawn from the published distribution agrees in at least 90% of draws wherever the margin is resolvable
(`margin_resolvable`: a design power of at least 90%, true of 120 of the 209 judged catalog cells; elsewhere the
paper's own error over few runs is too wide for the margin, e.g. UDN Table 1 and the UCI log-likelihoods on the small
sets, and a faithful result is often undetermined); a result whose true difference is the margin agrees in at most
5% (within two binomial standard errors) at every cell; one shifted by twice the margin differs in at least 80%.

A comparison claim (`paired_comparison`). The difference `first - second` over repetitions paired by seed or split:
one-sided paired t-tests (`scipy.stats.ttest_1samp` on the differences) at level `LEVEL`, one in each direction.
*holds* when the stated direction is significant, *contradicted* when the other is, *not resolved* otherwise (fewer
than two repetitions, or too much noise to tell). A margin turns "better" into "not worse by more than the margin"
(non-inferiority). Where the differences have no spread (all equal) or one is infinite (a forecast that overflowed),
a t-test says nothing: the signs of the differences are tested instead (`scipy.stats.binomtest`, one-sided each way;
all five of five seeds give p = 0.031, two of two 0.25). A comparison the t-test leaves *not resolved* says how many
repetitions would decide it at the size it shows (`repetitions_to_decide`: the paired t-test's power of
`DECIDING_POWER` for a true difference of the observed mean, in units of the observed spread; statsmodels'
`TTestPower`), and which way: where the observed difference points against the claim, more repetitions would, if
anything, contradict it; they cannot make it hold unless the direction itself is wrong.

A claim over K comparisons (`all_of`: "at every omega", "better than each"): *holds* when each comparison holds at
`LEVEL` (an intersection-union test, which needs no correction), *contradicted* when at least one is contradicted
after Holm's correction over the K (`holm_adjusted`): with every method truly equal, a claim is contradicted in at most
5% of repetitions whatever K.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower

LEVEL = 0.05
"""The significance level of every test here."""
DESIGN_POWER = 0.9
"""The power to show agreement, for a result equal to the paper's, below which a cell's margin is narrower than the
comparison resolves (`margin_resolvable`)."""

AGREES, DIFFERS, UNDETERMINED, NOT_JUDGED, NOT_COMPARABLE = (
    "agrees", "differs", "undetermined", "not judged", "not comparable",
)  # fmt: skip
CELL_VERDICTS = (AGREES, DIFFERS, UNDETERMINED, NOT_JUDGED, NOT_COMPARABLE)
JUDGED_VERDICTS = (AGREES, DIFFERS, UNDETERMINED)
"""The verdicts of a cell that was compared; the other two are counted apart, never as differing."""
HOLDS, CONTRADICTED, NOT_RESOLVED = "holds", "contradicted", "not resolved"
DECIDING_POWER = 0.8
"""The power at which a not-resolved comparison's `repetitions_to_decide` would decide it."""

STANDARD_ERROR, STANDARD_DEVIATION, UNSTATED = "standard_error", "standard_deviation", "unstated"


# --- equivalence margins -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Margin:
    """An equivalence margin: `fraction` of the published value's loss-like reference (the value itself, or its
    complement to `complement`: an accuracy's error rate), or `absolute`, and at least `floor`; `reason` says why."""

    fraction: float = 0.1
    complement: float | None = None
    absolute: float | None = None
    floor: float = 0.0
    reason: str = ""

    def size(self, published: float) -> float:
        if self.absolute is not None:
            return self.absolute
        reference = abs(self.complement - published) if self.complement is not None else abs(published)
        return max(self.fraction * reference, self.floor)

    def describe(self) -> str:
        if self.absolute is not None:
            return f"± {self.absolute:.3g}"
        of = f"of {self.complement:g} - value" if self.complement is not None else "of the value"
        return f"± {self.fraction:.0%} {of}" + (f", at least {self.floor:g}" if self.floor else "")


TENTH = "a tenth of a loss-like quantity: the smallest change the five works report as a finding is larger"
MARGINS: dict[str, Margin] = {
    "accuracy (%)": Margin(complement=100.0, floor=0.1, reason="a tenth of the error rate (100 - accuracy), at least "
                           "0.1 points (the tables' print precision); 1% accuracy is a tenth of a 10% error rate"),
    "error (%)": Margin(floor=0.1, reason="a tenth of the error rate, at least 0.1 points (the print precision)"),
    "RMSE": Margin(reason=TENTH),
    "MSE": Margin(fraction=0.21, reason="the MSE of an RMSE a tenth larger (1.1^2 - 1)"),
    "log-likelihood (density)": Margin(absolute=math.log(1.1), reason="log 1.1 = 0.095 nats per datum: what a "
                                       "Gaussian predictive a tenth wider loses (the RMSE's tenth, in a density's "
                                       "units)"),
    "log-likelihood (classes)": Margin(floor=0.01, reason=f"{TENTH}; at least 0.01 nats (the print precision)"),
    "ECE": Margin(reason=TENTH),
    "AUROC": Margin(complement=1.0, floor=0.001, reason="a tenth of 1 - AUROC, at least 0.001 (the print precision)"),
    "ratio": Margin(reason="a tenth of the ratio"),
    "ELBO": Margin(reason=TENTH),
}  # fmt: skip
"""The equivalence margin of each metric kind: a difference inside it is one the works themselves would not call a
difference. Stated in docs/fidelity.md with its reason."""

KIND_WORDS = (("rmse", "RMSE"), ("mse", "MSE"), ("accuracy", "accuracy (%)"), ("ece", "ECE"), ("auroc", "AUROC"),
              ("auc", "AUROC"), ("error", "error (%)"), ("/", "ratio"), ("elbo", "ELBO"))  # fmt: skip
"""A column's metric kind by the first word it contains (lower case); a log-likelihood or NLL says whether it is a
density's or a class distribution's in the catalog (`metric_kind`, `metric_kinds`)."""


def metric_kind(column: str, published: dict) -> str:
    """The metric kind (a key of `MARGINS`) of a published column: the catalog block's `metric_kinds` (a part of the
    column's name -> kind) or `metric_kind` (every column), else the words of `KIND_WORDS`."""
    for part, kind in (published.get("metric_kinds") or {}).items():
        if part in column:
            return kind
    if "metric_kind" in published:
        return published["metric_kind"]
    lowered = column.lower()
    for word, kind in KIND_WORDS:
        if word in lowered:
            return kind
    raise ValueError(f"the published column {column!r} names no metric kind ({', '.join(MARGINS)}): give the "
                     "catalog's published block `metric_kinds: {<part of the column>: <kind>}`")  # fmt: skip


# --- a table cell against its published value ----------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedSpread:
    """What a paper's ± is: `kind` (standard error, standard deviation, or unstated) over `runs` runs (None where
    the paper does not say)."""

    kind: str
    runs: int | None

    def standard_error(self, error: float) -> float:
        """The published error as a standard error of the published mean; NaN where it cannot be read as one."""
        if self.why_not_judged(error) is not None or self.kind == UNSTATED:
            return math.nan
        return float(error) if self.kind == STANDARD_ERROR else float(error) / math.sqrt(self.runs)

    def readings(self) -> tuple[PublishedSpread, ...]:
        """The kinds the ± may be: itself, or both a standard deviation and a standard error where the paper does not
        say which (a cell is judged under each, `cell_verdict`)."""
        if self.kind != UNSTATED:
            return (self,)
        return PublishedSpread(STANDARD_DEVIATION, self.runs), PublishedSpread(STANDARD_ERROR, self.runs)

    def why_not_judged(self, error: float) -> str | None:
        if pd.isna(error):
            return "no published error"
        if self.runs is None:
            unstated = "what its ± is nor " if self.kind == UNSTATED else ""
            return f"the paper does not say {unstated}over how many runs its ± is"
        if self.kind in (STANDARD_DEVIATION, UNSTATED) and self.runs < 2:
            return "a standard deviation over one run"
        return None


@dataclass(frozen=True)
class CellVerdict:
    label: str  # one of CELL_VERDICTS
    p_value: float  # Welch's two-sided p; NaN where no test was made
    reason: str
    margin: float = math.nan  # the equivalence margin (`MARGINS`)
    p_equivalence: float = math.nan  # the larger p of the two one-sided tests against the margin
    p_holm: float = math.nan  # the two-sided p after Holm's correction over its family (`family_differs`)


@dataclass(frozen=True)
class Difference:
    """ours - published with its combined standard error and Welch-Satterthwaite degrees of freedom."""

    value: float
    standard_error: float
    dof: float

    @classmethod
    def of(cls, ours: float, ours_se: float, ours_runs: int, published: float, paper_se: float, paper_runs: int):
        shares = [(se**2, runs) for se, runs in ((ours_se, ours_runs), (paper_se, paper_runs)) if se > 0]
        variance = sum(v for v, _ in shares)
        dof = variance**2 / sum(v**2 / (runs - 1) for v, runs in shares) if variance > 0 else math.inf
        return cls(ours - published, math.sqrt(variance), dof)

    def welch_p(self) -> float:
        """Two-sided p of d = 0."""
        return float(2 * stats.t.sf(abs(self.value) / self.standard_error, self.dof))

    def equivalence_p(self, margin: float) -> float:
        """The larger p of the two one-sided tests of |d| >= margin (TOST): below LEVEL, equivalence is shown."""
        below = stats.t.sf((self.value + margin) / self.standard_error, self.dof)
        above = stats.t.cdf((self.value - margin) / self.standard_error, self.dof)
        return float(max(below, above))


def cell_verdict(
    ours: float,
    ours_error: float,
    ours_runs: int,
    published: float,
    published_error: float,
    spread: PublishedSpread,
    margin: float,
) -> CellVerdict:
    """The verdict of our mean `ours` (standard error `ours_error` over `ours_runs` runs) against the published
    value and its ± read by `spread`, within the equivalence `margin` (see the module docstring). A ± whose kind the
    paper does not state is read both ways: the verdict where the two readings agree, undetermined where not."""
    if pd.isna(ours) or pd.isna(published):
        return CellVerdict(NOT_JUDGED, math.nan, "no value of ours" if pd.isna(ours) else "no published value")
    if (why := spread.why_not_judged(published_error)) is not None:
        return CellVerdict(NOT_JUDGED, math.nan, why)
    if pd.isna(ours_runs) or ours_runs < 2 or pd.isna(ours_error):
        return CellVerdict(UNDETERMINED, math.nan, "one run of ours: no uncertainty to compare with", margin)
    verdicts = [
        _judged(Difference.of(ours, ours_error, int(ours_runs), published, reading.standard_error(published_error),
                              max(reading.runs, 2)), margin)
        for reading in spread.readings()
    ]  # fmt: skip
    if len({verdict.label for verdict in verdicts}) == 1:
        sd_first = verdicts[0]
        return sd_first if len(verdicts) == 1 else CellVerdict(
            sd_first.label, max(v.p_value for v in verdicts), "either reading of the unstated ±: " + sd_first.reason,
            margin, max(v.p_equivalence for v in verdicts))  # fmt: skip
    as_sd, as_se = verdicts
    return CellVerdict(
        UNDETERMINED,
        math.nan,
        f"the paper does not say what its ± is: {as_sd.label} as a standard "
        f"deviation ({as_sd.reason}), {as_se.label} as a standard error ({as_se.reason})",
        margin,
    )


def paired_cell_verdict(ours: Sequence[float], published: Sequence[float], margin: float) -> CellVerdict:
    """The verdict of our runs against a source's own runs on the same splits, paired by split: the mean of the
    per-split differences, its standard error over the n pairs and n - 1 degrees of freedom, decided as `cell_verdict`
    decides (a paired t-test for a difference, two one-sided paired tests for equivalence)."""
    differences = np.asarray(ours, dtype=float) - np.asarray(published, dtype=float)
    if differences.size < 2 or not np.isfinite(differences).all():
        return CellVerdict(UNDETERMINED, math.nan, f"{differences.size} paired split(s) with finite values", margin)
    spread = float(np.std(differences, ddof=1)) / math.sqrt(differences.size)
    verdict = _judged(Difference(float(differences.mean()), spread, differences.size - 1), margin, "paired t-test")
    return CellVerdict(verdict.label, verdict.p_value, f"paired over {differences.size} splits: {verdict.reason}",
                       margin, verdict.p_equivalence)  # fmt: skip


def _judged(difference: Difference, margin: float, test: str = "Welch") -> CellVerdict:
    """agrees (TOST within `margin`), differs (the two-sided test) or undetermined, from one difference."""
    if difference.standard_error == 0:
        inside = abs(difference.value) < margin
        return CellVerdict(AGREES if inside else DIFFERS, float(difference.value == 0), "both without spread: the "
                           f"difference {difference.value:+.3g} is {'in' if inside else 'out'}side ± {margin:.3g}",
                           margin, float(not inside))  # fmt: skip
    p_value, p_equivalence = difference.welch_p(), difference.equivalence_p(margin)
    tests = f"TOST p = {p_equivalence:.2g} within ± {margin:.3g}, {test} p = {p_value:.2g}"
    if math.isnan(p_value) or math.isnan(p_equivalence):
        return CellVerdict(UNDETERMINED, p_value, "no test: " + tests, margin, p_equivalence)
    if p_equivalence < LEVEL:
        label = AGREES
    elif p_value < LEVEL:
        label = DIFFERS
    else:
        label = UNDETERMINED
    return CellVerdict(label, p_value, tests, margin, p_equivalence)


def holm_adjusted(p_values: Sequence[float]) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values, in the order given: the k-th smallest of K times (K - k + 1), made
    non-decreasing in that order and capped at 1; a test is rejected at level a when its adjusted value is at most a.
    The values of statsmodels' `multipletests(method="holm")` (tests/test_verdict_rules.py checks them against it),
    without the full garbage collection that function runs on every call (a third of a second in a process holding a
    benchmark's runs, thousands of calls in a verdict-rate simulation)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1))
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def family_differs(verdicts: Sequence[CellVerdict]) -> list[CellVerdict]:
    """The cells of one family of published-number tests (a benchmark's) with *differs* corrected for their number:
    Holm's correction over the two-sided p of every judged cell; a cell that differs alone but not after it is
    undetermined. *agrees* needs no correction for a cell's own statement (each is its own equivalence test)."""
    judged = [i for i, v in enumerate(verdicts) if v.label in JUDGED_VERDICTS and not math.isnan(v.p_value)]
    corrected = list(verdicts)
    if not judged:
        return corrected
    adjusted = holm_adjusted([verdicts[i].p_value for i in judged])
    for i, p_holm in zip(judged, adjusted, strict=True):
        v = verdicts[i]
        fell = v.label == DIFFERS and p_holm >= LEVEL
        reason = f"{v.reason}; Holm over {len(judged)}: p = {p_holm:.2g}" if fell else v.reason
        corrected[i] = replace(v, label=UNDETERMINED if fell else v.label, reason=reason, p_holm=float(p_holm))
    return corrected


def margin_resolvable(margin: float, published_error: float, spread: PublishedSpread, ours_runs: int) -> bool:
    """Whether the equivalence test has `DESIGN_POWER` to show agreement for a result equal to the paper's, with
    `ours_runs` runs of the paper's spread per run (a design check that uses no result of ours): where it has not,
    the paper's own error is too wide for the margin and a faithful result is often undetermined."""
    paper_se = spread.standard_error(published_error)
    if math.isnan(paper_se) or paper_se == 0:
        return not math.isnan(paper_se)
    run_sd = paper_se * math.sqrt(spread.runs)
    difference = Difference.of(0.0, run_sd / math.sqrt(ours_runs), ours_runs, 0.0, paper_se, max(spread.runs, 2))
    critical = stats.t.ppf(1 - LEVEL, difference.dof)
    reach = margin / difference.standard_error - critical
    return reach > 0 and 1 - 2 * stats.t.sf(reach, difference.dof) >= DESIGN_POWER


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


# --- comparison claims -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """A directional claim's outcome with the one-sided p of the stated direction and of the other (0 where the
    outcome is exact; `contradicting`: which of a family's comparisons are contradicted after Holm's correction)."""

    status: str  # HOLDS, CONTRADICTED or NOT_RESOLVED
    p_stated: float
    p_other: float
    contradicting: tuple[int, ...] = ()


@dataclass(frozen=True)
class Comparison:
    status: str  # HOLDS, CONTRADICTED or NOT_RESOLVED
    mean_difference: float
    repetitions: int
    p_value: float  # the one-sided p of the stated direction
    p_other: float = math.nan  # the one-sided p of the other direction
    effect_size: float = math.nan  # the tested differences' mean over their spread, > 0 in the stated direction

    @property
    def decision(self) -> Decision:
        return Decision(self.status, self.p_value, self.p_other)

    def describe(self) -> str:
        if self.repetitions < 2:
            return f"difference {self.mean_difference:+.3g} over {self.repetitions} repetition"
        described = (f"mean difference {self.mean_difference:+.3g} over {self.repetitions} paired repetitions, "
                     f"one-sided p = {self.p_value:.2g}")  # fmt: skip
        if self.status != NOT_RESOLVED or math.isnan(self.effect_size):
            return described
        if self.effect_size == 0.0:
            return f"{described}; no direction at all: no number of repetitions would decide it"
        needed = repetitions_to_decide(self.effect_size)
        way = "show it holding" if self.effect_size > 0 else "contradict it"
        power = f"{DECIDING_POWER:.0%} power"
        return f"{described}; at the size observed, about {needed:,} repetitions would {way} ({power})"


def repetitions_to_decide(effect_size: float) -> int:
    """The paired repetitions at which the one-sided paired t-test at `LEVEL` decides, with probability
    `DECIDING_POWER`, a true mean difference of `effect_size` standard deviations of the differences (either sign)."""
    needed = TTestPower().solve_power(effect_size=abs(effect_size), alpha=LEVEL, power=DECIDING_POWER,
                                      alternative="larger")  # fmt: skip
    return max(math.ceil(needed), 2)


def paired_comparison(first: pd.Series, second: pd.Series, stated: str, margin: float = 0.0) -> Comparison:
    """Whether `first` is `stated` ("greater" or "less") than `second` over the repetitions the two share (their
    index: seeds or splits), allowing `margin` (first may fall short of second by up to `margin` in the stated
    direction: non-inferiority). See the module docstring."""
    if stated not in ("greater", "less"):
        raise ValueError(f"stated must be 'greater' or 'less', got {stated!r}")
    shared = first.index.intersection(second.index)
    sign = 1.0 if stated == "greater" else -1.0
    with np.errstate(invalid="ignore"):
        difference = sign * (first[shared].to_numpy(float) - second[shared].to_numpy(float)) + margin
    difference = difference[~np.isnan(difference)]  # inf - inf: both overflowed, no direction
    if len(difference) < 2:
        mean = float(sign * (difference.mean() - margin)) if len(difference) else math.nan
        return Comparison(NOT_RESOLVED, mean, len(difference), math.nan, math.nan)
    if np.isinf(difference).any() or float(difference.std(ddof=1)) == 0.0:
        return _sign_test(difference, sign, margin)
    mean = float(sign * (difference.mean() - margin))
    test = stats.ttest_1samp(difference, 0.0)  # the paired t-test, on the differences
    p_stated, p_other = float(stats.t.sf(test.statistic, test.df)), float(stats.t.cdf(test.statistic, test.df))
    effect = float(difference.mean() / difference.std(ddof=1))
    return Comparison(decided_by(p_stated, p_other).status, mean, len(difference), p_stated, p_other, effect)


def _sign_test(difference: np.ndarray, sign: float, margin: float) -> Comparison:
    """The paired comparison by the signs of the differences (some infinite, or all equal; positive in the stated
    direction): holds when significantly many are positive, contradicted when significantly many are negative; its
    difference is the median of first - second (`sign` and `margin` undo the stated direction)."""
    positive, negative = int((difference > 0).sum()), int((difference < 0).sum())
    trials = positive + negative
    middle = sign * (float(np.median(difference)) - margin)
    if trials == 0:
        return Comparison(NOT_RESOLVED, middle, len(difference), math.nan, math.nan)
    p_stated = float(stats.binomtest(positive, trials, alternative="greater").pvalue)
    p_other = float(stats.binomtest(negative, trials, alternative="greater").pvalue)
    return Comparison(decided_by(p_stated, p_other).status, middle, len(difference), p_stated, p_other)


def decided_by(p_stated: float, p_other: float) -> Decision:
    """A directional claim from its two one-sided p-values: holds when the stated direction is significant at
    `LEVEL`, contradicted when the other is, not resolved otherwise."""
    status = HOLDS if p_stated < LEVEL else CONTRADICTED if p_other < LEVEL else NOT_RESOLVED
    return Decision(status, p_stated, p_other)


def all_of(decisions: Sequence[Decision]) -> Decision:
    """A claim over several comparisons ("at every omega", "better than each"): holds when each holds (intersection-
    union test), contradicted when one is contradicted after Holm's correction over all of them, not resolved
    otherwise (see the module docstring)."""
    if not decisions:
        return Decision(NOT_RESOLVED, math.nan, math.nan)
    p_stated = max((d.p_stated for d in decisions), key=lambda p: 1.0 if math.isnan(p) else p)
    others = np.array([1.0 if math.isnan(d.p_other) else d.p_other for d in decisions])
    adjusted = holm_adjusted(others)
    contradicting = tuple(int(i) for i in np.flatnonzero(adjusted <= LEVEL))
    holds = all(d.status == HOLDS for d in decisions)
    status = HOLDS if holds else CONTRADICTED if contradicting else NOT_RESOLVED
    return Decision(status, p_stated, float(adjusted.min()), contradicting)

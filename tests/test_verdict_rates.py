"""The verdict rules' rates by simulation: every judged catalog cell at its table's own n, and claims made of K
comparisons among exchangeable methods (the rates the rules' docstring states)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bnnrepro.artifacts.verdict_rules import (
    AGREES,
    CONTRADICTED,
    DIFFERS,
    Decision,
    PublishedSpread,
    all_of,
    cell_verdict,
    decided_by,
    margin_resolvable,
    paired_comparison,
)
from tests.test_verdict_rules import judged_cells

DRAWS = 400
SLACK = 2 * math.sqrt(0.05 * 0.95 / DRAWS)
"""Two binomial standard errors of a 5% rate over DRAWS draws."""


def simulated_verdicts(value: dict, spread: PublishedSpread, margin: float, shift: float, runs: int,
                       rng: np.random.Generator) -> list[str]:  # fmt: skip
    """Verdicts of DRAWS results of `runs` runs drawn from the published distribution (the paper's spread of one
    run), their true mean moved by `shift`."""
    paper_se = spread.standard_error(value["error"])
    run_sd = paper_se * math.sqrt(spread.runs)
    verdicts = []
    for _ in range(DRAWS):
        sample = rng.normal(value["value"] + shift, run_sd, runs)
        ours_se = sample.std(ddof=1) / math.sqrt(runs)
        verdict = cell_verdict(sample.mean(), ours_se, runs, value["value"], value["error"], spread, margin)
        verdicts.append(verdict.label)
    return verdicts


def rate(verdicts: list[str], label: str) -> float:
    return verdicts.count(label) / len(verdicts)


@pytest.mark.slow
@pytest.mark.parametrize("artifact_id", sorted({cell[0] for cell in judged_cells()}))
def test_cells_agree_when_faithful_and_rarely_at_the_margin(artifact_id: str) -> None:
    """Per judged cell, at the paper's n of ours: a faithful result (the published distribution) agrees in >= 90% of
    draws where the margin is resolvable (`margin_resolvable`); a result truly one margin away agrees in at most 5%
    (within two binomial standard errors), resolvable or not; one two margins away differs in >= 80% where
    resolvable."""
    rng = np.random.default_rng(0)
    for _, value, spread, margin in [cell for cell in judged_cells() if cell[0] == artifact_id]:
        if value["error"] == 0:
            continue  # a printed "± 0.00": no spread to draw from
        runs = spread.runs
        at_margin = simulated_verdicts(value, spread, margin, margin, runs, rng)
        assert rate(at_margin, AGREES) <= 0.05 + SLACK, (value, margin, rate(at_margin, AGREES))
        if not margin_resolvable(margin, value["error"], spread, runs):
            continue
        faithful = simulated_verdicts(value, spread, margin, 0.0, runs, rng)
        assert rate(faithful, AGREES) >= 0.9, (value, margin, {v: faithful.count(v) for v in set(faithful)})
        far = simulated_verdicts(value, spread, margin, 2 * margin, runs, rng)
        assert rate(far, DIFFERS) >= 0.8, (value, margin, {v: far.count(v) for v in set(far)})


def test_most_committed_cells_have_a_resolvable_margin() -> None:
    """The margins are not so narrow that the papers' own errors leave most cells undetermined by design (120 of
    the 209 judged cells are resolvable at the paper's n; the rule's docstring says which are not)."""
    cells = judged_cells()
    resolvable = [margin_resolvable(m, v["error"], s, s.runs) for _, v, s, m in cells]
    assert sum(resolvable) >= 0.55 * len(cells), f"{sum(resolvable)} of {len(cells)}"


def exchangeable_families(rivals: int, settings: int, seeds: int, rng: np.random.Generator) -> list[list[Decision]]:
    """The comparisons of "the first method beats each rival at every setting", CLAIM_DRAWS times, on methods that
    are truly equal: every result per (method, setting, seed) drawn from one normal, the comparisons paired by seed.
    Their p-values are the paired rule's (`paired_comparison`'s t-test on the differences), computed for all draws at
    once; the first family is checked against `paired_comparison` itself."""
    values = rng.normal(0.0, 1.0, (CLAIM_DRAWS, rivals + 1, settings, seeds))
    differences = (values[:, :1] - values[:, 1:]).reshape(CLAIM_DRAWS, rivals * settings, seeds)
    test = stats.ttest_1samp(differences, 0.0, axis=-1)
    p_stated, p_other = stats.t.sf(test.statistic, test.df), stats.t.cdf(test.statistic, test.df)
    families = [[decided_by(float(s), float(o)) for s, o in zip(stated, other, strict=True)]
                for stated, other in zip(p_stated, p_other, strict=True)]  # fmt: skip
    first = paired_comparison(pd.Series(values[0, 0, 0]), pd.Series(values[0, 1, 0]), "greater")
    assert (first.p_value, first.p_other) == pytest.approx((families[0][0].p_stated, families[0][0].p_other))
    return families


CLAIM_DRAWS = 2000


@pytest.mark.parametrize("rivals,settings", [(7, 1), (5, 4), (4, 17)])  # K = 7, 20, 68 (UDN Fig. 3a: 17 x 4)
def test_a_claim_of_k_comparisons_among_equal_methods_is_rarely_contradicted(rivals: int, settings: int) -> None:
    """With every method equal, a claim over K = rivals x settings comparisons (five seeds), decided by `all_of`
    as `compare_all` decides it, is contradicted in at most 5% of repetitions (within two binomial standard
    errors); without Holm's correction (any comparison contradicted at 5%) it would be twice as often or more: the
    negative control."""
    families = exchangeable_families(rivals, settings, 5, np.random.default_rng(rivals * 100 + settings))
    slack = 2 * math.sqrt(0.05 * 0.95 / CLAIM_DRAWS)
    contradicted = sum(all_of(family).status == CONTRADICTED for family in families)
    assert contradicted / CLAIM_DRAWS <= 0.05 + slack, contradicted
    uncorrected = sum(any(d.status == CONTRADICTED for d in family) for family in families)
    assert uncorrected / CLAIM_DRAWS > 0.1 + slack, uncorrected

"""Per-dataset comparisons over data splits (bnnrepro.report.per_dataset_tests): the corrected resampled t-test and
its P(equivalent) against baycomp's Bayesian correlated t-test on the same differences; controls: a method no
different from the best is not called worse, identical differences over the splits are no test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from baycomp import CorrelatedTTest
from scipy import stats

from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.per_dataset_tests import compare_within_datasets, corrected_t, holdout_fraction, split_verdict


def tidy(values: dict[str, dict[str, np.ndarray]], metric: str = "test_nll_original") -> pd.DataFrame:
    """{dataset: {method: a value per split}} as the tidy metrics of the runs validation chose."""
    rows = [{"method": method, "dataset": dataset, "hparams": f"split={k}", "seed": k, "metric": metric, "value": v}
            for dataset, methods in values.items() for method, splits in methods.items()
            for k, v in enumerate(splits)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_corrected_t_is_baycomp_s_correlated_t_test() -> None:
    """20 splits holding out a tenth: n_test/n_train = 1/9, baycomp's correction for 2 runs of 10-fold CV."""
    shortfall = pd.Series(np.random.default_rng(0).normal(0.02, 0.05, 20))
    posterior = corrected_t(shortfall, 0.1)
    left, within, right = CorrelatedTTest.probs(np.zeros(20), shortfall.to_numpy(), rope=0.01, runs=2)
    assert posterior.cdf(0.01) - posterior.cdf(-0.01) == pytest.approx(within, abs=1e-9)
    assert posterior.sf(0.01) == pytest.approx(right, abs=1e-9) and posterior.cdf(-0.01) == pytest.approx(
        left, abs=1e-9
    )


def test_a_worse_method_is_told_apart_and_an_equal_one_is_equivalent() -> None:
    rng = np.random.default_rng(1)
    base = {d: 2.0 + rng.normal(0, 0.3, 20) for d in ("a", "b")}  # each dataset's split difficulty, shared
    values = {d: {"best": base[d] + rng.normal(0, 0.002, 20), "worse": base[d] + 0.3 + rng.normal(0, 0.05, 20),
                  "same": base[d] + 0.001 + rng.normal(0, 0.002, 20)} for d in base}  # fmt: skip
    verdicts = {(c.dataset, c.method): split_verdict(c) for c in compare_within_datasets(tidy(values), "nll_original")}
    assert verdicts == {("a", "worse"): "worse", ("a", "same"): "equivalent", ("b", "worse"): "worse",
                        ("b", "same"): "equivalent"}  # fmt: skip


def test_control_exchangeable_methods_are_rarely_called_worse() -> None:
    """Four methods of one distribution on five datasets, 100 benchmarks: a 'worse' verdict against the dataset's
    best (chosen by the same noisy means) in at most 5% of them, after Holm."""
    rng = np.random.default_rng(2)
    flagged = 0
    for _ in range(100):
        values = {f"d{d}": {m: 1.0 + rng.normal(0, 0.1, 20) for m in "wxyz"} for d in range(5)}
        comparisons = compare_within_datasets(tidy(values), "nll_original")
        flagged += any(split_verdict(c) == "worse" for c in comparisons)
    assert flagged <= 5


def test_identical_differences_over_the_splits_are_no_test() -> None:
    """A shortfall the same on every split (no spread) has no p-value and decides nothing (not p = 0)."""
    values = {"a": {"best": np.linspace(1, 2, 5), "other": np.linspace(1, 2, 5) + 0.5}}
    (comparison,) = compare_within_datasets(tidy(values), "nll_original")
    assert math.isnan(comparison.p) and math.isnan(comparison.p_holm) and split_verdict(comparison) == "not told apart"


def test_a_larger_held_out_share_widens_the_test() -> None:
    """The gap splits hold out a third (config/studies/uci_benchmark_gap.yaml `holdout_fraction`): the correction
    for overlapping training sets grows with it, so the same shortfalls give a larger p-value; the standard benchmark
    keeps the tenth."""
    rng = np.random.default_rng(3)
    base = 2.0 + rng.normal(0, 0.3, 8)
    values = {"a": {"best": base + rng.normal(0, 0.01, 8), "other": base + 0.05 + rng.normal(0, 0.05, 8)}}
    tenth, third = (compare_within_datasets(tidy(values), "nll_original", share)[0].p for share in (0.1, 0.333))
    assert tenth < third
    assert holdout_fraction(load_study("uci_benchmark").benchmark) == 0.1
    assert holdout_fraction(load_study("uci_benchmark_gap").benchmark) == 0.333


def test_independent_replicates_take_the_plain_paired_t_test() -> None:
    """Held-out share 0 (config/studies/toy2d_benchmark.yaml: each seed draws its data afresh): the test is Student's
    paired t-test, scipy's on the same values; the control, the UCI tenth, gives a larger p-value."""
    rng = np.random.default_rng(4)
    base = 0.9 + rng.normal(0, 0.02, 5)
    best, other = base + rng.normal(0, 0.005, 5), base - 0.01 + rng.normal(0, 0.005, 5)
    values = {"a": {"best": best, "other": other}}
    frame = tidy(values, "test_accuracy")
    independent, tenth = (compare_within_datasets(frame, "accuracy", share)[0].p for share in (0.0, 0.1))
    assert independent == pytest.approx(stats.ttest_rel(best, other).pvalue, rel=1e-9)
    assert tenth > independent
    assert holdout_fraction(load_study("toy2d_benchmark").benchmark) == 0.0

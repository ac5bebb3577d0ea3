"""The hierarchical Bayesian comparison of each method with the best over datasets (bnnrepro.report.hierarchical_
comparison): shortfalls paired by split, a method better on one dataset only not called better on a new one while
the splits counted as independent would call it so (pseudo-replication's negative control), a method better on every
dataset called better (the positive control), seeded sampling, and kept posteriors reused only while their inputs
are current."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bnnrepro.report.hierarchical_comparison import (
    POSTERIORS_FILE,
    StalePosteriors,
    hierarchical_probabilities,
    input_digest,
    kept_comparisons,
    shortfall_matrix,
    spread_constant_rows,
)
from bnnrepro.report.ranking import study_rankings


def splits(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """A tidy frame of test RMSEs: {dataset: {method: one value per split}}."""
    rows = [
        {"method": m, "hparams": f"split={k}", "seed": 0, "dataset": d, "metric": "test_rmse_original", "value": v}
        for d, methods in values.items()
        for m, series in methods.items()
        for k, v in enumerate(series)
    ]
    return pd.DataFrame(rows).assign(standin=False)


def planted(rng: np.random.Generator, lucky_gain: list[float], splits_per_set: int = 20) -> pd.DataFrame:
    """`lucky` and `base` on one dataset per entry of `lucky_gain`: there lucky's RMSE is base's times (1 - gain),
    with split noise of 2% of the RMSE (the same split shifts both: the splits are paired)."""
    sets = {}
    for index, gain in enumerate(lucky_gain):
        scale = 1.0 + index
        shared = scale * (1 + 0.05 * rng.normal(size=splits_per_set))
        base = shared * (1 + 0.02 * rng.normal(size=splits_per_set))
        lucky = shared * (1 - gain) * (1 + 0.02 * rng.normal(size=splits_per_set))
        sets[f"set{index}"] = {"base": list(base), "lucky": list(lucky)}
    return splits(sets)


def test_the_shortfall_is_paired_by_split_relative_for_rmse_and_as_long_on_every_dataset() -> None:
    a, b = {"best": [1.0, 2.0, 4.0], "m": [1.1, 2.0, np.nan]}, {"best": [2.0, 2.0], "m": [1.0, 3.0]}
    metrics = splits({"a": a, "b": b})
    shortfall = shortfall_matrix(metrics, "rmse_original", "best", "m")
    # dataset a keeps the splits both have (0 and 1), b its first two: (m - best) / best per split
    np.testing.assert_allclose(shortfall, [[0.1, 0.0], [-0.5, 0.5]])


def test_a_dataset_without_spread_gets_a_mirrored_one_that_keeps_its_mean_at_an_odd_count() -> None:
    """Five seeds where a method matches the best on every one (toy2d_benchmark's accuracy 1.0): baycomp 1.0.3 fails
    on such a row at an odd count; spread first, it keeps its mean, gains a spread within the ROPE, and the other
    rows are untouched (the control)."""
    shortfall = np.array([[0.0] * 5, [0.02] * 5, [0.01, -0.02, 0.03, 0.0, 0.04]])
    spread = spread_constant_rows(shortfall, 0.005, seed=0)
    np.testing.assert_allclose(spread.mean(axis=1), shortfall.mean(axis=1), atol=1e-15)
    assert (spread[:2].var(axis=1) > 0).all() and (np.abs(spread[:2] - shortfall[:2]) <= 0.005).all()
    assert spread[0, 2] == 0.0 and spread[1, 2] == 0.02  # the middle of an odd count is the constant
    np.testing.assert_array_equal(spread[2], shortfall[2])
    np.testing.assert_array_equal(spread_constant_rows(shortfall, 0.005, seed=0), spread)  # seeded


@pytest.mark.slow  # compiles baycomp's Stan model once per machine (about 90 s), then seconds per comparison
def test_one_dataset_does_not_make_a_method_better_on_a_new_one_as_its_splits_would() -> None:
    rng = np.random.default_rng(0)
    one_set = planted(rng, [0.3, 0.0, 0.0, 0.0, 0.0])
    shortfall = shortfall_matrix(one_set, "rmse_original", "base", "lucky")
    assert shortfall.shape == (5, 20)
    # the split-level view: 100 splits as independent pairs, lucky better at any level
    assert stats.ttest_1samp(shortfall.ravel(), 0.0, alternative="less").pvalue < 1e-3
    worse, equivalent, better = hierarchical_probabilities(shortfall, "rmse_original")
    assert better < 0.95 and worse + equivalent + better == pytest.approx(1.0)
    # the positive control: 10% better on every dataset
    everywhere = shortfall_matrix(planted(rng, [0.1] * 5), "rmse_original", "base", "lucky")
    assert hierarchical_probabilities(everywhere, "rmse_original")[2] >= 0.95
    # seeded: the same inputs give the same posterior
    assert hierarchical_probabilities(shortfall, "rmse_original") == (worse, equivalent, better)
    # five independent seeds, on one dataset a tie on every seed (baycomp alone fails on it: an odd count)
    tied = np.vstack([np.zeros(5), rng.normal(0.0, 0.01, (3, 5))])
    assert sum(hierarchical_probabilities(tied, "accuracy", holdout=0.0)) == pytest.approx(1.0)


def test_kept_posteriors_are_used_while_current_and_a_changed_run_asks_for_a_new_sample(tmp_path: Path) -> None:
    metrics = planted(np.random.default_rng(1), [0.05, 0.05, 0.0])
    rankings = study_rankings(metrics, "regression")
    ranking = next(r for r in rankings if r.metric == "rmse_original")
    best, other = str(ranking.average_ranks.index[0]), str(ranking.average_ranks.index[1])
    digest = input_digest(shortfall_matrix(metrics, "rmse_original", best, other), "rmse_original")
    kept = {"worse": 0.1, "equivalent": 0.2, "better": 0.7, "datasets": 3, "digest": digest}
    (tmp_path / POSTERIORS_FILE).write_text(json.dumps({"rmse_original": {other: kept}}))
    compared = kept_comparisons(tmp_path, [ranking], metrics)
    (comparison,) = compared["rmse_original"][1]
    assert compared["rmse_original"][0] == best and (comparison.method, comparison.better) == (other, 0.7)
    changed = metrics.copy()
    changed.loc[changed.index[0], "value"] *= 1.01  # one split of one run
    with pytest.raises(StalePosteriors, match=r"rmse_original .*python -m bnnrepro.report.benchmark_document"):
        kept_comparisons(tmp_path, [ranking], changed)
    with pytest.raises(StalePosteriors):  # the same runs, splits that hold out another share (the gap splits' third)
        kept_comparisons(tmp_path, [ranking], metrics, holdout=0.333)
    (tmp_path / POSTERIORS_FILE).unlink()
    with pytest.raises(StalePosteriors, match="no current hierarchical posterior"):
        kept_comparisons(tmp_path, [ranking], metrics)

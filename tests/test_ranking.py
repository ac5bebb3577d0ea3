"""The ranking of a study's methods over its datasets, or one dataset's replicates (bnnrepro.report.ranking): ranks
per block as Demšar (2006) defines them, paired blocks only, the Friedman test that holds on a dominant method and not
on methods that differ by chance alone (its negative control), Nemenyi p-values and the critical difference for the
critical-difference diagram, and the dataset as the unit (pseudo-replication's negative control)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from bnnrepro.report.ranking import (
    draw_critical_differences,
    leave_one_out,
    metric_blocks,
    on_every_dataset,
    paired_replicates,
    rank_metric,
    ranking_table,
    study_rankings,
)


def tidy(values: dict[str, list[float]], metric: str = "test_rmse_original", datasets=("a",)) -> pd.DataFrame:
    """A tidy metrics frame: each method's values over splits 0.. of each dataset (a block per dataset and split)."""
    rows = [
        {"method": method, "hparams": f"split={split}", "seed": 0, "dataset": dataset, "metric": metric, "value": v}
        for dataset in datasets
        for method, series in values.items()
        for split, v in enumerate(series)
    ]
    frame = pd.DataFrame(rows)
    frame["standin"] = False
    return frame


def test_ranks_per_block_with_ties_sharing_their_mean_rank_in_the_stated_direction() -> None:
    metrics = tidy({"x": [1.0, 2.0, 5.0], "y": [2.0, 2.0, 4.0], "z": [3.0, 1.0, 6.0]})
    lower = rank_metric(metrics, "rmse_original", "lower").average_ranks
    # block 0: x1 y2 z3; block 1: z1, x and y tie at 2.5; block 2: y1 x2 z3
    assert lower.to_dict() == pytest.approx({"x": (1 + 2.5 + 2) / 3, "y": (2 + 2.5 + 1) / 3, "z": (3 + 1 + 3) / 3})
    higher = rank_metric(metrics, "rmse_original", "higher").average_ranks
    assert higher.to_dict() == pytest.approx({name: 4 - rank for name, rank in lower.items()})


def test_a_block_where_one_method_has_no_result_is_left_out() -> None:
    metrics = tidy({"x": [1.0, 2.0], "y": [2.0, np.nan]})
    blocks = metric_blocks(metrics, "rmse_original")
    assert list(blocks.index) == ["a split=0+seed=0"] and list(blocks.columns) == ["x", "y"]


def test_settings_are_entrants_and_splits_are_replicates() -> None:
    metrics = tidy({"x": [1.0, 2.0]})
    other = metrics.assign(hparams=[f"lr=0.1+split={s}" for s in range(2)], value=[3.0, 4.0])
    blocks = metric_blocks(pd.concat([metrics, other]), "rmse_original")
    assert list(blocks.columns) == ["x", "x [lr=0.1]"] and len(blocks) == 2


def test_the_friedman_test_finds_a_dominant_method_and_not_chance() -> None:
    """Twenty blocks: a method better by one noise s.d. in every block is found (p < 0.05, average rank near 1);
    three exchangeable methods (the same distribution in every block) are not, in at least 90% of draws."""
    rng = np.random.default_rng(0)
    dominant = tidy(
        {"best": list(rng.normal(0, 1, 20) - 1.5), "b": list(rng.normal(0, 1, 20)), "c": list(rng.normal(0, 1, 20))}
    )
    ranking = rank_metric(dominant, "rmse_original", "lower")
    assert ranking.friedman_p < 0.05 and ranking.average_ranks.index[0] == "best"
    assert ranking.nemenyi_p.loc["best", "b"] < 0.05 and np.allclose(ranking.nemenyi_p, ranking.nemenyi_p.T)
    false_alarms = sum(
        rank_metric(tidy({m: list(rng.normal(0, 1, 20)) for m in "abc"}), "rmse_original", "lower").friedman_p < 0.05
        for _ in range(200)
    )
    assert false_alarms <= 20


def test_no_method_is_told_apart_where_the_friedman_test_does_not_reject() -> None:
    """Eleven methods over five datasets, as the UCI benchmark: `best` ranks 2.4 on average and `worst` 9.6, the nine
    others shuffled. The Nemenyi p-value of that pair alone is below 0.05, but the Friedman test does not reject, so
    the post-hoc p-values read are all 1 (Demšar 2006); where it rejects (the control) they are Nemenyi's."""
    rng, rows = np.random.default_rng(9), []
    for block, (best, worst) in enumerate(zip([1, 1, 3, 3, 4], [11, 11, 9, 9, 8], strict=True)):
        others = rng.permutation([rank for rank in range(1, 12) if rank not in (best, worst)])
        ranks = {"best": best, "worst": worst, **{f"m{i}": rank for i, rank in enumerate(others)}}
        rows += [{"method": m, "hparams": "split=0", "seed": 0, "dataset": f"d{block}", "metric": "test_rmse_original",
                  "value": float(rank), "standin": False} for m, rank in ranks.items()]  # fmt: skip
    ranking = rank_metric(pd.DataFrame(rows), "rmse_original", "lower")
    assert ranking.friedman_p >= 0.05 and ranking.nemenyi_p.loc["best", "worst"] < 0.05
    assert (ranking.posthoc_p() == 1.0).all().all()
    figure = Figure()
    draw_critical_differences([ranking], figure.subplots(1, 1, squeeze=False)[:, 0])
    assert "(not rejected: no pair told apart)" in figure.axes[0].get_title()
    dominant = tidy({"best": [0.0] * 20, "b": list(rng.normal(3, 1, 20)), "c": list(rng.normal(3, 1, 20))})
    rejected = rank_metric(dominant, "rmse_original", "lower")
    assert rejected.friedman_p < 0.05 and rejected.posthoc_p().equals(rejected.nemenyi_p)


def test_two_methods_or_one_block_get_ranks_but_no_test() -> None:
    ranking = rank_metric(tidy({"x": [1.0, 2.0], "y": [2.0, 3.0]}), "rmse_original", "lower")
    assert ranking.friedman_p is None and ranking.nemenyi_p is None and ranking.average_ranks["x"] == 1.0


def test_the_task_chooses_its_ranked_metrics_and_the_table_and_diagram_follow() -> None:
    regression = pd.concat([tidy({m: [1.0 + i, 2.0 + i, 3.0 + i] for i, m in enumerate("xyz")}, metric=metric)
                            for metric in ("test_rmse_original", "test_nll_original", "test_rmse")])  # fmt: skip
    rankings = study_rankings(regression, "regression")
    assert [r.metric for r in rankings] == ["rmse_original", "nll_original"]
    table = ranking_table(rankings, standin=False)
    assert set(table["column"]) == {"rmse_original rank", "nll_original rank"}
    assert table.set_index(["column", "row"]).loc[("nll_original rank", "x"), "ours"] == 1.0
    figure = Figure()
    draw_critical_differences(rankings, figure.subplots(2, 1))
    assert "Friedman p" in figure.axes[0].get_title()
    classification = tidy({"x": [0.9, 0.8, 0.7], "y": [0.5, 0.6, 0.4], "z": [0.1, 0.2, 0.3]}, metric="test_accuracy")
    assert study_rankings(classification, "classification")[0].average_ranks.index[0] == "x"  # higher accuracy first
    assert study_rankings(classification, "regression") == []  # the task, not the metrics recorded, chooses


def planted(rng: np.random.Generator, datasets: int = 3, splits: int = 20) -> pd.DataFrame:
    """Three methods over `datasets` sets of `splits` splits each: `lucky` is far better on the first set only (rank 1
    on every split of it); elsewhere the three are exchangeable (the same distribution on every split)."""
    frames = []
    for index in range(datasets):
        shift = -3.0 if index == 0 else 0.0
        values = {"lucky": list(rng.normal(0, 1, splits) + shift), "b": list(rng.normal(0, 1, splits)),
                  "c": list(rng.normal(0, 1, splits))}  # fmt: skip
        frames.append(tidy(values, datasets=(f"set{index}",)))
    return pd.concat(frames, ignore_index=True)


def test_splits_of_one_dataset_do_not_make_a_method_best_overall_as_they_would_as_blocks() -> None:
    """Pseudo-replication's negative control: a method better on one dataset only. Counting the 20 splits of each of
    three sets as 60 blocks (the split-level analysis) calls it significantly better than both others; with the
    dataset as the unit (three blocks, each a dataset's mean over its splits) the Nemenyi test tells it from neither,
    and the critical difference says why (1.91 ranks with three blocks against 0.43 with sixty)."""
    metrics = planted(np.random.default_rng(1))
    by_split = rank_metric(metrics, "rmse_original", "lower", unit="replicate")
    assert len(by_split.blocks) == 60 and by_split.average_ranks.index[0] == "lucky"
    assert (by_split.nemenyi_p.loc["lucky", ["b", "c"]] < 0.05).all()  # what pseudo-replication would claim
    by_dataset = rank_metric(metrics, "rmse_original", "lower")  # the default with several datasets
    assert by_dataset.unit == "dataset" and list(by_dataset.blocks.index) == ["set0", "set1", "set2"]
    assert (by_dataset.nemenyi_p.loc["lucky", ["b", "c"]] >= 0.05).all()
    assert by_dataset.critical_difference() == pytest.approx(2.3437 * np.sqrt(3 * 4 / (6 * 3)), rel=1e-4)
    assert by_split.critical_difference() == pytest.approx(2.3437 * np.sqrt(3 * 4 / (6 * 60)), rel=1e-4)
    # the positive control: better on every dataset, with enough datasets, is found at the dataset level too
    everywhere = pd.concat(
        [tidy({"best": [0.0], "b": [1.0 + i % 2], "c": [2.0 - i % 2]}, datasets=(f"set{i}",)) for i in range(12)]
    )
    assert (rank_metric(everywhere, "rmse_original", "lower").nemenyi_p.loc["best", ["b", "c"]] < 0.05).all()


def test_the_critical_difference_is_demsars() -> None:
    """Demšar (2006) Table 5 (q_0.05 = 2.569 for four methods) and eq. 5, with ten datasets: 1.48 ranks."""
    rng = np.random.default_rng(2)
    metrics = pd.concat([tidy({m: list(rng.normal(0, 1, 2)) for m in "wxyz"}, datasets=(f"d{i}",)) for i in range(10)])
    ranking = rank_metric(metrics, "rmse_original", "lower")
    assert len(ranking.blocks) == 10 and ranking.critical_difference() == pytest.approx(1.483, abs=1e-3)


def test_leaving_one_method_out_can_change_the_best_and_says_so() -> None:
    """A pool where b has the best average rank, but a beats b on three of five datasets: without c, a is best
    (the control: without a, b stays best)."""
    orders = [("a", "b", "c"), ("a", "b", "c"), ("b", "c", "a"), ("b", "c", "a"), ("c", "a", "b")]
    frames = [tidy({m: [float(o.index(m))] for m in "abc"}, datasets=(f"set{i}",)) for i, o in enumerate(orders)]
    ranking = rank_metric(pd.concat(frames, ignore_index=True), "rmse_original", "lower")
    assert ranking.average_ranks.to_dict() == pytest.approx({"b": 1.8, "a": 2.0, "c": 2.2})
    moves = leave_one_out(ranking, "lower").set_index("left_out")
    assert moves.loc["c", "best"] == "a" and moves.loc["a", "best"] == "b"
    assert moves.loc["c", "tau"] == pytest.approx(-1.0)  # a and b swap


def test_a_diverged_run_leaves_its_split_out_of_every_metric_s_ranking_not_one() -> None:
    """`b` diverges on split 1 of set0: its RMSE is infinite, its NLL finite but huge (64). Both rankings leave that
    split out for every method, where the NLL ranking alone would count it; the control: every other split stays."""
    rmse = {"a": [1.0, 1.0, 1.0], "b": [1.1, np.inf, 1.2]}
    nll = {"a": [2.0, 2.0, 2.0], "b": [2.1, 64.0, 1.9]}
    metrics = pd.concat(
        [tidy(rmse, datasets=("set0",)), tidy(nll, "test_nll_original", ("set0",)),
         tidy({"a": [1.0] * 3, "b": [1.1] * 3}, datasets=("set1",)),
         tidy({"a": [2.0] * 3, "b": [2.1] * 3}, "test_nll_original", ("set1",))], ignore_index=True,
    )  # fmt: skip
    paired = paired_replicates(metrics, "regression")
    kept = {m: list(metric_blocks(paired, m).index) for m in ("rmse_original", "nll_original")}
    assert kept["rmse_original"] == kept["nll_original"] and len(kept["nll_original"]) == 5
    assert "set0 split=1+seed=0" not in kept["nll_original"]
    assert len(metric_blocks(metrics, "nll_original")) == 6  # what the NLL ranking counted before
    rankings = {r.metric: r for r in study_rankings(metrics, "regression")}
    assert rankings["nll_original"].blocks.loc["set0", "b"] == pytest.approx(2.0)  # 2.1 and 1.9, not 64


def test_a_method_not_run_on_a_dataset_leaves_it_out_of_the_ranking_but_not_of_the_others_tests() -> None:
    """`c` has no run on set2 (too costly there): the rankings over datasets rank all three on set0 and set1 only,
    the other two keep set2's splits for the tests within it, and `on_every_dataset` ranks a and b over all three
    sets; the control: a diverged split of a method that ran on set2 still leaves that split out for everyone."""
    values = {"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0], "c": [3.0, 3.0, 3.0]}
    frames = [
        tidy(values, datasets=("set0", "set1")),
        tidy({"a": [2.0, 2.0, 2.0], "b": [1.0, 1.0, 1.0]}, datasets=("set2",)),
    ]
    metrics = pd.concat(frames, ignore_index=True)
    paired = paired_replicates(metrics, "regression")
    assert (paired["dataset"] == "set2").sum() == 6
    (ranking,) = study_rankings(metrics, "regression")
    assert list(ranking.blocks.index) == ["set0", "set1"] and ranking.average_ranks["a"] == pytest.approx(1.0)
    (every,) = study_rankings(on_every_dataset(paired), "regression")
    assert list(every.blocks.index) == ["set0", "set1", "set2"] and set(every.blocks.columns) == {"a", "b"}
    assert every.average_ranks.to_dict() == pytest.approx({"a": 4 / 3, "b": 5 / 3})
    diverged = metrics.copy()
    diverged.loc[
        (diverged["dataset"] == "set2") & (diverged["method"] == "b") & (diverged["hparams"] == "split=1"), "value"
    ] = np.inf
    assert (paired_replicates(diverged, "regression")["dataset"] == "set2").sum() == 4

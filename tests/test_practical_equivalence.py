"""Which methods are practically equivalent to the best (bnnrepro.report.practical_equivalence): the Bayesian
signed-rank test on per-dataset means, decided at 0.95 within a ROPE; a method worse on every dataset is worse, an
identical one is equivalent (the control), and one worse on a single dataset of ten is not called worse: one
dataset does not decide."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnnrepro.report.practical_equivalence import Comparison, compare_to_best, equivalence_table, excess, verdict
from bnnrepro.report.ranking import rank_metric, ranking_table, study_rankings
from bnnrepro.report.recommendation import recommendation


def means(values: dict[str, list[float]]) -> pd.DataFrame:
    """A tidy metrics frame with one split per dataset: each method's test RMSE on datasets d0, d1, ..."""
    rows = [
        {"method": m, "hparams": "split=0", "seed": 0, "dataset": f"d{i}", "metric": "test_rmse_original", "value": v}
        for m, series in values.items()
        for i, v in enumerate(series)
    ]
    return pd.DataFrame(rows).assign(standin=False)


BASE = list(np.linspace(0.5, 5.0, 10))  # RMSEs of different scales: the ROPE is relative (1% of the best's)


def test_worse_everywhere_is_worse_identical_is_equivalent_and_one_dataset_does_not_decide() -> None:
    unlucky = [BASE[0] * 1.5, *BASE[1:]]  # worse on d0 only
    metrics = means({"best": BASE, "twin": BASE, "worse": [v * 1.05 for v in BASE], "unlucky": unlucky})
    best, comparisons = compare_to_best(rank_metric(metrics, "rmse_original", "lower"))
    found = {c.method: c for c in comparisons}
    assert verdict(found["worse"]) == "worse" and found["worse"].worse > 0.99
    assert verdict(found["twin"]) == "equivalent or better" and found["twin"].equivalent > 0.95
    assert verdict(found["unlucky"]) != "worse"  # worse on d0 alone: not decided by one dataset of ten
    assert found["worse"].datasets == 10


def test_the_shortfall_is_relative_for_rmse_and_signed_by_direction() -> None:
    blocks = pd.DataFrame({"a": [1.0, 10.0], "b": [1.1, 11.0]})
    assert np.allclose(excess(blocks, "a", "rmse_original", higher_is_better=False)["b"], [0.1, 0.1])
    accuracy = pd.DataFrame({"a": [0.9, 0.8], "b": [0.85, 0.8]})
    assert np.allclose(excess(accuracy, "a", "accuracy", higher_is_better=True)["b"], [0.05, 0.0])


def test_the_reports_table_has_the_best_as_reference_and_is_empty_for_one_dataset() -> None:
    metrics = means({"best": BASE, "worse": [v * 1.05 for v in BASE]})
    table = equivalence_table(study_rankings(metrics, "regression"), standin=False)
    cells = table.set_index(["row", "column"])["ours"]
    assert cells[("best", "rmse_original P(equivalent or better)")] == 1.0
    assert cells[("worse", "rmse_original P(worse)")] > 0.99 and (table["n_runs"] == 10).all()
    one = means({"best": BASE[:1], "worse": BASE[:1]})
    assert equivalence_table(
        study_rankings(one, "regression"), standin=False
    ).empty  # one dataset decides nothing about data sets


def test_the_recommendation_names_the_equivalent_the_undecided_and_the_cheapest() -> None:
    """The twin is equivalent, a method 5% worse on half the datasets undecided, the one worse everywhere left out;
    the cheapest of the best and the equivalent is named (the controls: the undecided and the worse methods are
    cheaper, and neither is recommended)."""
    from bnnrepro.report.benchmark_document import recommendation_section

    half = [v * (1.05 if i % 2 else 1.0) for i, v in enumerate(BASE)]
    metrics = means({"best": BASE, "twin": BASE, "worse": [v * 1.05 for v in BASE], "half": half})
    costs = pd.DataFrame({"settings": 1, "seconds": [3.0, 2.0, 0.1, 1.0]}, index=["best", "twin", "worse", "half"])
    line, _, cannot, _, left_out = recommendation_section(
        [rank_metric(metrics, "rmse_original", "lower")], costs, ["gp"]
    )
    assert "best best (3 s/run)" in line and "probability at least 0.95: twin (P = 1.00, 2 s/run)" in line
    assert "Not shown worse (P(equivalent or better)): half (P = " in line
    assert "Cheapest of the best and those shown equivalent: twin." in line and "worse (P = " not in line
    assert "with 10 datasets" in cannot and left_out.endswith("not compared: gp.")


def test_fewer_than_five_datasets_decide_nothing_though_the_probabilities_are_shown() -> None:
    """Two datasets on which a method is 50% worse: the signed-rank test's P(worse) passes 0.95 (its prior's one
    pseudo-observation is all that stands against them), but no verdict is drawn from two datasets; the control:
    the same shortfall on five datasets is called worse."""
    two = means({"best": BASE[:2], "worse": [v * 1.5 for v in BASE[:2]]})
    ranking = rank_metric(two, "rmse_original", "lower")
    (comparison,) = compare_to_best(ranking)[1]
    assert comparison.worse > 0.95 and verdict(comparison) == "undecided"
    costs = pd.DataFrame({"settings": 1, "seconds": [1.0, 2.0]}, index=["best", "worse"])
    line, _, cannot = recommendation(ranking_table([ranking], False, costs), equivalence_table([ranking], False))
    assert "Not shown worse (P(equivalent or better)): worse (P = 0.04, 2 s/run)" in line
    assert "with 2 datasets, fewer than the 5 a verdict needs" in cannot
    five = means({"best": BASE[:5], "worse": [v * 1.5 for v in BASE[:5]]})
    assert verdict(compare_to_best(rank_metric(five, "rmse_original", "lower"))[1][0]) == "worse"


def test_each_comparison_is_decided_on_the_datasets_its_pair_shares() -> None:
    """Two methods with the same probabilities against the best, one compared on ten datasets and one on three
    (it ran on three only): the first is called worse, the second left undecided, and each row's n is its own."""
    ranking = rank_metric(means({"best": BASE, "wide": BASE, "narrow": BASE}), "rmse_original", "lower")
    compared = {"rmse_original": ("best", [Comparison("wide", 0.99, 0.01, 0.0, 10),
                                           Comparison("narrow", 0.99, 0.01, 0.0, 3)])}  # fmt: skip
    table = equivalence_table([ranking], False, compared)
    assert table.groupby("row")["n_runs"].first().to_dict() == {"best": 10, "narrow": 3, "wide": 10}
    costs = pd.DataFrame({"settings": 1, "seconds": [1.0, 1.0, 1.0]}, index=["best", "wide", "narrow"])
    line = recommendation(ranking_table([ranking], False, costs), table)[0]
    assert "Not shown worse (P(equivalent or better)): narrow (P = 0.01" in line and "wide (P" not in line

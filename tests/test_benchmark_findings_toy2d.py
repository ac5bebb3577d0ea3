"""The numbers of the 2-D classification benchmark's findings (docs/benchmark/paper/toy2d_benchmark/findings.yaml)
computed again: the prior-precision experiment's from its CSV beside the runs (prior_sensitivity.csv, made by
scripts/toy2d_prior_sensitivity.py), and the order on the hardest spirals that the depth finding states from the kept
runs (its numbers are `[[value NAME]]` fields, computed from them). The controls: the same check on a changed CSV, or
on runs where a two-layer network catches up, fails."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, scaled, span

KEPT = KeptFolder(ROOT / "docs/benchmark/paper/toy2d_benchmark")
SENSITIVITY = "prior_sensitivity.csv"
TAYLOR, SAMPLED = ["vbp", "dvi"], ["varout"]
"""The variational classifiers whose expected log-softmax is its Taylor expansion (§3.1.7), and the one that samples."""
DEPTH_LEARNED = ["udn", "dun", "odenet"]
TWO_LAYERS = ["bedl", "edl", "finite", "mc_dropout"]
"""The networks of two hidden layers that learn the spirals at the benchmark's settings (the variational ones do
not at omega 20; the prior finding says why)."""


def accuracies(table: pd.DataFrame, alpha: int, dataset: str, methods: list[str]) -> str:
    """The methods' mean test accuracies (each over its seeds) at `alpha` on `dataset` ('spirals 12': the spirals at
    omega 12), as the prose writes them: one number, or their range."""
    name, _, omega = dataset.partition(" ")
    rows = table[(table["alpha"] == alpha) & (table["dataset"] == name) & table["method"].isin(methods)]
    if omega:
        rows = rows[rows["omega"] == float(omega)]
    assert len(rows) > 0, f"no row at alpha {alpha} on {dataset}"
    return span(rows.groupby("method")["test_accuracy"].mean(), ".2f")


def prior_fragments(table: pd.DataFrame) -> list[str]:
    """The prior finding's phrases that carry a number of the experiment, as its rows make them."""
    everyone = TAYLOR + SAMPLED
    at_prior = table[(table["alpha"] == 100) & (table["omega"] == 12)]["kl"]
    seeds = sorted(table["seed"].unique())
    return [
        f"seeds {' and '.join(map(str, seeds))}",
        f"clusters {accuracies(table, 100, 'repulsive_2d', everyone)}",
        f"omega 4 {accuracies(table, 100, 'spirals 4', everyone)}",
        f"KL {span(at_prior, '.1f')} nats",
        f"omega 12 ({accuracies(table, 1, 'spirals 12', everyone)}, against "
        f"{accuracies(table, 10, 'spirals 12', everyone)} at alpha 10)",
        f"omega 20 ({accuracies(table, 1, 'spirals 20', everyone)})",
        f"VBP and DVI lose the clusters ({accuracies(table, 1, 'repulsive_2d', TAYLOR)})",
        f"VarOut keeps them ({accuracies(table, 1, 'repulsive_2d', SAMPLED)})",
    ]


def flagged_fragment(metrics: pd.DataFrame) -> str:
    """How many of the variational classifiers' runs at omega 12 and above the run health check flags as at chance."""
    rows = metrics[(metrics["metric"] == "test_accuracy") & metrics["method"].isin(TAYLOR + SAMPLED)]
    rows = rows[rows["omega"] >= 12]
    flagged = rows["health"].str.startswith("warning: at chance").sum()
    return f"flags {flagged} of these {len(rows)} runs as at chance"


def hardest_spirals_lead(metrics: pd.DataFrame) -> bool:
    """Whether every learned- or continuous-depth network's mean test accuracy at omega 20 is above every two-layer
    network's (the depth finding's 'lead')."""
    rows = metrics[(metrics["metric"] == "test_accuracy") & (metrics["omega"] == 20)]
    means = rows.groupby("method")["value"].mean()
    return means[DEPTH_LEARNED].min() > means[TWO_LAYERS].max()


def udn_deepens(metrics: pd.DataFrame) -> bool:
    """Whether the UDN's mean posterior depth (hidden layers) grows with omega (the depth finding's 'deeper')."""
    rows = metrics[(metrics["method"] == "udn") & (metrics["metric"] == "hidden_layers")]
    depths = rows.groupby("omega")["value"].mean().sort_index()
    return len(depths) >= 3 and depths.is_monotonic_increasing and depths.is_unique


def test_the_toy2d_findings_say_what_the_prior_experiment_and_the_runs_make() -> None:
    table = pd.read_csv(KEPT.path / SENSITIVITY)
    assert set(table["alpha"]) == {1, 10, 100} and set(table["method"]) == set(TAYLOR + SAMPLED)
    assert KEPT.missing_fragments(prior_fragments(table)) == []
    assert KEPT.missing_fragments([flagged_fragment(KEPT.metrics())]) == []
    assert hardest_spirals_lead(KEPT.metrics()) and udn_deepens(KEPT.metrics())
    assert KEPT.missing_fragments(["On the hardest spirals (omega 20) the networks whose depth is learned or"]) == []


def test_control_a_changed_prior_experiment_fails_the_check() -> None:
    """VarOut made to lose the clusters at alpha 1 as VBP and DVI do: the findings no longer say what the CSV makes."""
    changed = pd.read_csv(KEPT.path / SENSITIVITY)
    rows = (changed["method"] == "varout") & (changed["alpha"] == 1) & (changed["dataset"] == "repulsive_2d")
    changed.loc[rows, "test_accuracy"] = 0.6
    assert KEPT.missing_fragments(prior_fragments(changed))


@pytest.mark.parametrize("method", TWO_LAYERS)
def test_control_a_two_layer_network_that_catches_up_on_the_hardest_spirals_fails_the_check(method: str) -> None:
    metrics = scaled(KEPT.metrics(), 1.5, method=method, omega="20.0", metric="test_accuracy")
    assert not hardest_spirals_lead(metrics)


def test_control_a_udn_as_deep_on_the_easiest_spirals_fails_the_check() -> None:
    metrics = scaled(KEPT.metrics(), 1.5, method="udn", omega="4.0", metric="hidden_layers")
    assert not udn_deepens(metrics)


def test_control_runs_the_health_check_passes_fail_the_check() -> None:
    metrics = KEPT.metrics().assign(health="ok")
    assert KEPT.missing_fragments([flagged_fragment(metrics)])

"""The numbers the UCI benchmark's findings (docs/benchmark/paper/uci_benchmark/findings.yaml) take from the kept
runs, computed again from those runs: a new batch cannot leave the prose behind (the control: the same check on runs
whose values changed fails). Published numbers and the budget experiment's (its CSVs beside) are not the runs'."""

from __future__ import annotations

import pandas as pd
import pytest

from bnnrepro.artifacts.render import standard_error
from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.benchmark import block_keys, ranked, validation_choice
from bnnrepro.report.ranking import paired_replicates, study_rankings
from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, ordinal_word, scaled

KEPT = KeptFolder(ROOT / "docs/benchmark/paper/uci_benchmark")
STUDY = load_study("uci_benchmark")


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The findings' phrases that carry a number of the runs, as the runs make them."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))

    def values(method: str, dataset: str, metric: str) -> pd.Series:
        chosen = selected[(selected["method"] == method) & (selected["dataset"] == f"uci_{dataset}")]
        return chosen[chosen["metric"] == f"test_{metric}_original"]["value"]

    def with_error(method: str, dataset: str, metric: str) -> str:
        found = values(method, dataset, metric)
        return f"{found.mean():.2f} +- {standard_error(found):.2f}"

    laplace = choices[choices["row"] == "laplace"].set_index("column")["ours"]
    ranks = {r.metric: list(r.average_ranks.index) for r in study_rankings(selected, "regression")}  # all 13

    def place(method: str, metric: str) -> str:
        order = ranks[metric]
        return "last" if order[-1] == method else ordinal_word(order.index(method) + 1)

    health = metrics.drop_duplicates("run").set_index("run")["health"]
    diverged = health[health.str.contains("diverged")]
    sdebnn = [run for run in diverged.index if run.startswith("sdebnn/")]
    where = ", ".join(
        f"{run.split('/')[1].removeprefix('uci_')} split {run.split('/')[2].split('=')[1]}" for run in sdebnn
    )
    losses = " and ".join(f"{float(h.split('from ')[1].split(' ')[0]):g}" for h in diverged[sdebnn])
    nll = metrics[metrics["run"].isin(sdebnn) & (metrics["metric"] == "test_nll_original")].set_index("run")["value"]
    paired = paired_replicates(ranked(selected, STUDY.benchmark), "regression")
    kept = paired[paired["metric"] == "test_nll_original"].groupby("dataset")["seed"].nunique()
    runs = metrics["run"].nunique()
    return [
        f"yacht's RMSE ({with_error('deep_ensemble', 'yacht', 'rmse')} against 1.58)",
        f"energy's NLL ({with_error('deep_ensemble', 'energy', 'nll')} against 1.38)",
        f"better on energy (NLL {values('mc_dropout', 'energy', 'nll').mean():.2f} against 1.99)",
        f"(yacht NLL {values('mc_dropout', 'yacht', 'nll').mean():.2f} against 1.55)",
        f"largest value ({laplace['uci_wine'].split('=')[1].split(' ')[0]}) on every wine split"
        if laplace["uci_wine"].endswith("(20/20)")
        else "laplace: wine's choice varies",
        f"smallest ({laplace['uci_energy'].split('=')[1].split(' ')[0]}) on every energy and yacht split"
        if laplace["uci_energy"] == laplace["uci_yacht"] and laplace["uci_energy"].endswith("(20/20)")
        else "laplace: energy's and yacht's choices differ",
        f"{len(sdebnn)} of its {health.index.str.startswith('sdebnn/').sum()} runs diverged ({where}: the training "
        f"loss went from {losses}",
        f"their test NLL finite: {' and '.join(f'{nll[run]:.0f}' for run in sdebnn)}).",
        f"finite values of both ({kept['uci_boston']} of 20 on boston and wine"
        if kept["uci_boston"] == kept["uci_wine"]
        else "differ",
        f"the SDE-BNN would rank {place('sdebnn', 'rmse_original')} on RMSE and {place('sdebnn', 'nll_original')} on "
        f"NLL, the ODE net {place('odenet', 'rmse_original')} and {place('odenet', 'nll_original')}",
        f"All {runs:,} runs",
        f"every one of their {len(metrics) - runs:,} values but the timings",
    ]


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize(
    ("method", "dataset", "factor"), [("deep_ensemble", "uci_yacht", 1.1), ("mc_dropout", "uci_energy", 0.9)]
)
def test_control_runs_with_other_values_fail_the_check(method: str, dataset: str, factor: float) -> None:
    metrics = scaled(KEPT.metrics(), factor, method=method, dataset=dataset, metric="test_.*")
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

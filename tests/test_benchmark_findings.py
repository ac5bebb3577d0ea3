"""The numbers the UCI benchmark's findings (docs/benchmark/paper/uci_benchmark/findings.yaml) take from the kept
runs, computed again from those runs: a new batch cannot leave the prose behind (the control: the same check on runs
whose values changed fails). Published numbers and the budget experiment's (its CSVs beside) are not the runs'."""

from __future__ import annotations

import pandas as pd
import pytest

from bnnrepro.artifacts.render import standard_error
from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.benchmark import block_keys, ranked, validation_choice
from bnnrepro.report.ranking import paired_replicates
from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, scaled

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

    def chosen(method: str, dataset: str, setting: str) -> str:
        """How many of the dataset's splits validation chose `setting` of `method` on ('0' where none)."""
        row = choices[(choices["row"] == method) & (choices["column"] == f"uci_{dataset}")]["ours"]
        counts = dict(part.rsplit(" (", 1) for part in row.iloc[0].split(", ")) if len(row) else {}
        return counts.get(setting, "0/").split("/")[0]

    paired = paired_replicates(ranked(selected, STUDY.benchmark), "regression")
    kept = paired[paired["metric"] == "test_nll_original"].groupby("dataset")["seed"].nunique()
    runs = metrics["run"].nunique()
    return [
        f"yacht's RMSE ({with_error('deep_ensemble', 'yacht', 'rmse')} against 1.58)",
        f"energy's ({values('deep_ensemble', 'energy', 'rmse').mean():.2f} against 2.09",
        f"energy's NLL ({with_error('deep_ensemble', 'energy', 'nll')} against 1.38)",
        f"better on energy (NLL {values('mc_dropout', 'energy', 'nll').mean():.2f} against 1.99)",
        f"(yacht NLL {values('mc_dropout', 'yacht', 'nll').mean():.2f} against 1.55)",
        f"std 0.8 on {'every' if chosen('laplace', 'wine', 'scale=0.8') == '20' else 'not every'} wine split (1.6 "
        f"{'never' if chosen('laplace', 'wine', 'scale=1.6') == '0' else 'sometimes'})",
        f"MC dropout's 0.2 on {chosen('mc_dropout', 'wine', 'dropout=0.2')} of 20",
        f"MC dropout's 0.001 on {chosen('mc_dropout', 'energy', 'dropout=0.001')} of 20 energy splits and "
        f"{chosen('mc_dropout', 'yacht', 'dropout=0.001')} of 20 yacht splits",
        f"BEDL's beta 400 (std 0.05) on {chosen('bedl', 'energy', 'noise_precision=400.0')} and "
        f"{chosen('bedl', 'yacht', 'noise_precision=400.0')}",
        f"the Laplace std 0.05 on {chosen('laplace', 'energy', 'scale=0.05')} and "
        f"{chosen('laplace', 'yacht', 'scale=0.05')}",
        f"finite values of both ({kept['uci_boston']} of 20 on boston and wine"
        if kept["uci_boston"] == kept["uci_wine"]
        else "differ",
        f"All {runs:,} runs",
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

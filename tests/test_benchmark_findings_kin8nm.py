"""The numbers of the UCI benchmark's kin8nm finding (docs/benchmark/paper/uci_benchmark/findings.yaml), computed
again from the kept runs of both tracks and the study's published values; the controls: the same check on changed runs
fails."""

from __future__ import annotations

import pandas as pd

from bnnrepro.report.benchmark import block_keys, published_values, ranked, validation_choice
from bnnrepro.report.ranking import on_every_dataset, paired_replicates, study_rankings
from tests.findings_helpers import scaled
from tests.test_benchmark_findings import HETEROSCEDASTIC, KEPT, STUDY, chosen_count, selected_means

RERUN = "Gal & Ghahramani rerun, 100x epochs"
NAMES = {"udn": "UDN", "bedl": "BEDL", "deep_ensemble": "the deep ensemble"}


def published(source: str, row: str, metric: str) -> float:
    """The study's published value of `row` on kin8nm in the source `source` (the mean of its per-split values where
    it gives them), `metric` in our sign (`published_values`)."""
    values = published_values(STUDY.benchmark["published"])
    found = values[(values["source"] == source) & (values["row"] == row) & (values["metric"] == metric)]
    return float(found.loc[found["dataset"] == "uci_kin8nm", "value"].squeeze())


def kin8nm_fragments(metrics: pd.DataFrame, heads: pd.DataFrame) -> list[str]:
    """'Kin8nm.' phrases: the leaderboard over all six sets without the GP, kin8nm's best methods, validation's
    choices there, and our means beside the published ones."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))
    paired = paired_replicates(ranked(selected, STUDY.benchmark), "regression")
    rmse, nll = study_rankings(on_every_dataset(paired), "regression")
    means = selected_means(metrics, "uci_benchmark").xs("uci_kin8nm", level="dataset").unstack("metric")
    means = means.loc[[m for m in means.index if m not in STUDY.benchmark["unranked"]]]
    best_rmse, best_nll = means["test_rmse_original"].idxmin(), means["test_nll_original"].idxmin()
    head = selected_means(heads, "uci_benchmark_heteroscedastic")["deep_ensemble", "uci_kin8nm", "test_nll_original"]
    thesis = [
        means.loc[method, "test_nll_original"] - published("thesis Table 3.1", name, "nll_original")
        for method, name in (("dvi", "DVI"), ("varout", "VarOut"), ("vbp", "VBP"))
    ]
    ours = means["test_rmse_original"]
    return [
        "the deep ensemble is first on both metrics"
        if rmse.average_ranks.index[0] == nll.average_ranks.index[0] == "deep_ensemble"
        else "another first",
        f"({rmse.average_ranks.iloc[0]:.2f} on RMSE, {nll.average_ranks.iloc[0]:.2f} on NLL; Friedman "
        f"p = {rmse.friedman_p:.2g} and {nll.friedman_p:.2g})",
        "Ranked over all six datasets without the GP" if set(paired["method"]) - set(rmse.blocks) == {"gp"} else "x",
        f"{NAMES.get(best_rmse, best_rmse)} has the best RMSE ({ours[best_rmse]:.4f} against the deep ensemble's "
        f"{ours['deep_ensemble']:.4f}) and {NAMES.get(best_nll, best_nll)} the best NLL "
        f"({means.loc[best_nll, 'test_nll_original']:.2f})",
        f"whose smallest rate won on {chosen_count(choices, 'mc_dropout', 'kin8nm', 'dropout=0.0001')} of 20 splits",
        f"(the Laplace std 0.4 on {chosen_count(choices, 'laplace', 'kin8nm', 'scale=0.4')}, the repulsive "
        f"ensemble's std 0.2 on {chosen_count(choices, 'repulsive_ensemble', 'kin8nm', 'likelihood_std=0.2')})",
        f"our deep ensemble's RMSE is below their "
        f"{published('Lakshminarayanan et al. 2017, Table 1', 'Deep Ensembles', 'rmse_original'):.2f}"
        if ours["deep_ensemble"] < published("Lakshminarayanan et al. 2017, Table 1", "Deep Ensembles", "rmse_original")
        else "above",
        f"MC dropout's {ours['mc_dropout']:.4f} below the "
        f"{published('Lakshminarayanan et al. 2017, Table 1', 'MC-dropout', 'rmse_original'):.2f}",
        f"their later rerun on these splits ({published(RERUN, 'MC-dropout', 'rmse_original'):.4f}, 100 times our "
        "epochs)",
        f"ours with one shared noise gives {means.loc['deep_ensemble', 'test_nll_original']:.2f}, the heteroscedastic "
        f"track's with heads {head:.2f}",
        f"ahead of ours (40 epochs) by {min(thesis):.2f} to {max(thesis):.2f} nats",
        f"agrees with ours ({published('thesis Table 5.1', 'BEDL', 'nll_original'):.2f} against "
        f"{means.loc['bedl', 'test_nll_original']:.2f})",
    ]


def test_the_kin8nm_finding_says_what_the_kept_runs_make() -> None:
    missing = KEPT.missing_fragments(kin8nm_fragments(KEPT.metrics(), HETEROSCEDASTIC.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept kin8nm runs make: {missing}"


def test_control_kin8nm_runs_with_other_values_fail_the_check() -> None:
    """UDN's kin8nm RMSE raised by a tenth: the deep ensemble's is then the best."""
    metrics = scaled(KEPT.metrics(), 1.1, method="udn", dataset="uci_kin8nm", metric="test_rmse_original")
    assert KEPT.missing_fragments(kin8nm_fragments(metrics, HETEROSCEDASTIC.metrics()))

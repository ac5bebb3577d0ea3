"""The numbers of the UCI benchmark's finding on the large sets, kin8nm, power and naval
(docs/benchmark/paper/uci_benchmark/findings.yaml), computed again from the kept runs of both tracks, the sets' shapes
and the study's published values; the controls: the same check on changed runs fails."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from bnnrepro.data import uci
from bnnrepro.report.benchmark import (
    block_keys,
    published_comparison,
    published_values,
    ranked,
    validation_choice,
)
from bnnrepro.report.per_dataset_tests import compare_within_datasets, holdout_fraction, split_verdict
from bnnrepro.report.ranking import on_every_dataset, paired_replicates, study_rankings
from tests.findings_helpers import scaled
from tests.test_benchmark_findings import HETEROSCEDASTIC, KEPT, STUDY, WORDS, chosen_count, selected_means, splits

LARGE = ("kin8nm", "power", "naval")
ENSEMBLES = "Lakshminarayanan et al. 2017, Table 1"
RERUN = "Gal & Ghahramani rerun, 100x epochs"
NAMES = {"udn": "UDN", "bedl": "BEDL", "deep_ensemble": "the deep ensemble", "dun": "the DUN",
         "finite": "the finite net", "mc_dropout": "MC dropout", "laplace": "the Laplace approximation",
         "mfvi": "MFVI", "dvi": "DVI", "varout": "VarOut", "vbp": "VBP",
         "repulsive_ensemble": "the repulsive ensemble"}  # fmt: skip


def published(dataset: str, source: str, row: str, metric: str) -> float:
    """The study's published value of `row` on `dataset` in `source` (the mean of its per-split values where it
    gives them), `metric` in our sign (`published_values`)."""
    values = published_values(STUDY.benchmark["published"])
    found = values[(values["source"] == source) & (values["row"] == row) & (values["metric"] == metric)]
    return float(found.loc[found["dataset"] == f"uci_{dataset}", "value"].mean())


def shape(dataset: str) -> str:
    """'8,192 rows, 8 inputs': the set's size as the finding writes it."""
    rows, inputs, _ = uci.SHAPES[f"uci_{dataset}"]
    return f"{rows:,} rows, {inputs} inputs"


def side(ours: float, theirs: float) -> str:
    """Where our mean lies against a published one, as the prose says it."""
    return "below" if ours < theirs else "above"


def worse_than_best(within: dict[str, list], dataset: str, metric: str) -> list[str]:
    """The methods the corrected resampled t-tests within `dataset` (`within`: each metric's comparisons over every
    dataset, `compare_within_datasets`) find worse than its best on `metric`."""
    return [c.method for c in within[metric] if c.dataset == dataset and split_verdict(c) == "worse"]


def judged_on(verdicts: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The published numbers on `dataset` that were judged against ours (those with runs of ours)."""
    return verdicts[verdicts["column"].str.startswith(dataset) & verdicts["n_runs"].notna()]


class LargeSet:
    """One large set's means (ranked methods, test RMSE and NLL), validation's choices there and the published
    values, with the phrases both sets' sentences share."""

    def __init__(self, dataset: str, metrics: pd.DataFrame, heads: pd.DataFrame, choices: pd.DataFrame) -> None:
        self.dataset, self.choices, self.metrics = dataset, choices, metrics
        means = selected_means(metrics, "uci_benchmark").xs(f"uci_{dataset}", level="dataset").unstack("metric")
        self.means = means.loc[[m for m in means.index if m not in STUDY.benchmark["unranked"]]]
        self.rmse, self.nll = self.means["test_rmse_original"], self.means["test_nll_original"]
        self.head = selected_means(heads, "uci_benchmark_heteroscedastic").get(
            ("deep_ensemble", f"uci_{dataset}", "test_nll_original")
        )  # None where the heteroscedastic track has no runs on the set

    def published(self, source: str, row: str, metric: str) -> float:
        return published(self.dataset, source, row, metric)

    def chosen(self, method: str, setting: str) -> str:
        return chosen_count(self.choices, method, self.dataset, setting)

    def grid_end(self, method: str, key: str, end: Callable[[pd.Series], float]) -> str:
        """The setting 'key=value' at one end (`min` or `max`) of `method`'s grid over `key` in the kept runs."""
        values = self.metrics.loc[self.metrics["method"] == method, key]
        return f"{key}={end(values.dropna())}"

    def most_chosen(self, method: str) -> tuple[str, str]:
        """The value of `method`'s setting that validation chose on the most splits of the set, and on how many."""
        row = self.choices[(self.choices["row"] == method) & (self.choices["column"] == f"uci_{self.dataset}")]
        counts = dict(part.rsplit(" (", 1) for part in row["ours"].iloc[0].split(", "))
        setting = max(counts, key=lambda name: int(counts[name].split("/")[0]))
        return setting.split("=")[1], counts[setting].split("/")[0]

    def bests(self) -> str:
        """The best RMSE beside the deep ensemble's (the runner-up's where the deep ensemble is the best) and the best
        NLL."""
        best_rmse, best_nll = self.rmse.idxmin(), self.nll.idxmin()
        other = "deep_ensemble" if best_rmse != "deep_ensemble" else self.rmse.drop(best_rmse).idxmin()
        return (
            f"{NAMES[best_rmse]} has the best RMSE ({self.rmse[best_rmse]:.3g} against {NAMES[other]}'s "
            f"{self.rmse[other]:.3g}) and {NAMES[best_nll]} the best NLL ({self.nll[best_nll]:.2f})"
        )

    def thesis_gap(self) -> str:
        """How far the thesis' DVI, VarOut and VBP (Table 3.1) are from ours on NLL."""
        gaps = [
            self.nll[method] - self.published("thesis Table 3.1", name, "nll_original")
            for method, name in (("dvi", "DVI"), ("varout", "VarOut"), ("vbp", "VBP"))
        ]
        return f"by {min(gaps):.2f} to {max(gaps):.2f} nats"

    def shared_and_heads(self) -> str:
        return (
            f"ours with one shared noise gives {self.nll['deep_ensemble']:.2f}, the heteroscedastic track's with heads "
            f"{self.head:.2f}"
        )


def kin8nm_fragments(kin8nm: LargeSet) -> list[str]:
    """'Within kin8nm' phrases: its best methods, validation's choices there, our means beside the published ones."""
    rmse, published_rmse = kin8nm.rmse, lambda row: kin8nm.published(ENSEMBLES, row, "rmse_original")
    smallest_rate = kin8nm.grid_end("mc_dropout", "dropout", min)
    (laplace, on_laplace), (repulsive, on_repulsive) = map(kin8nm.most_chosen, ("laplace", "repulsive_ensemble"))
    return [
        f"Within kin8nm, {kin8nm.bests()}",
        f"whose smallest rate won on {kin8nm.chosen('mc_dropout', smallest_rate)} of {splits('kin8nm')} splits",
        f"(the Laplace std {laplace} on {on_laplace}, the repulsive ensemble's std {repulsive} on {on_repulsive})",
        f"our deep ensemble's RMSE is {side(rmse['deep_ensemble'], published_rmse('Deep Ensembles'))} their "
        f"{published_rmse('Deep Ensembles'):.2f}",
        f"MC dropout's {rmse['mc_dropout']:.4f} {side(rmse['mc_dropout'], published_rmse('MC-dropout'))} the "
        f"{published_rmse('MC-dropout'):.2f}",
        f"their later rerun on these splits ({kin8nm.published(RERUN, 'MC-dropout', 'rmse_original'):.4f}, 100 times "
        "our epochs)",
        kin8nm.shared_and_heads(),
        f"ahead of ours (40 epochs) {kin8nm.thesis_gap()}",
        f"agrees with ours ({kin8nm.published('thesis Table 5.1', 'BEDL', 'nll_original'):.2f} against "
        f"{kin8nm.nll['bedl']:.2f})",
    ]


def power_fragments(power: LargeSet, verdicts: pd.DataFrame, within: dict[str, list]) -> list[str]:
    """'Within power' phrases: its best methods and the tests within it, validation's choices there, the published
    numbers' verdicts and our means beside them."""
    told_apart = worse_than_best(within, "uci_power", "rmse_original")
    judged = judged_on(verdicts, "uci_power")
    agree = judged["verdict"] == "agrees"
    others = " and ".join(
        f"{NAMES[row.split(' ')[0]]}'s {column.split(' ')[1].split('_')[0].upper()}"
        for row, column in zip(judged.loc[~agree, "row"], judged.loc[~agree, "column"], strict=True)
    )
    published_rmse = {row: power.published(ENSEMBLES, row, "rmse_original") for row in ("Deep Ensembles", "MC-dropout")}
    beta = power.grid_end("bedl", "noise_precision", max)  # the least noise BEDL's grid offers
    return [
        f"Within power, {power.bests()}",
        f"tell none from {NAMES[power.rmse.idxmin()]} on RMSE" if not told_apart else "tell some apart",
        f"MC dropout's smallest rate on {power.chosen('mc_dropout', power.grid_end('mc_dropout', 'dropout', min))} of "
        f"{splits('power')} splits and BEDL's largest precision ({float(beta.split('=')[1]):g}) on "
        f"{power.chosen('bedl', beta)}.",
        f"{int(agree.sum())} of its {len(judged)} published numbers agree with ours",
        f"(not {others}:",
        f"their {published_rmse['Deep Ensembles']:.2f} and {published_rmse['MC-dropout']:.2f} against our "
        f"{power.rmse['deep_ensemble']:.2f} and {power.rmse['mc_dropout']:.2f}",
        f"Gal & Ghahramani's rerun {power.published(RERUN, 'MC-dropout', 'rmse_original'):.2f}",
        f"are ahead of ours {power.thesis_gap()} here",
        f"its BEDL {power.published('thesis Table 5.1', 'BEDL', 'nll_original'):.2f} against our "
        f"{power.nll['bedl']:.2f}",
        power.shared_and_heads(),
        f"against their ensemble's {power.published(ENSEMBLES, 'Deep Ensembles', 'nll_original'):.2f}",
    ]


def naval_fragments(naval: LargeSet, verdicts: pd.DataFrame, within: dict[str, list]) -> list[str]:
    """'Within naval' phrases: its best methods and the tests within it, validation at its grids' ends, the published
    numbers' verdicts and our means beside them."""
    judged = judged_on(verdicts, "uci_naval")
    rmse_cells, nll_cells = (
        judged[judged["column"].str.endswith(metric)].sort_values("row") for metric in ("rmse_original", "nll_original")
    )
    undetermined = nll_cells.loc[nll_cells["verdict"] == "undetermined", "row"].str.split(" ").str[0]
    worse_rmse, worse_nll = (
        worse_than_best(within, "uci_naval", metric) for metric in ("rmse_original", "nll_original")
    )
    beta, rate = naval.grid_end("bedl", "noise_precision", max), naval.grid_end("mc_dropout", "dropout", min)
    (laplace, on_laplace), (repulsive, on_repulsive) = map(naval.most_chosen, ("laplace", "repulsive_ensemble"))
    return [
        f"Within naval, {naval.bests()}",
        f"the tests within the dataset tell none from {NAMES[naval.rmse.idxmin()]} on RMSE"
        if not worse_rmse
        else "tell some apart on RMSE",
        f"and {WORDS[len(worse_nll)]} methods from {NAMES[naval.nll.idxmin()]} on NLL ("
        + ", ".join(NAMES[method] for method in sorted(worse_nll)),
        f"BEDL's largest precision ({float(beta.split('=')[1]):g}) won on {naval.chosen('bedl', beta)} of "
        f"{splits('naval')} splits, MC dropout's smallest rate on {naval.chosen('mc_dropout', rate)}",
        f"(the Laplace std {laplace} on {on_laplace}, the repulsive ensemble's std {repulsive} on {on_repulsive}, its "
        "grid's end too)",
        f"their {' and '.join(f'{value:.2f}' for value in rmse_cells['published'])} (deep ensemble, MC dropout)",
        f"round ours ({' and '.join(f'{value:.2g}' for value in rmse_cells['ours'])}) to "
        f"{' and '.join(f'{value:.2f}' for value in rmse_cells['ours'])}",
        f"{int((nll_cells['verdict'] == 'differs').sum())} of the {len(nll_cells)} published NLLs differ from ours",
        f"ours with one shared noise gives {naval.nll['deep_ensemble']:.2f} against their ensemble's "
        f"{naval.published(ENSEMBLES, 'Deep Ensembles', 'nll_original'):.2f}",
        f"MC dropout's {naval.nll['mc_dropout']:.2f} against the "
        f"{naval.published(ENSEMBLES, 'MC-dropout', 'nll_original'):.2f} of Gal & Ghahramani's first version",
        f"ahead of ours {naval.thesis_gap()}",
        f"its BEDL {naval.published('thesis Table 5.1', 'BEDL', 'nll_original'):.2f} against our "
        f"{naval.nll['bedl']:.2f}",
        " and ".join(f"{NAMES[m]}'s" for m in undetermined) + " undetermined",
        "the heteroscedastic track has no naval runs yet" if naval.head is None else f"with heads {naval.head:.2f}",
    ]


def large_sets_fragments(metrics: pd.DataFrame, heads: pd.DataFrame) -> list[str]:
    """'The large sets.' phrases: the sets' shapes, the leaderboard over every dataset without the GP, and each large
    set's own sentences."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))
    paired = paired_replicates(ranked(selected, STUDY.benchmark), "regression")
    rmse, nll = study_rankings(on_every_dataset(paired), "regression")
    kin8nm, power, naval = (LargeSet(name, metrics, heads, choices) for name in LARGE)
    verdicts = published_comparison(selected, published_values(STUDY.benchmark["published"]))
    holdout = holdout_fraction(STUDY.benchmark)
    within = {m: compare_within_datasets(paired, m, holdout) for m in ("rmse_original", "nll_original")}
    return [
        f"Kin8nm ({shape('kin8nm')}), power ({shape('power')}) and naval ({shape('naval')})",
        f"Ranked over all {WORDS[len(rmse.blocks)]} datasets without the GP"
        if set(paired["method"]) - set(rmse.average_ranks.index) == {"gp"}
        else "other methods left out",
        f"{NAMES[rmse.average_ranks.index[0]]} is first on both metrics"
        if rmse.average_ranks.index[0] == nll.average_ranks.index[0]
        else f"{NAMES[rmse.average_ranks.index[0]]} is first on RMSE and {NAMES[nll.average_ranks.index[0]]} on NLL",
        f"({rmse.average_ranks.iloc[0]:.2f} on RMSE, {nll.average_ranks.iloc[0]:.2f} on NLL; Friedman "
        f"p = {rmse.friedman_p:.2g} and {nll.friedman_p:.2g})",
        *kin8nm_fragments(kin8nm),
        *power_fragments(power, verdicts, within),
        *naval_fragments(naval, verdicts, within),
    ]


def test_the_large_sets_finding_says_what_the_kept_runs_make() -> None:
    missing = KEPT.missing_fragments(large_sets_fragments(KEPT.metrics(), HETEROSCEDASTIC.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs on the large sets make: {missing}"


@pytest.mark.parametrize(
    ("method", "dataset"), [("udn", "uci_kin8nm"), ("bedl", "uci_power"), ("deep_ensemble", "uci_naval")]
)
def test_control_large_set_runs_with_other_values_fail_the_check(method: str, dataset: str) -> None:
    """The RMSE of the set's best method raised by a tenth: another method then has the best RMSE there."""
    metrics = scaled(KEPT.metrics(), 1.1, method=method, dataset=dataset, metric="test_rmse_original")
    missing = KEPT.missing_fragments(large_sets_fragments(metrics, HETEROSCEDASTIC.metrics()))
    assert any(fragment.startswith(f"Within {dataset[4:]}") for fragment in missing), missing

"""The numbers the UCI benchmark's findings (docs/benchmark/paper/uci_benchmark/findings.yaml, and its heteroscedastic
track's) take from the kept runs, computed again from those runs and from an earlier batch's runs trained again on
another CPU vendor's machine (vendor_rerun.csv beside): a new batch cannot leave the prose behind (the control: the
same check on runs whose values changed fails).
The budget experiments' numbers are checked against their CSVs beside; published numbers are not the runs'."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from bnnrepro.artifacts.render import standard_error
from bnnrepro.data import uci
from bnnrepro.fidelity.reproduce import relative_differences
from bnnrepro.files import read_json
from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.benchmark import block_keys, ranked, validation_choice
from bnnrepro.report.practical_equivalence import DECIDED
from bnnrepro.report.ranking import SIGNIFICANCE, Ranking, paired_replicates, study_rankings
from tests.conftest import ROOT
from tests.findings_helpers import ORDINAL_WORDS, KeptFolder, scaled

KEPT = KeptFolder(ROOT / "docs/benchmark/paper/uci_benchmark")
STUDY = load_study("uci_benchmark")
SHOWN = {"mfvi": "MFVI", "bedl": "BEDL", "udn": "the UDN", "laplace": "the Laplace approximation", "vbp": "VBP",
         "mc_dropout": "MC dropout", "finite": "the finite net", "dun": "the DUN", "dvi": "DVI",
         "varout": "VarOut", "deep_ensemble": "the deep ensemble", "gp": "the exact GP",
         "repulsive_ensemble": "the repulsive ensemble", "sdebnn": "the SDE-BNN", "odenet": "the ODE net"}  # fmt: skip
"""The methods as the findings name them."""


def budget_cell(row: pd.Series, metric: str) -> str:
    """A budget experiment's mean and standard error of `metric` (`KeptFolder.budget`) as the prose writes them."""
    return f"{row[metric]:.2f} +- {row[f'{metric}_se']:.2f}"


def chosen_count(choices: pd.DataFrame, method: str, dataset: str, setting: str) -> str:
    """How many of the dataset's splits validation chose `setting` of `method` on ('0' where none), from
    `validation_choice`'s choices."""
    row = choices[(choices["row"] == method) & (choices["column"] == f"uci_{dataset}")]["ours"]
    counts = dict(part.rsplit(" (", 1) for part in row.iloc[0].split(", ")) if len(row) else {}
    return counts.get(setting, "0/").split("/")[0]


def splits(dataset: str) -> int:
    """How many standard splits the dataset has (20, or 5 for protein: Hernandez-Lobato & Adams 2015)."""
    return uci.SHAPES[f"uci_{dataset}"][2]


def expected_fragments(metrics: pd.DataFrame, folder: KeptFolder = KEPT) -> list[str]:
    """The findings' phrases that carry a number of the runs (`metrics`), of the budget experiments (the CSVs in
    `folder`) or of the batch's provenance (its commit, wall and training time), as they make them."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))

    def values(method: str, dataset: str, metric: str) -> pd.Series:
        chosen = selected[(selected["method"] == method) & (selected["dataset"] == f"uci_{dataset}")]
        return chosen[chosen["metric"] == f"test_{metric}_original"]["value"]

    def with_error(method: str, dataset: str, metric: str) -> str:
        found = values(method, dataset, metric)
        return f"{found.mean():.2f} +- {standard_error(found):.2f}"

    def chosen(method: str, dataset: str, setting: str) -> str:
        return chosen_count(choices, method, dataset, setting)

    def grid_end(method: str, key: str, end: Callable) -> float:
        """The end of `method`'s grid of `key` among the kept runs (the least noise or dropout it offers)."""
        return end(metrics.loc[metrics["method"] == method, key].dropna())

    dropout, scale = grid_end("mc_dropout", "dropout", min), grid_end("laplace", "scale", min)
    beta, std = grid_end("bedl", "noise_precision", max), grid_end("repulsive_ensemble", "likelihood_std", min)
    paired = paired_replicates(ranked(selected, STUDY.benchmark), "regression")
    kept = paired[paired["metric"] == "test_nll_original"].groupby("dataset")["seed"].nunique()
    rmse, nll = study_rankings(paired, "regression")
    best_rmse, best_nll = (SHOWN[ranking.average_ranks.index[0]] for ranking in (rmse, nll))

    def told_apart(ranking: Ranking) -> str:
        """The methods the post-hoc test (read after the Friedman test) tells from the best, as the finding names
        them."""
        p = ranking.posthoc_p().loc[ranking.average_ranks.index[0]]
        return " and ".join(SHOWN[m] for m in ranking.average_ranks.index if p[m] < SIGNIFICANCE) or "none"

    yacht, concrete = (folder.budget(f"mc_dropout_{name}") for name in ("yacht", "concrete"))
    protocol = "benchmark (40 epochs, 1/5 held out)"

    def both(variant: str) -> str:
        return f"{yacht.loc[variant, 'nll']:.2f} and {yacht.loc[variant, 'rmse']:.2f}"

    first, widened, *later = folder.provenance()["batches"]
    rejects = all(ranking.friedman_p < SIGNIFICANCE for ranking in (rmse, nll))
    return [
        f"The {first['runs']:,} runs of the first batch were trained at {first['commit']}",
        f"{first['wall_seconds'] / 60:.0f} min wall, {first['train_seconds'] / 60:.0f} min of training summed",
        f"The {widened['runs']:,} runs of the second batch were trained at {widened['commit']}",
        f"then the {metrics.loc[metrics['dataset'] == 'uci_kin8nm', 'run'].nunique()} on kin8nm",
        f"{widened['wall_seconds'] / 60:.0f} min wall, {widened['train_seconds'] / 60:.0f} min of training.",
        *(
            f"The {batch['runs']:,} runs of the {ORDINAL_WORDS[index]} batch were trained at {batch['commit']} "
            f"({batch['wall_seconds'] / 60:.0f} min wall, {batch['train_seconds'] / 60:.0f} min of training)"
            for index, batch in enumerate(later, start=3)
        ),
        f"gives NLL {budget_cell(yacht.loc[protocol], 'nll')} and RMSE {budget_cell(yacht.loc[protocol], 'rmse')}",
        f"four fifths gives {both('no holdout')}, 400 epochs instead of 40 give {both('400 epochs')}, both "
        f"{both('400 epochs, no holdout')}",
        f"move the NLL from {concrete.loc[protocol, 'nll']:.2f} to {concrete.loc['no holdout', 'nll']:.2f} (no "
        f"holdout) and {concrete.loc['400 epochs', 'nll']:.2f} (400 epochs",
        f"{best_rmse.capitalize()} has the best average rank on RMSE and {best_nll} on NLL",
        "both Friedman tests reject at 0.05" if rejects else "a Friedman test that does not reject",
        f"with {len(rmse.average_ranks)} ranked methods on {WORDS[len(rmse.blocks)]} datasets",
        f"on RMSE it tells {best_rmse} from {told_apart(rmse)}; on NLL it tells {best_nll} from {told_apart(nll)}.",
        f"yacht's RMSE ({with_error('deep_ensemble', 'yacht', 'rmse')} against 1.58)",
        f"energy's ({values('deep_ensemble', 'energy', 'rmse').mean():.2f} against 2.09",
        f"energy's NLL ({with_error('deep_ensemble', 'energy', 'nll')} against 1.38)",
        f"better on energy (NLL {values('mc_dropout', 'energy', 'nll').mean():.2f} against 1.99)",
        f"(yacht NLL {values('mc_dropout', 'yacht', 'nll').mean():.2f} against 1.55)",
        f"std 0.8 on {'every' if chosen('laplace', 'wine', 'scale=0.8') == str(splits('wine')) else 'not every'} "
        "wine split (1.6 "
        f"{'never' if chosen('laplace', 'wine', 'scale=1.6') == '0' else 'sometimes'})",
        f"MC dropout's 0.2 on {chosen('mc_dropout', 'wine', 'dropout=0.2')} of {splits('wine')}",
        f"MC dropout's {dropout} on {chosen('mc_dropout', 'energy', f'dropout={dropout}')} of {splits('energy')} "
        f"energy splits and {chosen('mc_dropout', 'yacht', f'dropout={dropout}')} of {splits('yacht')} yacht splits",
        f"BEDL's beta {beta:g} (std {beta**-0.5:g}) on {chosen('bedl', 'energy', f'noise_precision={beta}')} and "
        f"{chosen('bedl', 'yacht', f'noise_precision={beta}')}",
        f"the Laplace std {scale} on {chosen('laplace', 'energy', f'scale={scale}')} and "
        f"{chosen('laplace', 'yacht', f'scale={scale}')}",
        f"it chooses the new end as often: {std} on "
        + ", ".join(
            f"{chosen('repulsive_ensemble', name, f'likelihood_std={std}')} of {splits(name)} {name}"
            for name in ("boston", "energy")
        )
        + f" and {chosen('repulsive_ensemble', 'yacht', f'likelihood_std={std}')} of {splits('yacht')} yacht splits",
        f"finite values of both ({kept['uci_boston']} of {splits('boston')} on boston and wine"
        if kept["uci_boston"] == kept["uci_wine"]
        else "differ",
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


def test_control_a_budget_experiment_with_other_values_fails_the_check(tmp_path: Path) -> None:
    """The yacht budget experiment's CSV with its 400-epoch row's NLL raised by a tenth."""
    copy = tmp_path / "kept"
    shutil.copytree(KEPT.path, copy, ignore=shutil.ignore_patterns("metrics.csv", "vendor_rerun.csv"))
    budget = copy / "sensitivity_budget_mc_dropout_yacht.csv"
    table = pd.read_csv(budget)
    table.loc[table["variant"] == "400 epochs", "test_nll_original"] += 0.1
    table.to_csv(budget, index=False)
    assert KeptFolder(copy).missing_fragments(expected_fragments(KEPT.metrics(), KeptFolder(copy)))


@pytest.mark.parametrize(("method", "metric"), [("bedl", "test_rmse_original"), ("mfvi", "test_nll_original")])
def test_control_a_leaderboard_that_moved_fails_the_check(method: str, metric: str) -> None:
    """The leaderboard's phrases follow the ranks: halving one method's values (RMSE: BEDL no longer told apart from
    the ensemble; NLL: MFVI no longer last) changes what they must say."""
    metrics = scaled(KEPT.metrics(), 0.5, method=method, metric=metric)
    missing = KEPT.missing_fragments(expected_fragments(metrics))
    assert any("on RMSE it tells" in fragment for fragment in missing), missing


HETEROSCEDASTIC = KeptFolder(ROOT / "docs/benchmark/paper/uci_benchmark_heteroscedastic")
NAMED = {"deep_ensemble": "the deep ensemble", "mc_dropout": "MC dropout", "mfvi": "MFVI"}
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def selected_means(metrics: pd.DataFrame, study: str) -> pd.Series:
    """Each (method, dataset, metric)'s mean over the splits of the values validation selected, test NLL and RMSE."""
    benchmark = load_study(study).benchmark
    selected, _ = validation_choice(metrics, benchmark["select_by"], block_keys(benchmark))
    tested = selected[selected["metric"].isin(["test_nll_original", "test_rmse_original"])]
    return tested.groupby(["method", "dataset", "metric"])["value"].mean()


def heteroscedastic_fragments(heads: pd.DataFrame, shared: pd.DataFrame) -> list[str]:
    """The heteroscedastic findings' phrases, from the kept runs of the two tracks."""
    head, one = selected_means(heads, "uci_benchmark_heteroscedastic"), selected_means(shared, "uci_benchmark")
    change = (head - one).dropna()

    def per_set(method: str, metric: str) -> pd.Series:
        return change.xs((method, f"test_{metric}_original"), level=["method", "metric"])

    def better(method: str) -> str:
        return f"{int((per_set(method, 'nll') < 0).sum())} of {len(per_set(method, 'nll'))}"

    def worse_rmse(method: str) -> str:
        return f"{int((per_set(method, 'rmse') > 0).sum())} of {len(per_set(method, 'rmse'))}"

    ensemble = ", ".join(f"{v:+.2f} on {d.removeprefix('uci_')}" for d, v in per_set("deep_ensemble", "nll").items())
    tests = {(m, metric): stats.wilcoxon(per_set(m, metric)).pvalue for m in NAMED for metric in ("nll", "rmse")}
    smallest = min(tests, key=tests.get)
    sets = len(per_set("mc_dropout", "rmse"))
    bound = 2 / 2**sets  # the exact test's smallest two-sided p-value: every sign alike
    holm = multipletests(list(tests.values()), method="holm")[1].min()
    runner_up = sorted(tests, key=tests.get)[1]
    direction = "costing" if per_set(*smallest).mean() > 0 else "improving"
    shown = (
        f"below {SIGNIFICANCE:g}: with naval the eighth set, {NAMED[smallest[0]]}'s head {direction} "
        f"{smallest[1].upper()} is shown over datasets"
        if holm < SIGNIFICANCE
        else "a pattern here, not a shown effect"
    )
    naval = change.xs("uci_naval", level="dataset")
    naval_means = [v.loc[method, "uci_naval", f"test_{metric}_original"] for method, metric in
                   (("deep_ensemble", "nll"), ("mfvi", "rmse")) for v in (head, one)]  # fmt: skip
    energy = [v.loc["deep_ensemble", "uci_energy", "test_rmse_original"] for v in (head, one)]
    budget = {track: HETEROSCEDASTIC.budget(f"deep_ensemble_energy_{track}") for track in ("heads", "shared")}

    def rmse(track: str, variant: str) -> str:
        return budget_cell(budget[track].loc[variant], "rmse")

    protocol = "benchmark (40 epochs, 1/5 held out)"
    return [
        f"the heads' RMSE is {rmse('heads', protocol)} at the benchmark's 40 epochs against the shared noise's "
        f"{rmse('shared', protocol)}",
        f"and {rmse('heads', '400 epochs')} against {rmse('shared', '400 epochs')} at 400",
        f"the deep ensemble {ensemble} (better on {better('deep_ensemble')} sets)",
        f"MC dropout better on {better('mc_dropout')}, MFVI on {better('mfvi')}",
        f"worse for MC dropout on {worse_rmse('mc_dropout')} sets and for the deep ensemble on "
        f"{worse_rmse('deep_ensemble')} (energy: {energy[0]:.2f} against {energy[1]:.2f})",
        f"over {WORDS[sets]} sets has no two-sided p-value below {bound:.4g}",
        f"{NAMED[smallest[0]]}'s {smallest[1].upper()} reaches it" if tests[smallest] == bound else "none reaches it",
        f"by {per_set(*smallest)['uci_kin8nm']:.3f} on kin8nm",
        f"Holm's correction over the {WORDS[len(tests)]} tests ({WORDS[len(NAMED)]} methods, two metrics) makes it "
        f"{holm:.2g}",
        shown,
        f"(the next smallest p, {NAMED[runner_up[0]]}'s {runner_up[1].upper()}, is {tests[runner_up]:.2g} before",
        ("every method's head is worse on both metrics" if (naval > 0).all() else "a head better on naval")
        + " (the deep ensemble's NLL {:.2f} against {:.2f}; MFVI's RMSE {:.4f} against {:.4f})".format(*naval_means),
    ]


def test_the_heteroscedastic_findings_say_what_the_two_tracks_runs_make() -> None:
    missing = HETEROSCEDASTIC.missing_fragments(heteroscedastic_fragments(HETEROSCEDASTIC.metrics(), KEPT.metrics()))
    assert not missing, f"the heteroscedastic findings no longer say what the kept runs make: {missing}"


def test_control_heads_with_other_values_fail_the_heteroscedastic_check() -> None:
    heads = scaled(HETEROSCEDASTIC.metrics(), 0.8, method="deep_ensemble", dataset="uci_energy", metric="test_.*")
    assert HETEROSCEDASTIC.missing_fragments(heteroscedastic_fragments(heads, KEPT.metrics()))


def vendor_comparison(first: pd.DataFrame, second: pd.DataFrame) -> tuple[int, int, dict[str, dict]]:
    """The runs of the earlier batch as one CPU vendor's machine made them (`first`) and another's again (`second`,
    `KeptFolder.vendor_rerun`): how many, how many bit-identical in every kept metric, and per test metric the
    relative differences (`bnnrepro.fidelity.reproduce.relative_differences`)."""
    same = pd.Series(first["value"].to_numpy() == second["value"].to_numpy()).groupby(first["run"].to_numpy()).all()

    def values(table: pd.DataFrame) -> dict[tuple[str, str], float]:
        return dict(zip(zip(table["run"], table["metric"], strict=True), table["value"], strict=True))

    return first["run"].nunique(), int(same.sum()), relative_differences(values(first), values(second))


def machine_fragments(folder: KeptFolder) -> list[str]:
    """'The machine.' finding's phrases, from the earlier batch's runs trained again on another CPU vendor's machine
    and, for the spread over the splits, the kept runs."""
    first, second = folder.vendor_rerun()
    runs, identical, spread = vendor_comparison(first, second)
    rmse = spread["test_rmse_original"]
    method, dataset, *_ = rmse["largest_run"].split("/")
    kept = folder.metrics()
    splits = kept[(kept["method"] == method) & (kept["dataset"] == dataset) & (kept["metric"] == "test_rmse_original")]
    moved = second[(second["run"] == rmse["largest_run"]) & (second["metric"] == "test_rmse_original")]["value"].item()
    inside = splits["value"].min() <= moved <= splits["value"].max()
    return [
        f"none of the {runs} runs of split 0 is bit-identical" if identical == 0 else "some",
        f"the test RMSE's median relative difference {rmse['median']:.2g})",
        f"more than 1% in {rmse['above_1_percent']:.0%} of the runs, at most by {rmse['max']:.0%} "
        f"({rmse['largest_run']}), a move {'inside' if inside else 'outside'} the spread",
        f"over {dataset.removeprefix('uci_')}'s 20 splits ({splits['value'].min():.2f} to {splits['value'].max():.2f})",
    ]


def test_the_machine_finding_says_what_the_vendor_rerun_holds() -> None:
    missing = KEPT.missing_fragments(machine_fragments(KEPT))
    assert not missing, f"'The machine.' no longer says what the vendor rerun holds: {missing}"


def with_rerun_changed(folder: KeptFolder, tmp_path: Path, rows: Callable, change: Callable) -> KeptFolder:
    """A copy of the kept folder (its metrics linked) whose vendor rerun's second-machine values at `rows` (a
    function of that table) are `change`d: a control's record."""
    copy = tmp_path / "kept"
    shutil.copytree(folder.path, copy, ignore=shutil.ignore_patterns("metrics.csv"))
    (copy / "metrics.csv").symlink_to(folder.path / "metrics.csv")
    both = pd.read_csv(folder.path / "vendor_rerun.csv")
    chosen = rows(both)
    assert chosen.any(), "the control would change nothing"
    both.loc[chosen, "rerun"] = change(both.loc[chosen, "rerun"])
    both.to_csv(copy / "vendor_rerun.csv", index=False)
    return KeptFolder(copy)


def test_control_a_rerun_outside_the_splits_spread_fails_the_machine_check(tmp_path: Path) -> None:
    """The same rerun with the most moved run's second-machine RMSE doubled: now outside the splits' spread."""
    largest = vendor_comparison(*KEPT.vendor_rerun())[2]["test_rmse_original"]["largest_run"]
    changed = with_rerun_changed(
        KEPT, tmp_path, lambda both: (both["run"] == largest) & (both["metric"] == "test_rmse_original"),
        lambda values: values * 2,
    )  # fmt: skip
    assert changed.missing_fragments(machine_fragments(changed))


def rerun_verdicts(metrics: pd.DataFrame, study: str) -> dict[str, object]:
    """What the track's verdicts rest on: per ranked metric the average ranks and the Friedman p-value, and the means
    over the splits of each method and dataset with their standard errors, and the MC dropout runs validation chose."""
    benchmark = load_study(study).benchmark
    selected, _ = validation_choice(metrics, benchmark["select_by"], block_keys(benchmark))
    rankings = study_rankings(paired_replicates(ranked(selected, benchmark), "regression"), "regression")
    tested = selected[selected["metric"].isin(["test_nll_original", "test_rmse_original"])]
    means = tested.groupby(["method", "dataset", "metric"])["value"].agg(["mean", standard_error])
    return {"ranks": {r.metric: r.average_ranks.round(2).to_dict() for r in rankings},
            "friedman": {r.metric: r.friedman_p for r in rankings}, "means": means,
            "chosen": set(selected.loc[selected["method"] == "mc_dropout", "run"])}  # fmt: skip


def heteroscedastic_machine_fragments(folder: KeptFolder) -> list[str]:
    """The heteroscedastic track's 'The machine.' phrases: an earlier batch's whole grid trained again on another CPU
    vendor's machine, and the track's verdicts drawn from each machine's runs."""
    first, second = folder.vendor_rerun()
    runs, identical, _ = vendor_comparison(first, second)
    kept = rerun_verdicts(first, "uci_benchmark_heteroscedastic")
    again = rerun_verdicts(second, "uci_benchmark_heteroscedastic")
    shift = (again["means"]["mean"] - kept["means"]["mean"]).abs() / kept["means"]["standard_error"]
    changed = len(kept["chosen"] - again["chosen"])
    rmse, nll = (again["ranks"][metric] for metric in ("rmse_original", "nll_original"))
    same_ranks = "the same" if rmse == kept["ranks"]["rmse_original"] else "other"
    moved_tie = [f"{NAMED[method]} {rank:.1f}" for method, rank in nll.items()]
    friedman = {metric: f"{p:.2g}" for metric, p in again["friedman"].items()}
    before = kept["ranks"]["nll_original"]
    tie = f"tie at {before['deep_ensemble']:.1f}" if before["deep_ensemble"] == before["mc_dropout"] else "no tie"
    decided = {metric: p < SIGNIFICANCE for metric, p in kept["friedman"].items()}
    unchanged = decided == {metric: p < SIGNIFICANCE for metric, p in again["friedman"].items()}
    return [
        f"and {friedman['nll_original']} on NLL ({kept['friedman']['nll_original']:.2g} from the EPYC's)",
        f"the deep ensemble's and MC dropout's {tie} becomes",
        "neither Friedman decision changes" if unchanged else "a Friedman decision changes",
        f"all {runs} of its runs, {identical} bit-identical",
        f"{same_ranks} average ranks on RMSE",
        f"becomes {', '.join(moved_tie[:2])}",
        f"Friedman p = {friedman['rmse_original']} on RMSE and {friedman['nll_original']} on NLL",
        f"by at most {shift.max():.2f} of their standard errors",
        f"validation chose another dropout rate for MC dropout on {changed} of its 100 splits",
    ]


def test_the_heteroscedastic_machine_finding_says_what_the_rerun_makes() -> None:
    missing = HETEROSCEDASTIC.missing_fragments(heteroscedastic_machine_fragments(HETEROSCEDASTIC))
    assert not missing, f"the heteroscedastic track's 'The machine.' no longer says what the rerun makes: {missing}"


def test_control_a_rerun_that_moved_a_mean_fails_the_heteroscedastic_machine_check(tmp_path: Path) -> None:
    """The vendor rerun with the second machine's test NLL of the deep ensemble on yacht raised by a tenth: a mean
    moves further."""
    changed = with_rerun_changed(
        HETEROSCEDASTIC, tmp_path,
        lambda both: both["run"].str.startswith("deep_ensemble/uci_yacht/")
        & (both["metric"] == "test_nll_original"),
        lambda values: values + 0.1,
    )  # fmt: skip
    assert changed.missing_fragments(heteroscedastic_machine_fragments(changed))


def same_vendor_fragments(folder: KeptFolder) -> list[str]:
    """The heteroscedastic track's same-vendor phrases: the kept runs against the batch before as the same vendor's
    machine made it (vendor_rerun.csv's first machine): whether the deep ensemble's runs are bit-identical in every
    metric but the CRPS, in how many the CRPS differs (by float32 rounding at most), MFVI's and MC dropout's median
    relative difference of the test RMSE, and the kept batch's average ranks and Friedman decisions against the
    batch before's."""
    (before, _), whole = folder.vendor_rerun(), folder.metrics()
    kept = whole[whole["dataset"].isin(set(before["run"].str.split("/").str[1]))]  # the sets of the batch before
    both = kept.merge(before, on=["run", "metric"], suffixes=("", "_before"))
    both["same"] = (both["value"] == both["value_before"]) | (both["value"].isna() & both["value_before"].isna())
    both["moved"] = (both["value"] / both["value_before"] - 1).abs()
    both["method"] = both["run"].str.split("/").str[0]
    ensemble = both[both["method"] == "deep_ensemble"]
    crps = ensemble["metric"].str.startswith("test_crps")
    runs = ensemble["run"].nunique()
    rest_same = ensemble[~crps]["same"].all() and ensemble.loc[crps, "moved"].max() < 1e-6
    apart = runs - int(ensemble.groupby("run")["same"].all().sum())
    rmse = both[both["metric"] == "test_rmse_original"].groupby("method")["moved"].median()
    now, earlier = (rerun_verdicts(m, "uci_benchmark_heteroscedastic") for m in (kept, before))
    ranks, friedman = now["ranks"], now["friedman"]
    rejects = {metric: p < SIGNIFICANCE for metric, p in friedman.items()}
    reverse = rejects == {metric: p >= SIGNIFICANCE for metric, p in earlier["friedman"].items()}
    ensemble_rank = {ranks[metric]["deep_ensemble"] for metric in ranks}
    return [
        f"the deep ensemble's average rank is {ensemble_rank.pop():.1f} on both metrics"
        if len(ensemble_rank) == 1
        else "differs",
        f"MC dropout's {ranks['rmse_original']['mc_dropout']:.1f} on RMSE and {ranks['nll_original']['mc_dropout']:.1f}"
        " on NLL",
        f"the Friedman test rejects on NLL (p = {friedman['nll_original']:.2g}) and not on RMSE "
        f"(p = {friedman['rmse_original']:.2g})"
        if rejects == {"nll_original": True, "rmse_original": False}
        else "other decisions",
        "the reverse of the batch before" if reverse else "not the reverse",
        f"over the {WORDS[whole['dataset'].nunique()]} sets, the large ones included, both reject"
        if all(p < SIGNIFICANCE for p in rerun_verdicts(whole, "uci_benchmark_heteroscedastic")["friedman"].values())
        else "not both",
        f"the deep ensemble's {runs} runs of that batch",
        "are bit-identical in every metric but the CRPS" if rest_same else "are not bit-identical",
        f"whose last digit differs in {apart} of them",
        f"(their test RMSE by a median {rmse['mfvi']:.2%} and {rmse['mc_dropout'] * 100:.2g}%)",
    ]


def test_the_same_vendor_finding_says_what_the_kept_runs_and_the_batch_before_make() -> None:
    missing = HETEROSCEDASTIC.missing_fragments(same_vendor_fragments(HETEROSCEDASTIC))
    assert not missing, f"the heteroscedastic track's same-vendor sentence no longer says what the runs make: {missing}"


def test_control_a_kept_ensemble_run_that_moved_fails_the_same_vendor_check(tmp_path: Path) -> None:
    """The kept deep ensemble's test RMSE on one yacht split raised by a thousandth: no longer bit-identical."""
    copy = tmp_path / "kept"
    shutil.copytree(HETEROSCEDASTIC.path, copy)
    metrics = pd.read_csv(copy / "metrics.csv")
    row = (metrics["run"] == "deep_ensemble/uci_yacht/split=0/seed=0") & (metrics["metric"] == "test_rmse_original")
    assert row.sum() == 1, "the control would change nothing"
    metrics.loc[row, "value"] *= 1.001
    metrics.to_csv(copy / "metrics.csv", index=False)
    assert KeptFolder(copy).missing_fragments(same_vendor_fragments(KeptFolder(copy)))


GAP = KeptFolder(ROOT / "docs/benchmark/paper/uci_benchmark_gap")


def gap_fragments(gap: pd.DataFrame, standard: pd.DataFrame) -> list[str]:
    """The gap splits' findings' phrases, from their kept runs, the standard splits' (uci_benchmark) and the kept
    hierarchical posteriors."""
    change = (selected_means(gap, "uci_benchmark_gap") - selected_means(standard, "uci_benchmark")).dropna()
    nll = change.xs("test_nll_original", level="metric")
    energy = nll.xs("uci_energy", level="dataset")
    benchmark = load_study("uci_benchmark_gap").benchmark
    selected, _ = validation_choice(gap, benchmark["select_by"], block_keys(benchmark))
    rows = selected[(selected["dataset"] == "uci_energy") & (selected["metric"] == "test_nll_original")]
    by_split = rows.pivot_table(index="split", columns="method", values="value")
    rankings = study_rankings(paired_replicates(ranked(selected, benchmark), "regression"), "regression")
    ranks = {r.metric: r.average_ranks for r in rankings}
    posteriors = read_json(GAP.path / "hierarchical.json")
    decided = max(max(p["worse"], p["equivalent"] + p["better"]) for m in posteriors.values() for p in m.values())
    features = [uci.SHAPES[name][1] for name in gap["dataset"].unique()]
    return [
        f"worse on the gap splits for {int((nll > 0).sum())} of the {len(nll)} methods and datasets",
        f"within {nll[nll <= 0].abs().max():.2f}",
        f"from {energy.min():+.2f} for the deep ensemble to {energy.max():+.2f} for the plain network"
        if (energy.idxmin(), energy.idxmax()) == ("deep_ensemble", "finite")
        else "other methods",
        f"test NLL there is {by_split['finite'].mean():.2f}",
        *(
            f"{name} {by_split.loc[0, method]:.1f} and {by_split.loc[1, method]:.1f}"
            for name, method in (
                ("the deep ensemble's test NLL is", "deep_ensemble"),
                ("the plain network's", "finite"),
            )
        ),
        f"stays at or below {by_split.loc[4:7].max().max():.1f}",
        "The deep ensemble has the best average rank on both metrics"
        if {r.index[0] for r in ranks.values()} == {"deep_ensemble"}
        else "another best",
        "MFVI ties it on NLL" if ranks["nll_original"]["mfvi"] == ranks["nll_original"]["deep_ensemble"] else "no tie",
        "neither Friedman test rejects" if all(r.friedman_p >= SIGNIFICANCE for r in rankings) else "one rejects",
        "the hierarchical test tells no method from the best" if decided < DECIDED else "decides",
        f"on NLL its average rank is {ranks['nll_original']['dun']:.1f} of {len(ranks['nll_original'])}",
        f"{min(features)} to {max(features)} features against 20 random tenths",
        f"P(worse than the ensemble) {posteriors['nll_original']['dun']['worse']:.2f}",
    ]


def test_the_gap_findings_say_what_the_kept_runs_make() -> None:
    missing = GAP.missing_fragments(gap_fragments(GAP.metrics(), KEPT.metrics()))
    assert not missing, f"the gap splits' findings no longer say what the kept runs make: {missing}"


def test_control_gap_runs_with_other_values_fail_the_gap_check() -> None:
    gap = scaled(GAP.metrics(), 0.5, method="finite", dataset="uci_energy", metric="test_.*")
    assert GAP.missing_fragments(gap_fragments(gap, KEPT.metrics()))

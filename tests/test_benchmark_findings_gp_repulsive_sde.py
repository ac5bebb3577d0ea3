"""The numbers of the UCI benchmark's findings on the exact GP, the repulsive ensemble and the unranked SDE-BNN and ODE
net (docs/benchmark/paper/uci_benchmark/findings.yaml), computed again from the kept runs and the experiments kept
beside them (gp_duplicate_rows.csv from scripts/gp_duplicate_rows.py, the repulsive ensemble's budget CSV from
scripts/uci_budget_sensitivity.py and its comparison with the MAP ensemble it replaced, repulsion_effect.csv from
scripts/repulsion_effect.py); the controls: the same check on changed runs or a changed CSV fails.

Not kept, so not checked here: what stopped the SDE-BNN's runs that left no metrics (their job logs: power split 2's
NaN loss at epoch 14, again in the third batch; naval split 0's NaN at epoch 5 and split 14's infinite loss at epoch 2,
in the fourth), and the fourth and fifth batches' invocations as the code-of-the-kept-runs finding tells them."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd

from bnnrepro.pipeline.studies import Run
from bnnrepro.report.benchmark import block_keys, ranked, validation_choice
from bnnrepro.report.ranking import paired_replicates, study_rankings
from tests.findings_helpers import KeptFolder, listed, scaled, span
from tests.test_benchmark_findings import KEPT, SHOWN, STUDY, WORDS, budget_cell, selected_means

DUPLICATES = "gp_duplicate_rows.csv"
REPULSION = "repulsion_effect.csv"


def percent(share: float, digits: int = 0) -> str:
    return f"{100 * share:.{digits}f}%"


def on_the_gp_s_sets(metrics: pd.DataFrame) -> pd.DataFrame:
    """The runs on the sets the GP ran on (the small ones: not the large sets, for its cost there)."""
    return metrics[metrics["dataset"].isin(metrics.loc[metrics["method"] == "gp", "dataset"])]


def gp_fragments(metrics: pd.DataFrame, folder: KeptFolder = KEPT) -> list[str]:
    """'The exact GP.' phrases: its means against the other ranked methods', its cost and learned noise (the kept
    runs on the sets it ran on), and its NLL on the test rows that repeat a training row and on the others (the
    CSV)."""
    metrics = on_the_gp_s_sets(metrics)
    sets = [name.removeprefix("uci_") for name in sorted(metrics["dataset"].unique())]
    means = selected_means(metrics, "uci_benchmark").unstack("method")
    ranked_methods = [m for m in means.columns if m not in STUDY.benchmark["unranked"]]
    nll, rmse = (means.xs(f"test_{m}_original", level="metric")[ranked_methods] for m in ("nll", "rmse"))
    seconds = metrics[metrics["metric"] == "train_seconds"].groupby(["method", "dataset"])["value"].mean()
    per_run = metrics[metrics["metric"] == "train_seconds"].groupby("method")["value"].mean()
    noise = metrics[(metrics["method"] == "gp") & (metrics["metric"] == "noise_std")].groupby("dataset")["value"]
    others = nll.loc["uci_wine"].drop("gp")
    rows = pd.read_csv(folder.path / DUPLICATES, index_col="dataset")
    wine, concrete = rows.loc["uci_wine"], rows.loc["uci_concrete"]
    best_rmse = [name for name in sets if rmse.loc[f"uci_{name}"].idxmin() == "gp"]
    clean = [name for name in sets if rows.loc[f"uci_{name}", "duplicated"] == 0]
    return [
        "has the best NLL on all five sets" if (nll.idxmin(axis=1) == "gp").all() else "not the best NLL everywhere",
        f"the best RMSE on {', '.join(best_rmse[:-1])} and {best_rmse[-1]}",
        f"at {per_run['gp']:.0f} s per run, {per_run['gp'] / per_run['deep_ensemble']:.0f} times the deep ensemble's "
        f"{per_run['deep_ensemble']:.2f} s ({seconds['gp', 'uci_wine']:.0f} s on wine's",
        f"Its wine NLL, {nll.loc['uci_wine', 'gp']:.2f} against the others' {others.min():.2f} to {others.max():.2f}",
        f"{percent(wine['duplicated'])} of wine's test rows repeat a training row's inputs and target"
        if wine["duplicated"] == wine["same_target"]
        else "some with other targets",
        f"below 0.001 of the targets' std on every wine split ({noise.max()['uci_wine']:.4f} at most)"
        if noise.max()["uci_wine"] < 0.001
        else "a noise above 0.001",
        f"NLL is {wine['nll_duplicated']:.2f} on those rows and {wine['nll_other']:.2f} on the others, "
        + ("worse than every other ranked method's mean" if wine["nll_other"] > others.max() else "better than some"),
        f"Concrete has {percent(concrete['duplicated'], 1)} of its test rows' inputs among the training rows "
        f"({percent(concrete['same_target'], 1)} with the same target), where its noise stays "
        f"{noise.min()['uci_concrete']:.2f} to {noise.max()['uci_concrete']:.2f}",
        f"(NLL {concrete['nll_duplicated']:.2f} against {concrete['nll_other']:.2f} on the rest); "
        f"{', '.join(clean[:-1])} and {clean[-1]} have none",
    ]


def repulsion_fragments(folder: KeptFolder = KEPT) -> list[str]:
    """'The repulsive ensemble.' phrases on the repulsion: its kde-fWGD runs against the MAP ensemble's they replaced,
    paired by split, and the posterior's drive against the repulsion (repulsion_effect.csv)."""
    effect = pd.read_csv(folder.path / REPULSION, index_col="dataset")
    sets = [name.removeprefix("uci_") for name in effect.index]

    def separated(metric: str) -> str:
        found = [(name, p) for name, p in zip(sets, effect[f"{metric}_wilcoxon_p"], strict=True) if p < 0.05]
        where = listed(name for name, _ in found)
        return f"on {where} (p = {listed(f'{p:.2g}' for _, p in found)})" if found else "on no set"

    runs = effect["splits"] * len(STUDY.benchmark["tuning"]["repulsive_ensemble"]["method.likelihood_std"])
    fwgd, map_ = ((effect[f"seconds_{rule}"] * runs).sum() / runs.sum() for rule in ("fwgd", "map"))
    return [
        f"kde-fWGD took {fwgd:.1f} s per run on the small sets against the MAP ensemble's {map_:.1f} s, "
        f"{fwgd / map_:.1f} times as long",
        f"on {listed(sets)} (their {effect['splits'].sum()} splits)",
        f"the test RMSE moved by at most {effect['rmse_largest_change'].max():.2%} and the test NLL by at most "
        f"{effect['nll_largest_change'].max():.3f} on any split",
        f"validation chose the same std on {effect['same_choice'].sum()} of {effect['splits'].sum()} splits",
        f"a paired Wilcoxon test separates the two RMSEs {separated('rmse')} and the two NLLs {separated('nll')}",
        f"the posterior's drive in eq. (20) is {span(effect['drive_to_repulsion'], ',.0f')} times the repulsion",
    ]


def repulsive_fragments(metrics: pd.DataFrame, folder: KeptFolder = KEPT) -> list[str]:
    """'The repulsive ensemble.' phrases: its ranks, yacht RMSE and budget experiment, and the repulsion's effect."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))
    rmse, nll = study_rankings(paired_replicates(ranked(selected, STUDY.benchmark), "regression"), "regression")
    yacht = selected_means(metrics, "uci_benchmark").xs(
        ("uci_yacht", "test_rmse_original"), level=("dataset", "metric")
    )
    chosen = choices[(choices["row"] == "repulsive_ensemble") & (choices["column"] == "uci_yacht")]["ours"].iloc[0]
    budget = folder.budget("repulsive_ensemble_yacht")
    longest, most = budget.loc["400 epochs, no holdout"], budget.loc["400 epochs"]
    protocol = budget.loc["benchmark (40 epochs, 1/5 held out)"]
    return [
        f"it ranks {rmse.average_ranks['repulsive_ensemble']:.1f} on RMSE and "
        f"{nll.average_ranks['repulsive_ensemble']:.1f} on NLL, with yacht's RMSE {yacht['repulsive_ensemble']:.2f} "
        f"against the deep ensemble's {yacht['deep_ensemble']:.2f}",
        f"at its chosen std {chosen.split('=')[1].split(' ')[0]}" if chosen.endswith("(20/20)") else "several stds",
        f"gives NLL {budget_cell(protocol, 'nll')} and RMSE {budget_cell(protocol, 'rmse')}; 400 epochs give "
        f"{most['nll']:.2f} and {most['rmse']:.2f}, and 400 epochs on the whole training split {longest['nll']:.2f} "
        f"and {longest['rmse']:.2f}",
        *repulsion_fragments(folder),
    ]


def diverged_runs(metrics: pd.DataFrame) -> pd.DataFrame:
    """The unranked methods' runs whose test RMSE is not finite or whose health check says the training diverged."""
    unranked = metrics[
        metrics["method"].isin(STUDY.benchmark["unranked"]) & (metrics["metric"] == "test_rmse_original")
    ]
    return unranked[~unranked["value"].map(math.isfinite) | unranked["health"].str.startswith("error: diverged")]


def runs_without_metrics(metrics: pd.DataFrame) -> list[Run]:
    """The unranked methods' runs of the study's grid, on the datasets they ran on, that left no metrics (a run whose
    loss turns non-finite stops: `DivergedError`)."""
    unranked = metrics[metrics["method"].isin(STUDY.benchmark["unranked"])]
    ran, kept = set(zip(unranked["method"], unranked["dataset"], strict=True)), set(unranked["run"])
    return [run for run in STUDY.runs("paper") if (run.method, run.dataset) in ran and run.id not in kept]


def large_set_fragments(metrics: pd.DataFrame, means: pd.Series, large: list[str], diverged: pd.DataFrame) -> list[str]:
    """The unranked methods against the ranked ones on each large set they ran on (`means`: the selected means): the
    ODE net's means and the SDE-BNN's median RMSE over its runs that did not diverge, beside the best ranked mean."""
    fragments = []
    for dataset in large:
        table = means.xs(dataset, level="dataset").unstack("metric")
        ranked_rmse = table.drop(list(STUDY.benchmark["unranked"]))["test_rmse_original"]
        ode = table.loc["odenet"]
        sde = metrics[(metrics["method"] == "sdebnn") & (metrics["dataset"] == dataset)]
        kept = sde[sde["metric"] == "test_rmse_original"].drop(diverged.index, errors="ignore")["value"]
        ahead = (
            ode["test_rmse_original"] < ranked_rmse.min()
            and ode["test_nll_original"] < table.drop(list(STUDY.benchmark["unranked"]))["test_nll_original"].min()
        )
        fragments += [
            f"the ODE net's means (RMSE {ode['test_rmse_original']:.3g}, NLL {ode['test_nll_original']:.2f}) are "
            + ("better than every ranked method's" if ahead else "not the best"),
            f"the SDE-BNN's median RMSE over its {len(kept)} other runs is {kept.median():.3g} "
            f"({SHOWN[ranked_rmse.idxmin()]}'s mean, the best ranked, {ranked_rmse.min():.3g})",
        ]
    return fragments


def unranked_fragments(metrics: pd.DataFrame) -> list[str]:
    """'The SDE-BNN and the ODE net.' phrases: their cost on the small and the large sets, their diverged runs (where,
    how far the training loss went) and their columns there."""
    means = selected_means(metrics, "uci_benchmark")
    small = on_the_gp_s_sets(metrics)  # where the SDE-BNN and the ODE net ran on every set
    per_run = small[small["metric"] == "train_seconds"].groupby("method")["value"].mean()
    unranked = metrics[metrics["method"].isin(STUDY.benchmark["unranked"])]
    large = sorted(set(unranked["dataset"]) - set(small["dataset"]))
    on_large = unranked[unranked["dataset"].isin(large) & (unranked["metric"] == "train_seconds")]
    large_per_run = on_large.groupby(["dataset", "method"])["value"].mean()
    grid = {sum(run.method == "sdebnn" and run.dataset == d for run in STUDY.runs("paper")) for d in large}
    diverged, stopped = diverged_runs(metrics), runs_without_metrics(metrics)
    kept_runs = unranked[unranked["method"] == "sdebnn"].groupby("dataset")["run"].nunique()
    where = ", ".join(
        f"{d.removeprefix('uci_')} split {s}" for d, s in zip(diverged["dataset"], diverged["seed"], strict=True)
    )
    losses = diverged["health"].str.extract(r"initialisation to ([0-9.e+]+)")[0].astype(float)

    def column(dataset: str) -> str:
        value = means["sdebnn", dataset, "test_rmse_original"]
        return "infinite" if not math.isfinite(value) else f"{value:.3g}"

    first, *others = dict.fromkeys(diverged["dataset"])  # the datasets with a diverged run, in the prose's order
    return [
        f"Their {small.loc[small['method'] == 'sdebnn', 'run'].nunique()} runs each on the small sets cost "
        f"{per_run['sdebnn']:.1f} s (the SDE-BNN) and {per_run['odenet']:.2f} s (the ODE net) per run, against the "
        f"deep ensemble's {per_run['deep_ensemble']:.2f} s",
        f"their {grid.pop() if len(grid) == 1 else 'varying counts'} each on "
        + ", on ".join(
            f"{d.removeprefix('uci_')} {large_per_run[d, 'sdebnn']:.0f} s and {large_per_run[d, 'odenet']:.1f} s"
            for d in large
        ),
        f"{WORDS[len(diverged)].capitalize()} SDE-BNN runs diverged ({where}:"
        if set(diverged["method"]) == {"sdebnn"}
        else f"{len(diverged)} diverged",
        f"the training loss going to {losses.min():.0e} to {losses.max():.0e}",
        *(
            f"{SHOWN[run.method]}'s {run.dataset.removeprefix('uci_')} split {run.seed} stopped and left no metrics"
            for run in stopped
        ),
        *(
            f"so its {d.removeprefix('uci_')} column averages the other {kept_runs[d]} runs"
            for d in dict.fromkeys(run.dataset for run in stopped)
        ),
        f"its {first.removeprefix('uci_')} column is {column(first)} in RMSE and "
        f"{means['sdebnn', first, 'test_nll_original']:.2f} in NLL, "
        + ", ".join(
            f"its {d.removeprefix('uci_')} column {column(d)} and {means['sdebnn', d, 'test_nll_original']:.2f}"
            for d in others
        ),
        *large_set_fragments(metrics, means, large, diverged),
    ]


def test_the_gp_repulsive_and_unranked_findings_say_what_the_kept_runs_make() -> None:
    metrics = KEPT.metrics()
    missing = KEPT.missing_fragments(
        [*gp_fragments(metrics), *repulsive_fragments(metrics), *unranked_fragments(metrics)]
    )
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


def test_control_a_gp_whose_wine_nll_moved_fails_the_check() -> None:
    metrics = scaled(KEPT.metrics(), 0.5, method="gp", dataset="uci_wine", metric="test_nll_original")
    assert KEPT.missing_fragments(gp_fragments(metrics))


def test_control_a_duplicate_rows_table_that_moved_fails_the_check(tmp_path: Path) -> None:
    """The CSV with the GP's NLL on wine's other rows lowered below the other methods' means."""
    copy = tmp_path / "kept"
    shutil.copytree(KEPT.path, copy, ignore=shutil.ignore_patterns("metrics.csv", "vendor_rerun.csv"))
    table = pd.read_csv(copy / DUPLICATES, index_col="dataset")
    table.loc["uci_wine", "nll_other"] = 0.9
    table.to_csv(copy / DUPLICATES)
    assert KeptFolder(copy).missing_fragments(gp_fragments(KEPT.metrics(), KeptFolder(copy)))


def test_control_a_repulsion_that_moved_the_results_fails_the_check(tmp_path: Path) -> None:
    """The comparison CSV with one set's largest RMSE change ten times larger."""
    copy = tmp_path / "kept"
    shutil.copytree(KEPT.path, copy, ignore=shutil.ignore_patterns("metrics.csv", "vendor_rerun.csv"))
    table = pd.read_csv(copy / REPULSION, index_col="dataset")
    table["rmse_largest_change"] *= 10
    table.to_csv(copy / REPULSION)
    assert KeptFolder(copy).missing_fragments(repulsion_fragments(KeptFolder(copy)))


def test_control_a_second_diverged_run_fails_the_check() -> None:
    """An ODE-net run's test RMSE made infinite: two runs diverged, not one."""
    metrics = KEPT.metrics()
    ode = metrics.index[(metrics["method"] == "odenet") & (metrics["metric"] == "test_rmse_original")][0]
    metrics.loc[ode, "value"] = math.inf
    assert KEPT.missing_fragments(unranked_fragments(metrics))


def test_control_an_ode_net_behind_on_a_large_set_fails_the_check() -> None:
    """The ODE net's kin8nm RMSE raised by a tenth: its mean there moves, and it is no longer ahead."""
    metrics = scaled(KEPT.metrics(), 1.1, method="odenet", dataset="uci_kin8nm", metric="test_rmse_original")
    assert KEPT.missing_fragments(unranked_fragments(metrics))

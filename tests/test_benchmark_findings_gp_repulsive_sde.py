"""The numbers of the UCI benchmark's findings on the exact GP, the repulsive ensemble and the unranked SDE-BNN and ODE
net (docs/benchmark/paper/uci_benchmark/findings.yaml), computed again from the kept runs and the experiments kept
beside them (gp_duplicate_rows.csv from scripts/gp_duplicate_rows.py, the repulsive ensemble's budget CSV from
scripts/uci_budget_sensitivity.py); the controls: the same check on changed runs or a changed CSV fails."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd

from bnnrepro.report.benchmark import block_keys, ranked, validation_choice
from bnnrepro.report.ranking import paired_replicates, study_rankings
from tests.findings_helpers import KeptFolder, scaled
from tests.test_benchmark_findings import KEPT, STUDY, WORDS, budget_cell, selected_means

DUPLICATES = "gp_duplicate_rows.csv"


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


def repulsive_and_unranked_fragments(metrics: pd.DataFrame, folder: KeptFolder = KEPT) -> list[str]:
    """'The repulsive ensemble.' and 'The SDE-BNN and the ODE net.' phrases: the repulsive ensemble's ranks, yacht
    RMSE and budget experiment; the unranked methods' cost and their diverged runs."""
    selected, choices = validation_choice(metrics, STUDY.benchmark["select_by"], block_keys(STUDY.benchmark))
    rmse, nll = study_rankings(paired_replicates(ranked(selected, STUDY.benchmark), "regression"), "regression")
    means = selected_means(metrics, "uci_benchmark")
    yacht = means.xs(("uci_yacht", "test_rmse_original"), level=("dataset", "metric"))
    chosen = choices[(choices["row"] == "repulsive_ensemble") & (choices["column"] == "uci_yacht")]["ours"].iloc[0]
    budget = folder.budget("repulsive_ensemble_yacht")
    small = on_the_gp_s_sets(metrics)  # where the SDE-BNN and the ODE net ran on every set
    per_run = small[small["metric"] == "train_seconds"].groupby("method")["value"].mean()
    kin8nm = metrics[metrics["dataset"] == "uci_kin8nm"]
    kin8nm_per_run = kin8nm[kin8nm["metric"] == "train_seconds"].groupby("method")["value"].mean()
    unranked = metrics[metrics["method"].isin(["sdebnn", "odenet"]) & (metrics["metric"] == "test_rmse_original")]
    diverged = unranked[~unranked["value"].map(math.isfinite) | unranked["health"].str.startswith("error: diverged")]
    where = ", ".join(
        f"{d.removeprefix('uci_')} split {s}" for d, s in zip(diverged["dataset"], diverged["seed"], strict=True)
    )
    sde_wine = means["sdebnn", "uci_wine", "test_nll_original"]
    kin8nm_means = means.xs("uci_kin8nm", level="dataset").unstack("metric")
    ranked_kin8nm = kin8nm_means.drop(list(STUDY.benchmark["unranked"]))
    ode = kin8nm_means.loc["odenet"]
    sde_kept = unranked[(unranked["method"] == "sdebnn") & (unranked["dataset"] == "uci_kin8nm")].drop(
        diverged.index, errors="ignore"
    )
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
        f"Their {small.loc[small['method'] == 'sdebnn', 'run'].nunique()} runs each on the small sets cost "
        f"{per_run['sdebnn']:.1f} s (the SDE-BNN) and {per_run['odenet']:.2f} s (the ODE net) per run, against the "
        f"deep ensemble's {per_run['deep_ensemble']:.2f} s",
        f"their {kin8nm.loc[kin8nm['method'] == 'sdebnn', 'run'].nunique()} each on kin8nm "
        f"{kin8nm_per_run['sdebnn']:.0f} s and {kin8nm_per_run['odenet']:.1f} s",
        f"{WORDS[len(diverged)].capitalize()} SDE-BNN runs diverged ({where}:"
        if set(diverged["method"]) == {"sdebnn"}
        else f"{len(diverged)} diverged",
        f"its wine column is infinite in RMSE and {sde_wine:.2f} in NLL, its kin8nm column infinite and "
        f"{means['sdebnn', 'uci_kin8nm', 'test_nll_original']:.2f}",
        f"the ODE net's means (RMSE {ode['test_rmse_original']:.4f}, NLL {ode['test_nll_original']:.2f}) are "
        + (
            "better than every ranked method's"
            if ode["test_rmse_original"] < ranked_kin8nm["test_rmse_original"].min()
            and ode["test_nll_original"] < ranked_kin8nm["test_nll_original"].min()
            else "not the best"
        ),
        f"the SDE-BNN's median RMSE over its {len(sde_kept)} other runs is {sde_kept['value'].median():.4f}",
    ]


def test_the_gp_repulsive_and_unranked_findings_say_what_the_kept_runs_make() -> None:
    metrics = KEPT.metrics()
    missing = KEPT.missing_fragments([*gp_fragments(metrics), *repulsive_and_unranked_fragments(metrics)])
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


def test_control_a_second_diverged_run_fails_the_check() -> None:
    """An ODE-net run's test RMSE made infinite: two runs diverged, not one."""
    metrics = KEPT.metrics()
    ode = metrics.index[(metrics["method"] == "odenet") & (metrics["metric"] == "test_rmse_original")][0]
    metrics.loc[ode, "value"] = math.inf
    assert KEPT.missing_fragments(repulsive_and_unranked_fragments(metrics))

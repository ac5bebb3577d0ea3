"""The numbers the UDN paper's UCI findings (docs/fidelity/paper/udn_uci/findings.yaml) take from the kept runs,
computed again from them (metrics.csv, batches.csv, provenance.json): a new batch cannot leave the prose behind (the
control: the same check on runs with other values fails). The mean E_q[l] and test RMSE of each set, three sets'
E_q[l] ranges, naval's first five splits and protein's UDN training seconds are `[[value]]` fields (values.yaml),
computed here as when the document is made; the phrases around them are checked here.

Not the kept runs' numbers, so not checked here:
- the paper's and the study's settings: TP(0.95), lambda_0 = 1, the 5% margin, unit noise variance, N(0, 1) weights,
  the Poisson(0.5) prior, width 8, eq. 14, one or two torch threads;
- protein's 45,730 rows (the data set's size);
- the values of batches that were trained again and are not kept: at 2d9e008 naval's E_q[l] 3.89 and 7.79 and test
  RMSE 0.00045 and 0.00053 on splits 3 and 4, its splits 0-2 equal to the rerun's; at 87b76fd kin8nm's mean E_q[l]
  7.11, test RMSE 0.0867 and non-inferiority p = 0.023, split 1's E_q[l] 6.86 and selected epoch 922, 17,830 s of
  training (the 6.4 times is checked against the kept batch's seconds), and f2-f6's values equal to the rerun's;
- the protein run measured before its batch, and the reruns of old commits on one split (they give the kept values,
  which are checked);
- the per-head test RMSEs of energy's split 0 (1.93, 0.85, 0.73, 0.74), which no kept file has.
The untrained E_q[l] (1.94) follows from the settings; it is checked against the project's `untrained_depth`.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from scipy import stats

from bnnrepro.artifacts.claims import repetitions
from bnnrepro.artifacts.claims.udn_uci import INITIAL_RATE, SIMILAR, UCI_DEEP, UCI_SHALLOW, untrained_depth
from bnnrepro.artifacts.verdict_rules import CONTRADICTED, HOLDS, LEVEL, NOT_RESOLVED, Comparison, paired_comparison
from bnnrepro.fidelity.finding_values import finding_value
from bnnrepro.files import read_yaml
from bnnrepro.inference.depth_posteriors import TruncatedPoisson
from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, cores, listed, number_word, scaled, span

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/udn_uci")
DEAD = 0.999
"""A network whose last training RMSE (standardised targets) is above this is the mean predictor's 1: constant."""
NAVAL_DEEP = 6.0
"""Naval's splits with an E_q[l] above this are the deep ones the finding counts apart."""
OLD_TRAIN_SECONDS = 17_830
"""The training seconds the replaced batch at 87b76fd recorded (not kept)."""
VERDICTS = {
    "no worse on": (HOLDS, ("wine", "power", "protein")),
    "not resolved on": (NOT_RESOLVED, ("boston", "concrete", "kin8nm")),
    "significantly worse on": (CONTRADICTED, ("energy", "yacht", "naval")),
}
"""The third finding's words for each verdict of 'similarly to or better', and its sets in the order it lists them."""


def held(condition: bool, fragment: str) -> str:
    """The fragment where the runs bear out what it says, else a phrase the findings do not hold."""
    return fragment if condition else f"[the runs no longer give: {fragment}]"


def per_split(metrics: pd.DataFrame, metric: str, method: str, dataset: str) -> pd.Series:
    """One metric of one network on one set, by split."""
    rows = metrics[(metrics["metric"] == metric) & (metrics["method"] == method)]
    return rows[rows["dataset"] == f"uci_{dataset}"].set_index("split")["value"].sort_index()


def depth_fragments(metrics: pd.DataFrame) -> list[str]:
    """The first two findings: E_q[l] against two and the untrained posterior, and the deeper sets (Welch's test)."""
    depth = {d: per_split(metrics, "expected_depth", "udn", d) for d in UCI_SHALLOW + UCI_DEEP}
    mean = {d: f"{values.mean():.2f}" for d, values in depth.items()}
    start = untrained_depth()

    def shallow(name: str) -> str:
        values = depth[name]
        below = stats.ttest_1samp(values, 2, alternative="less").pvalue < LEVEL
        moved = stats.ttest_1samp(values, start).pvalue < LEVEL
        return "below" if below and moved and values.mean() < start else "start" if not (below or moved) else "spread"

    deepest = max(UCI_SHALLOW, key=lambda d: depth[d].mean())
    deeper = {d: stats.ttest_ind(depth[d], depth[deepest], equal_var=False, alternative="greater").pvalue < LEVEL
              for d in UCI_DEEP}  # fmt: skip
    concrete, power, kin8nm, naval, protein, wine = (depth[d] for d in ("concrete", "power", "kin8nm", "naval",
                                                                        "protein", "wine"))  # fmt: skip
    high, low = power[power > 2], power[power <= 2]
    wine_high, wine_low = wine[wine > 2], wine[wine <= 2]
    one, deep = naval[naval < 1.5], naval[naval > NAVAL_DEEP]  # one layer kept; the deep splits
    middle = naval.drop(one.index.union(deep.index))
    rmse = per_split(metrics, "test_rmse_original", "udn", "naval")
    others = rmse.drop(one.index)
    return [
        f"An untrained UDN already has E_q[l] = {start:.2f} (TP(0.95) at lambda_0 = {INITIAL_RATE:g})",
        held(shallow("yacht") == shallow("boston") == "below", f"Yacht ({mean['yacht']}) and boston "
             f"({mean['boston']}) are significantly below two and below the start"),
        held(shallow("energy") == "start", f"energy ({mean['energy']}) stays at the start"),
        held(shallow("concrete") == "spread", f"concrete ({mean['concrete']} over {len(concrete)} splits, "
             f"{span(concrete)}, {number_word(int((concrete > 2).sum()))} splits above 2)"),
        held(shallow("power") == "spread", f"power ({mean['power']} over its {len(power)} splits: {span(high)} on "
             f"{number_word(len(high))}, {span(low)} on {number_word(len(low))}) are too spread to tell"),
        held(deeper["kin8nm"] and kin8nm.mean() > 3 * depth[deepest].mean(), f"it holds on kin8nm (E_q[l] "
             f"{mean['kin8nm']} over {len(kin8nm)} splits, {span(kin8nm)} on every split, more than three times "
             "the small sets')"),
        held(deeper["naval"], f"on naval ({mean['naval']} over its {len(naval)} splits)"),
        held(deeper["protein"] and max(depth, key=lambda d: depth[d].mean()) == "protein", f"on protein "
             f"({mean['protein']} over its {len(protein)} splits, {span(protein)} on every split, the deepest of "
             f"the {number_word(len(depth))} sets)"),
        held(not deeper["wine"], f"not on wine against {deepest}'s {mean[deepest]} (Welch's test)"),
        f"Wine is deeper by its mean ({mean['wine']}) only because of {number_word(len(wine_high))} splits: "
        f"{listed(f'{v:.2f}' for v in wine_high)} on splits {listed(wine_high.index)}, {span(wine_low)} on the other "
        f"{number_word(len(wine_low))}",
        held(max(depth, key=lambda d: depth[d].std()) == "naval", f"Naval varies most of all: {span(deep)} on "
             f"{number_word(len(deep))} splits, {span(middle)} on {number_word(len(middle))}, and {span(one)} on "
             f"splits {listed(one.index)}"),
        f"({listed(f'{rmse[s]:.1g}' for s in one.index)} against {others.min():.1g}-{others.max():.1g}: naval's",
        f"its split 0 gives E_q[l] {protein[0]:.2f}, as the one run",
        f"on naval's splits 3 and 4 E_q[l] moved from 3.89 to {naval[3]:.2f} and from 7.79 to {naval[4]:.2f} (test "
        f"RMSE 0.00045 to {rmse[3]:.2g} and 0.00053 to {rmse[4]:.2g})",
        f"on split 3, gives {naval[3]:.2f} too",
        f"the UDN on kin8nm moved on all {number_word(len(kin8nm))} splits, mean E_q[l] 7.11 to",
        f"(the split that moved most: E_q[l] 6.86 to {kin8nm[1]:.2f}, selected epoch 922 to "
        f"{per_split(metrics, 'selected_epoch', 'udn', 'kin8nm')[1]:.0f})",
    ]  # fmt: skip


def batch_fragments(metrics: pd.DataFrame) -> list[str]:
    """The batches the kept runs came in (batches.csv, in the order of provenance.json's): commits, runs, seconds."""
    provenance = KEPT.provenance()
    runs = metrics.drop_duplicates("run").assign(batch=lambda frame: frame["run"].map(KEPT.batches()))
    runs["set"] = runs["dataset"].str.removeprefix("uci_")

    def batch(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
        """The kept runs of the one batch that made `rows`, and its provenance record."""
        (number,) = rows["batch"].unique()
        return runs[runs["batch"] == number], provenance["batches"][number]

    def wall(record: dict) -> str:
        return f"{record['wall_seconds']:.0f} s wall on {cores(record['machine'])} cores"

    finite = runs[runs["method"] != "udn"]
    naval, naval_record = batch(finite[finite["set"] == "naval"])
    naval_udn = naval[(naval["method"] == "udn") & (naval["set"] == "naval")]["split"]
    naval_finite = set(
        naval[(naval["method"] != "udn") & (naval["set"] == "naval")].groupby("method")["split"].nunique()
    )
    protein = runs[runs["set"] == "protein"]
    _, protein_record = batch(protein)
    seconds = metrics[(metrics["metric"] == "train_seconds") & (metrics["dataset"] == "uci_protein")]
    finite_seconds = seconds[seconds["method"] != "udn"].groupby("method")["value"].mean()
    first, first_record = batch(runs[(runs["method"] == "udn") & (runs["set"] == "naval") & (runs["split"] == 0)])
    small, small_record = batch(runs[runs["set"] == "kin8nm"])
    return [
        held(sorted(naval["set"].unique()) == ["naval", "power"] and len(naval_finite) == 1, f"Its splits "
             f"{naval_udn.min()}-{naval_udn.max()} for the UDN and all {number_word(naval_finite.pop())} for f2-f6 "
             f"came with power's in a batch at {naval_record['commit']} ({naval_record['runs']} runs, "
             f"{naval_record['wall_seconds']:.0f} s wall beside"),
        f"Protein's {len(protein)} runs (45,730 rows; f2-f6 and the UDN on {protein['split'].nunique()} splits) came "
        f"in a batch at {protein_record['commit']}, {wall(protein_record)} with nothing beside it (a UDN run",
        f"s of training on average, f2-f6 {finite_seconds.min():.0f} to {finite_seconds.max():.0f} s)",
        held(provenance["grid"].startswith("the whole grid") and provenance["runs"] == len(runs),
             f"the grid's {len(runs)} runs are all kept"),
        f"The UDN's batch on {listed(sorted(first['set'].unique()))} ({first_record['runs']} runs, recorded at "
        f"2d9e008) was trained again at {first_record['commit']}, the current code ({wall(first_record)})",
        f"The other {small_record['runs']} runs (f2-f6 and the UDN on the {number_word(small['set'].nunique())} "
        f"small and mid-sized sets, recorded at 87b76fd) were trained again at {small_record['commit']}, the current "
        f"code ({wall(small_record)})",
        f"{OLD_TRAIN_SECONDS / small_record['train_seconds']:.1f} times the training time ({OLD_TRAIN_SECONDS:,} s "
        f"against {small_record['train_seconds']:,.0f} s)",
    ]  # fmt: skip


def comparison_fragments(metrics: pd.DataFrame) -> list[str]:
    """The third finding: the UDN against the best finite network (the claim's non-inferiority test), one look into
    energy's split 0, and the finite networks that died (constant output)."""
    specs = read_yaml(KEPT.path / "values.yaml")
    rmse = metrics[metrics["metric"] == "test_rmse_original"]
    found: dict[str, tuple[str, Comparison]] = {}
    for dataset, group in rmse.groupby("dataset"):
        values = repetitions(group, "split")
        best = values.drop(columns="udn").mean().idxmin()
        margin = SIMILAR * values[best].mean()
        found[dataset.removeprefix("uci_")] = best, paired_comparison(values["udn"], values[best] + margin, "less")

    def pair(name: str) -> str:
        """'name (udn vs best best's)' as values.yaml formats the network the prose names."""
        best = found[name][0]
        (named,) = (key for key in specs if key.startswith("rmse_f") and key.endswith(f"_{name}"))
        mean = finding_value(rmse, {**specs[named], "where": {"method": best, "dataset": f"uci_{name}"}})
        return f"{name} ({finding_value(rmse, specs[f'rmse_udn_{name}'])} vs {best} {mean}"

    kin8nm = found["kin8nm"][1]
    after = {
        "protein": f", p = {found['protein'][1].p_value:.0e})".replace("e-0", "e-"),
        "kin8nm": held(kin8nm.mean_difference < 0, f", inside the {SIMILAR:.0%} margin on average but not "
                       f"significantly: p = {kin8nm.p_value:.2f};"),
        "naval": f", p = {found['naval'][1].p_other:.1g} the other way)",
    }  # fmt: skip
    every = sorted(name for _, names in VERDICTS.values() for name in names) == sorted(found)
    return [
        *(held(every and all(found[n][1].status == status for n in names), f"{words} {names[0]} (")
          for words, (status, names) in VERDICTS.items()),
        *(pair(name) + after.get(name, ")") for name in found),
        *energy_fragments(metrics),
        *dead_fragments(metrics),
    ]  # fmt: skip


def energy_fragments(metrics: pd.DataFrame) -> list[str]:
    """Energy's split 0 at the last epoch: q(l) from its rate (the project's TP(0.95)) and its test RMSE."""
    run = metrics[(metrics["method"] == "udn") & (metrics["dataset"] == "uci_energy") & (metrics["split"] == 0)]
    last = run.set_index("metric")["value"]
    with torch.no_grad():
        q = TruncatedPoisson(float(last["last_rate"])).log_probs(int(last["last_max_depth"])).exp().tolist()
    mass = [f"{p:.2f} on {'depth ' if depth == 1 else ''}{depth}" for depth, p in enumerate(q, start=1)]
    return [
        f"the fitted q(l) puts {listed(mass)}, and",
        f"the q-weighted prediction (eq. 14) is {last['last_test_rmse_original']:.2f}",
    ]


def dead_fragments(metrics: pd.DataFrame) -> list[str]:
    """The finite networks whose output is constant at the end of training (`DEAD`), by network and set."""
    final = metrics[metrics["metric"] == "last_train_rmse"]
    dead = final[final["value"] > DEAD]
    counts = dead.groupby(["method", "dataset"]).size().rename(lambda d: d.removeprefix("uci_"), level="dataset")
    splits = metrics["split"].nunique()

    def extremes(method: str) -> str:
        """'fewest (sets) to most (sets)' of the sets but naval."""
        count = counts[method].drop("naval", errors="ignore")
        return " to ".join(f"{n} ({listed(count.index[count == n])})" for n in sorted({count.min(), count.max()}))

    naval = counts.xs("naval", level="dataset")
    test = metrics[(metrics["metric"] == "test_rmse_original") & (metrics["dataset"] == "uci_naval")]
    died = test["run"].isin(dead["run"])
    finite = metrics[metrics["method"] != "udn"].groupby(["method", "dataset"])["split"].nunique()
    return [
        held(bool((metrics["seed"] == metrics["split"]).all()), "(seed = split,"),
        held(finite.nunique() == 1, f"the finite columns average over {number_word(int(finite.max()))}:"),
        f"f6 on {extremes('f6')} of the {splits} splits and f5 on {extremes('f5')}, and on naval "
        f"{listed(naval.index)} on {listed(naval)} of its {splits} (test RMSE {test[died]['value'].mean():.2g} "
        f"against {test[~died]['value'].min():.1g}-{test[~died]['value'].max():.1g})",
        held("udn" not in dead["method"].values, "the UDN never did"),
        held("uci_protein" not in dead["dataset"].values, "on protein none did"),
    ]


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The findings' phrases that carry a number of the kept runs, as the runs make them."""
    return depth_fragments(metrics) + batch_fragments(metrics) + comparison_fragments(metrics)


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize(
    ("method", "dataset", "metric", "factor"),
    [
        ("udn", "uci_naval", "expected_depth", 1.1),
        ("f5", "uci_boston", "last_train_rmse", 0.5),
        ("udn", "uci_protein", "test_rmse_original", 1.02),
        ("f6", "uci_protein", "train_seconds", 1.2),
    ],
)
def test_control_runs_with_other_values_fail_the_check(method: str, dataset: str, metric: str, factor: float) -> None:
    metrics = scaled(KEPT.metrics(), factor, method=method, dataset=dataset, metric=metric)
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

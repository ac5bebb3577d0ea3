"""The numbers the UDN spiral findings (docs/fidelity/paper/udn_spirals/findings.yaml) take from the kept runs
(metrics.csv, batches.csv, provenance.json), computed again from them: a new batch cannot leave the prose behind (the
control: the same check on runs whose values changed fails). The findings are read with their `[[value NAME]]` fields
filled in from values.yaml, which generates the plain means and the depth-rate grid's paired changes.

Not the runs' numbers, left as written: the paper's (Table 1's 91.7 +- 1.1, 90.5 +- 0.7, 87.4, 89.3, 84.8 +- 3.6 and
the 0.49 and margin 0.83 derived from them); settings (lr 0.005, a tenth of it for the depth posterior, 32 units); the
superseded batches, no longer kept (their commits `RECORDED` and fbb3acc, its 18 min wall, the old accuracies and
epochs 93.6%, 3760, 77.4%, 70.4%, 62.2%, 73.6%, how many values moved and by how much: git history); the retraining
by hand at omega=20 at four commits and the review's 94.2 / 95.9 / 94.4 (no kept outputs); the prose's windows
(omegas 20-26, 20-24, <= 1). A run collapses (stays near chance) below `NEAR_CHANCE` % test accuracy. E_q[l] is the
last epoch's in Fig. 3a's finding (what Fig. 3b draws), the selected epoch's in Fig. 3b's (what its claim tests).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bnnrepro.artifacts.claims import repetitions
from bnnrepro.artifacts.verdict_rules import HOLDS, LEVEL, NOT_RESOLVED, all_of, paired_comparison
from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, cores, listed, number_word, scaled, span

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/udn_spirals")
NEAR_CHANCE = 60.0
LABELS = {"udn": "UDN", "dun_10": "DUN-10", "finite_3": "Omega_3", "finite_4": "Omega_4", "finite_5": "Omega_5"}
OTHERS = [m for m in LABELS if m != "udn"]
FINITE = [m for m in OTHERS if m.startswith("finite_")]
PUBLISHED = {"finite_3": "87.4", "finite_4": "89.3", "finite_5": "84.8 +- 3.6"}
COLLAPSES = {  # Fig. 3a's phrases on the UDN's runs that collapse at one omega (`collapse_phrase`)
    28: "At omega=28 {n} of {total} did: E_q[l] {depths}, {accuracy}%, while the other {rest} found about "
    "{rest_depth} and {rest_accuracy}%",
    30: "at omega=30 {n} of {total} again (E_q[l] {depth_span}, {accuracy}%)",
}
RECORDED = {4: "0fdf884", 1: "eed2222", 2: "fe12713", 3: "6db7e7b"}
"""The commit each retrained batch (its number in batches.csv) was first recorded at: git history, not the runs."""


def points(difference: float) -> str:
    """'a tenth of a point', '6.4 points'."""
    return "a tenth of a point" if round(difference, 1) == 0.1 else f"{difference:.1f} points"


def seeds_phrase(seeds: Iterable[int]) -> str:
    """'seed 1', 'seeds 3 and 4'."""
    seeds = list(seeds)
    return f"seed{'s' if len(seeds) > 1 else ''} {listed(seeds)}"


def values_of(metrics: pd.DataFrame, metric: str, method: str, omega: int) -> pd.Series:
    """One metric's values of a method's runs at one omega and lr 0.005, indexed by seed."""
    rows = metrics[(metrics["metric"] == metric) & (metrics["method"] == method) & (metrics["omega"] == omega)]
    return rows[np.isclose(rows["lr"], 0.005)].set_index("seed")["value"].sort_index()


def seed_accuracy(paper: pd.DataFrame) -> pd.DataFrame:
    """Test accuracy (%) as [seed x (method, omega)] at lr 0.005, as the claims pair it."""
    rows = paper[(paper["metric"] == "test_accuracy") & np.isclose(paper["lr"], 0.005)]
    return repetitions(rows, "seed", ("method", "omega")) * 100


def collapsed(accuracy: pd.Series) -> list[int]:
    """The seeds whose accuracy (%) stays near chance."""
    return list(accuracy.index[accuracy < NEAR_CHANCE])


def fig3a_fragments(paper: pd.DataFrame) -> list[str]:
    """Fig. 3a: the UDN against each model at each omega, paired by seed (as its claim), and its collapsed runs."""
    accuracy = seed_accuracy(paper)
    udn, means, omegas = accuracy["udn"], accuracy.mean(), sorted(accuracy["udn"].columns)
    compared = {(o, m): paired_comparison(udn[o], accuracy[m][o], "greater") for o in omegas for m in OTHERS}
    holm = all_of([c.decision for c in compared.values()])
    ahead = sorted({o for (o, _), c in compared.items() if c.status == HOLDS})
    best = {o: max(OTHERS, key=lambda m, o=o: means[m, o]) for o in omegas}
    lead = {o: means["udn", o] - means[best[o], o] for o in omegas}
    top = max(ahead, key=lead.__getitem__)
    behind = [o for o in omegas if o > ahead[-1] and lead[o] < 0]
    leads = "leads" if all(lead[o] > 0 for o in omegas if ahead[0] <= o <= ahead[-1]) else "does not lead"
    behind_text = " and ".join(
        f"{'omega=' if i == 0 else ''}{o} ({means['udn', o]:.1f} vs "
        f"{LABELS[best[o]] + ' ' if i == 0 or best[o] != best[behind[i - 1]] else ''}{means[best[o], o]:.1f})"
        for i, o in enumerate(behind)
    )
    significance = "without" if all(compared[o, best[o]].p_other >= LEVEL for o in behind) else "with"
    against = [(o, m, c) for (o, m), c in compared.items() if c.p_other < LEVEL]
    against_text = listed(
        f"{LABELS[m]} at omega={o} ({means['udn', o]:.1f} against {means[m, o]:.1f}, "
        f"{points(means[m, o] - means['udn', o])} with almost no spread, p = {c.p_other:.3g})"
        for o, m, c in against
    )
    return [
        f"over the paper's {len(omegas)} omegas and {number_word(len(accuracy))} seeds, paired by seed",
        f"significantly ahead of a model in {sum(c.status == HOLDS for c in compared.values())} of {len(compared)} "
        f"comparisons (omegas {ahead[0]}-{ahead[-1]}, where it leads by up to {lead[top]:.0f} points: "
        f"{means['udn', top]:.1f}% against {LABELS[best[top]]}'s {means[best[top], top]:.1f}%, the best of the "
        f"others, at omega={top})",
        f"Uncorrected, {number_word(len(against))} comparison went the other way, {against_text}; after Holm's "
        f"correction over the {len(compared)} {'some do' if holm.contradicting else 'none does'}",
        f"Where every model is near 100% (omega <= {omegas[omegas.index(ahead[0]) - 1]}) nothing separates them",
        f"It falls behind at {behind_text} {significance} significance",
        f"It {leads} at omegas {ahead[0]}-{ahead[-1]} and trails at {span(behind, '.0f', '-')}",
        f"its collapsed runs at omegas {span((o for o in omegas if collapsed(udn[o])), '.0f', '-')} (Fig. 3a)",
        *(collapse_phrase(paper, omega, template) for omega, template in COLLAPSES.items()),
    ]


def collapse_phrase(paper: pd.DataFrame, omega: int, template: str) -> str:
    """The UDN's runs at one omega that stay near chance (E_q[l] at the last epoch, accuracy in %), and the rest."""
    accuracy = values_of(paper, "test_accuracy", "udn", omega) * 100
    depth = values_of(paper, "last_expected_depth", "udn", omega)
    low = accuracy < NEAR_CHANCE
    return template.format(
        n=number_word(low.sum()), total=number_word(len(low)), rest=number_word((~low).sum()),
        depths=listed(f"{d:.1f}" for d in depth[low]), depth_span=span(depth[low], ".1f", "-"),
        accuracy=span(accuracy[low], ".0f", "-"), rest_depth=f"{depth[~low].mean():.0f}",
        rest_accuracy=span(accuracy[~low], ".0f", "-"),
    )  # fmt: skip


def depth_rate_fragments(paper: pd.DataFrame, grid: pd.DataFrame) -> list[str]:
    """Grid sensitivity_depth_lr (`grid`): the UDN with the depth posterior at the weights' rate, and which seeds
    collapse under each rate (the main grid's tenth and the grid's)."""
    runs = grid.drop_duplicates("run")
    omegas, seeds = sorted(runs["omega"].unique()), sorted(runs["seed"].unique())
    rate, parts = "the weights'" if set(runs["depth_lr_ratio"]) == {1.0} else "another", []
    for omega in reversed(omegas):
        both = [values_of(rows, "test_accuracy", "udn", omega) * 100 for rows in (paper, grid)]
        low = [collapsed(accuracy) for accuracy in both]
        agree = "both" if low[0] == low[1] else "one of the"
        shown = span(pd.concat([accuracy[low[0]] for accuracy in both]), ".0f", "-")
        parts.append(f"omega={omega}: {seeds_phrase(low[0])}" + (f" under {agree}" if parts else f" at {shown}% "
                                                                   f"under {agree} rates"))  # fmt: skip
    return [
        f"reran the UDN at omegas {listed(omegas)}, seeds {seeds[0]}-{seeds[-1]}, with the depth posterior at "
        f"{rate} rate ({len(runs)} runs",
        f"the same seeds collapse ({'; '.join(parts)})",
    ]


def fig3b_fragments(paper: pd.DataFrame) -> list[str]:
    """Fig. 3b: the rank correlation of the UDN's E_q[l] (selected epoch) with omega, as its claim, and the means."""
    depth = paper[(paper["metric"] == "expected_depth") & (paper["method"] == "udn") & np.isclose(paper["lr"], 0.005)]
    trend = stats.spearmanr(depth["omega"], depth["value"], alternative="greater")
    means = depth.groupby("omega")["value"].mean()
    peak = means.loc[20:24]
    dips = [o for o in means.index if o > 24 and means[o] < peak.min()]
    return [
        f"Spearman {trend.statistic:+.2f} over the {len(depth)} runs of {len(means)} omegas, one-sided p = "
        + re.sub(r"e-0*", "e-", f"{trend.pvalue:.0e}"),
        f"E_q[l] rises from {span(means.loc[:1], '.1f', '-')} at omega <= 1 to {span(peak, '.1f', '-')} at "
        f"omega=20-24, over {number_word(depth['seed'].nunique())} seeds; the dips at {listed(dips)}",
    ]


def table1_fragments(paper: pd.DataFrame) -> list[str]:
    """Table 1 and its claims: each model's accuracy averaged over the omegas per seed (as the table and the claims),
    DUN-10's collapsed runs at omegas 20-26, and the paired comparisons of the averages."""
    accuracy = seed_accuracy(paper)
    average = accuracy.T.groupby(level="method").mean().T
    means, dun, omegas = average.mean(), average["dun_10"], accuracy["udn"].columns
    window = accuracy["dun_10"].loc[:, 20:26]
    near = {o: collapsed(window[o]) for o in window.columns if collapsed(window[o])}
    runs = window.stack()
    low_seed = dun.idxmin()
    udn_vs = {m: paired_comparison(average["udn"], average[m], "greater") for m in OTHERS}
    above = [m for m, c in udn_vs.items() if c.status == HOLDS]
    undecided = sorted((m for m, c in udn_vs.items() if c.status == NOT_RESOLVED), key=means.__getitem__)
    dun_vs = {m: paired_comparison(dun, average[m], "greater") for m in FINITE}
    best = max(FINITE, key=means.__getitem__)
    ahead, versus = int((average[best] > dun).sum()), dun_vs[best]
    level = [LABELS[m] for m in FINITE if m != best and dun_vs[m].status == NOT_RESOLVED]
    return [
        f"all {len(omegas)} omegas, {number_word(len(average))} seeds, for Table 1's "
        f"{number_word(average.shape[1])} models",
        f"The UDN: {means['udn']:.1f} +- {average['udn'].std():.1f} against 91.7 +- 1.1",
        f"DUN-10: {means['dun_10']:.1f} +- {dun.std():.1f} against 90.5 +- 0.7",
        f"{number_word(sum(map(len, near.values())))} of its runs at omegas 20-26 stay near chance, "
        f"{span(runs[runs < NEAR_CHANCE], '.0f', '-')}% "
        f"({', '.join(f'{seeds_phrase(s)} at {o}' for o, s in near.items())}), and put seed {low_seed} about "
        f"{number_word(round(dun.drop(low_seed).mean() - dun[low_seed]))} points below the other seeds",
        ", ".join(f"{LABELS[m]} {means[m]:.1f} ({PUBLISHED[m]})" for m in FINITE),
        f"significantly above {listed(LABELS[m] for m in above)}'s only ({means['udn']:.1f} against "
        f"{listed(f'{means[m]:.1f}' for m in above)}); against "
        f"{listed(f'{LABELS[m]} ({means[m]:.1f})' for m in undecided)} the seeds disagree",
        f"{LABELS[best]} is ahead of DUN-10 on {'all ' if ahead == len(dun) else ''}{number_word(ahead)} seeds "
        f"({means[best]:.1f} against {means['dun_10']:.1f}, paired one-sided p = {versus.p_value:.2f} for DUN-10 "
        f"ahead, so {versus.p_other:.2f} the other way, {'short of' if versus.p_other >= LEVEL else 'past'} the "
        f"level), {listed(level)} are level with it",
    ]


def batch_fragments(metrics: pd.DataFrame) -> list[str]:
    """The batches (batches.csv; provenance.json lists them in the same order): their grids, runs, commits, wall
    times and counts of values, and the retrained runs the code paragraphs name."""
    provenance = KEPT.provenance()["batches"]
    batch = KEPT.batches()
    runs = metrics.drop_duplicates("run").assign(batch=lambda frame: frame["run"].map(batch))
    values = metrics.loc[metrics["metric"] != "train_seconds", "run"].map(batch).value_counts()
    paper, every_seed = metrics[metrics["depth_lr_ratio"].isna()], runs["seed"].unique()

    def grid(number: int) -> tuple[list[int], list[int]]:
        slow = runs[(runs["batch"] == number) & np.isclose(runs["lr"], 0.005)]
        return sorted(slow["seed"].unique()), sorted(slow["omega"].unique())

    def accuracy(method: str, omega: int, seed: int) -> str:
        return f"{values_of(paper, 'test_accuracy', method, omega)[seed] * 100:.1f}%"

    fragments = []
    for number, recorded in RECORDED.items():
        record, own, (seeds, omegas) = provenance[number], runs[runs["batch"] == number], grid(number)
        count = number_word(len(omegas))
        described = (f"seeds {seeds[0]}-{seeds[-1]} at {count} omegas" if len(seeds) < len(every_seed)
                     else f"the {count} omegas {listed(omegas)}")  # fmt: skip
        joint = " and the lr=0.01 runs, " if (~np.isclose(own["lr"], 0.005)).any() else " ("
        depth_runs = own["method"].isin(["udn", "dun_10"]).sum()
        fragments += [f"{described}{joint}{len(own)} runs, recorded at {recorded}) was trained again at "
                      f"{record['commit']}",
                      f"({record['wall_seconds']:.0f} s wall on {cores(record['machine'])} cores",
                      f"all {values[number]:,} values but the timings are equal" if number in (3, 4) else
                      f"of the {depth_runs} DUN-10 and UDN runs"]  # fmt: skip
    (seeds_4, omegas_4), (seeds_1, _), (seeds_2, omegas_2), (_, omegas_3) = (grid(n) for n in RECORDED)
    row = ("udn", "dun_10", "finite_5")
    epochs = ", ".join(f"{values_of(paper, 'selected_epoch', m, 20)[0]:.0f}" for m in row)
    return fragments + [
        f"(batches: seeds {seeds_4[0]}-{seeds_4[-1]} at {number_word(len(omegas_4))} omegas, "
        f"{seeds_1[0]}-{seeds_1[-1]} there, the {number_word(len(omegas_2))} omegas "
        f"{', '.join(map(str, omegas_2))}, then {', '.join(map(str, omegas_3))}, each with all "
        f"{number_word(len(seeds_2))})",
        f"trained again at {provenance[0]['commit']}, the current code, {provenance[0]['wall_seconds']:.0f} s wall: "
        f"all {values[0]:,} values equal",
        ", ".join(f"{LABELS[m]} {values_of(paper, 'test_accuracy', m, 20)[0] * 100:.2f}%" for m in row)
        + f" (selected epochs {epochs}; UDN E_q[l] {values_of(paper, 'expected_depth', 'udn', 20)[0]:.2f})",
        f"to {accuracy('dun_10', 20, 4)} (selected epoch 3760 to "
        f"{values_of(paper, 'selected_epoch', 'dun_10', 20)[4]:.0f}) and from 77.4% to {accuracy('dun_10', 24, 4)}",
        f"(the UDN at omega=26: 70.4% to {values_of(paper, 'test_accuracy', 'udn', 26).mean() * 100:.1f}% on average)",
        f"(62.2% to {accuracy('dun_10', 26, 1)}) and 17.0 on seed 4 (73.6% to {accuracy('dun_10', 26, 4)})",
    ]


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The findings' phrases that carry a number of the runs, as the runs make them (the paper's grid without the
    runs of grid sensitivity_depth_lr, as the artifacts and claims read it, where a phrase is about the paper's)."""
    paper, grid = metrics[metrics["depth_lr_ratio"].isna()], metrics[metrics["depth_lr_ratio"].notna()]
    sections = [fig3a_fragments(paper), depth_rate_fragments(paper, grid), fig3b_fragments(paper)]
    return [f for section in [*sections, table1_fragments(paper), batch_fragments(metrics)] for f in section]


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize(
    ("method", "metric", "factor"),
    [("udn", "test_accuracy", 0.999), ("dun_10", "test_accuracy", 0.99), ("udn", "last_expected_depth", 1.1)],
)
def test_control_runs_with_other_values_fail_the_check(method: str, metric: str, factor: float) -> None:
    metrics = scaled(KEPT.metrics(), factor, method=method, metric=metric)
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

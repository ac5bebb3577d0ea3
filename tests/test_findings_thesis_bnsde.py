"""The numbers thesis_bnsde's findings (docs/fidelity/paper/thesis_bnsde/findings.yaml) take from the kept runs,
computed again from them (the controls: runs or claim evidence with other values fail the check). Plain means and
paired changes are generated instead (values.yaml); the figures' per-seed numbers are claims.csv's (the forecasts are
not kept). Not the runs' numbers, left as written: the thesis' published values and errors (catalog:
/work/shared/spec/thesis_ch5_6.md); settings of the paper or the study (seeds 0-9 and the figures' seed 0, epochs,
windows t >= 10 and t < 4.8, 24, 200 and 999 steps, the curriculum's stages, lr 1e-5 and what follows from it: lr/2 per
step, under 0.1 in 15,000 steps; the likelihood variance 1e-6 and the relative 1e-8, the parameter noise, the 90% of
'nearly always', the cell rule's 21% margin and 1e-3 tolerance); and numbers of runs that are not committed: the
autonomous drift before 419ddf0 (9.3, 'a third'), the diagnosis without zeroed gradients ((v) 0.4 and 1.7, the black
box 19 and 30), the rerun of seeds 0-9 'to the last digit', the stale CMU batch 60838de (7e-7, 5.2e5, 24.7 there, 7.2
and 7.9e5), the SGLD diagnosis (gradients 1e9, weights within 0.05), the forecasts' diagnosis (rho 1.48 and 2.96,
|x| <= 16, |y| <= 20, z around 25, overflow between steps 315 and 380) and the weight KL of 'about 1e2'.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

import pandas as pd
import pytest
from scipy import stats

from bnnrepro.artifacts.render import standard_error
from bnnrepro.artifacts.thesis_bnsde import LORENZ_MODELS, LV_MODELS
from bnnrepro.artifacts.thesis_bnsde_tables import BLACK_BOX, CMU_METHODS, CMU_ROWS, HYBRIDS, LORENZ_METHODS
from bnnrepro.artifacts.verdict_rules import CONTRADICTED, paired_comparison, repetitions_to_decide
from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, cores, listed, number_word, scaled, span

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/thesis_bnsde")
FRACTIONS = ((0.1, "a tenth"), (0.2, "a fifth"), (1 / 3, "a third"), (0.5, "half"))
ONE_MODEL = ("dbnn_vi@cmu", "e_bayes@cmu", "e_pac_bayes@cmu")
"""Table 6.2's rows that are one model (D-BNN (VI), (i), (ii))."""
CURRICULUM = ("e_bayes_hybrid@cmu300", "e_pac_bayes_hybrid@cmu300")
"""Grid sensitivity_curriculum's hybrids (whole walks at the end); without '300', the thesis' curriculum."""


def by_seed(metrics: pd.DataFrame, method: str, metric: str = "test_mse") -> pd.Series:
    """A method's metric over the seeds."""
    rows = metrics[(metrics["method"] == method) & (metrics["metric"] == metric)]
    return rows.set_index("seed")["value"].sort_index()


def order(value: float, digits: int = 1) -> str:
    """'5e9' (one significant digit) or '1.3e-3': as the prose writes orders of magnitude."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def tenths(values: pd.Series) -> str:
    """'10.7, 13.3, 11.5'."""
    return ", ".join(f"{value:.1f}" for value in values)


def batches_of(metrics: pd.DataFrame, methods: tuple[str, ...]) -> list[dict]:
    """The provenance's batches that trained the runs of `methods`, each with its number of `other` runs."""
    batches = KEPT.batches()
    recorded = KEPT.provenance()["batches"]
    runs = metrics.drop_duplicates("run").set_index("run")["method"]
    used = sorted(batches[runs[runs.isin(methods)].index].unique())
    return [{**recorded[b], "other": int((~runs[batches[batches == b].index].isin(methods)).sum())} for b in used]


def lorenz_fragments(metrics: pd.DataFrame) -> list[str]:
    """Table 6.1's finding and claims (standard errors, paired p-values: the claims' one-sided tests)."""
    mse = {method: by_seed(metrics, method) for method in LORENZ_METHODS}
    seeds, runs = mse["e_bayes"].size, sum(values.size for values in mse.values())
    first, second = batches_of(metrics, LORENZ_METHODS)
    with_error = [f"{mse[m].mean():.1f} +- {standard_error(mse[m]):.1f}" for m in ("e_bayes", "e_pac_bayes")]
    first_ten = {metric: by_seed(metrics, "e_pac_bayes", metric).loc[:9] for metric in ("test_mse", "train_mse")}
    dz_train = by_seed(metrics, "e_pac_bayes_hybrid@z", "train_mse").loc[:9]
    dy = {f"{mse[m].mean():.1f}" for m in ("e_bayes_hybrid@y", "e_pac_bayes_hybrid@y")}
    hybrids = {k: [paired_comparison(mse[f"{h}@{k}"], mse[b], "less") for h in HYBRIDS for b in BLACK_BOX]
               for k in "xz"}  # fmt: skip
    dx_p = max(c.p_value for c in hybrids["x"])
    dz = "is contradicted" if all(c.status == CONTRADICTED for c in hybrids["z"]) else "dz not contradicted"
    pac = {k: paired_comparison(mse[f"e_pac_bayes_hybrid@{k}"], mse[f"e_bayes_hybrid@{k}"], "less") for k in "xyz"}
    ratio = max(abs(c.mean_difference) / min(standard_error(mse[f"{h}@{k}"]) for h in HYBRIDS) for k, c in pac.items())
    differences = ", ".join(f"{c.mean_difference:.2f}" for c in pac.values())
    p_values = [c.p_value for c in pac.values()]
    return [
        f"The thesis' {number_word(seeds)} repetitions ({seeds} seeds x {len(mse)} rows, {runs} runs, trained in the "
        f"batches at {first['commit']} and {second['commit']}, {first['wall_seconds']:.0f} s and "
        f"{second['wall_seconds']:.0f} s wall on {cores(first['machine'])} cores, the second with the figures' "
        f"{first['other'] + second['other']} runs)",
        f"Over the {number_word(seeds)}, the black boxes ({with_error[0]}, {with_error[1]})",
        f"((ii)'s test MSE spans {span(first_ten['test_mse'], '.2g')} over the first ten seeds, its training MSE only "
        f"{span(first_ten['train_mse'], '.2g')})",
        f"knowing dy ({' / '.join(dy)})",
        f"Over the {number_word(seeds)} repetitions: holds",
        f"one-sided paired p <= {math.ceil(dx_p * 1000) / 1000:.3f}) and dy",
        f"{dz} for those knowing dz",
        f"((iv)'s training MSE {span(dz_train, '.2g')}, (ii)'s {span(first_ten['train_mse'], '.2g')})",
        f"differ by under {next(word for bound, word in FRACTIONS if ratio < bound)} of their standard errors with "
        f"every prior knowledge (mean paired differences {differences}; one-sided p {min(p_values):.2g}-"
        f"{max(p_values):.2g})",
    ]


def mocap_table_fragments(mse: dict[str, pd.Series], metrics: pd.DataFrame) -> list[str]:
    """Table 6.2's finding (mean +- standard deviation, as the thesis)."""
    (batch,) = batches_of(metrics, tuple(mse))
    published = pd.read_csv(KEPT.path / "tables/thesis_table6_2.csv").set_index(["column", "row"]).loc["test MSE"]
    within = [abs(mse[m].mean() - published.loc[CMU_ROWS[m], "published"]) <= published.loc[CMU_ROWS[m],
              "published_error"] for m in CMU_METHODS[1:]]  # fmt: skip
    same = {f"{mse[m].mean():.2f} +- {mse[m].std():.2f}" for m in ONE_MODEL}
    digits = pd.DataFrame({m: mse[m].map(lambda v: f"{v:.4g}") for m in CMU_METHODS[1:]})
    one = digits[list(ONE_MODEL)].nunique(axis=1) == 1
    apart = ", ".join(f"seed {seed}: {', '.join(digits.loc[seed, list(ONE_MODEL)])}" for seed in one.index[~one])
    hybrids = int((digits["e_bayes_hybrid@cmu"] == digits["e_pac_bayes_hybrid@cmu"]).sum())
    adam = metrics[metrics["method"].isin(CMU_METHODS[1:])]
    loss, complexity = (adam[adam["metric"] == name]["value"].median() for name in ("train_loss", "pac_complexity"))
    sd_vi, sd_i = mse["dbnn_vi@cmu"].std(), mse["e_bayes@cmu"].std()
    iii, iv, sgld = mse["e_bayes_hybrid@cmu"], mse["e_pac_bayes_hybrid@cmu"], mse["dbnn_sgld@cmu"]
    curriculum = sum(mse[m].size for m in CURRICULUM)
    return [
        f"The thesis' {number_word(iv.size)} repetitions of every row",
        f"({batch['commit']}; its {sum(mse[m].size for m in CMU_METHODS)} runs and the {curriculum} of the "
        f"curriculum grid below, {batch['wall_seconds']:.0f} s wall",
        f"{'lie' if all(within[:3]) else 'not'} within the published standard deviations ({' / '.join(same)} each",
        "and so does (iii)" if within[3] else "(iii) not within",
        f"its seed {iii.idxmax()} at {iii.max():.1f} widens",
        f"one model to four digits on {number_word(int(one.sum()))} seeds of ten ({apart}), and (iii) and (iv) on "
        f"{number_word(hybrids)} of ten",
        f"the data term of the loss is about {order(loss)} per walk",
        f"the PAC complexity is about 1e{math.floor(math.log10(complexity))}",
        f"moves (i)'s standard deviation by {order(abs(sd_i - sd_vi) / max(sd_i, sd_vi), 2)}",
        f"reaches {iii.iloc[-1]:.1f} here",
        f"and {iv.iloc[-1]:.1f} here",
        f"ours is about {order(by_seed(metrics, 'e_bayes@cmu', 'test_nll').mean())} against",
        f"its test MSE stays between {order(sgld.min())} and {order(sgld.max())}",
    ]


def mocap_claim_fragments(mse: dict[str, pd.Series]) -> list[str]:
    """Table 6.2's claim and the grid sensitivity_curriculum (its p-values two-sided, paired by seed)."""
    iv, black = mse["e_pac_bayes_hybrid@cmu"], mse["e_pac_bayes@cmu"]
    trails = (iv - black).nlargest(4).index.sort_values()
    full = paired_comparison(iv, black, "less")
    boxes = pd.concat([mse["e_bayes@cmu"], black])
    whole = [mse[m] for m in CURRICULUM]
    listed_seeds = [f"({row}) {tenths(c)} against {tenths(mse[m.replace('300', '')][c.index])}"
                    for row, m, c in zip(("iii", "iv"), CURRICULUM, whole, strict=True)]  # fmt: skip
    behind = [f"on all {number_word(c.size)} seeds ({(c - black[c.index]).mean():+.1f}, p = "
              f"{stats.ttest_rel(c, black[c.index]).pvalue:.1g})" if (c > black[c.index]).all() else "not all"
              for c in whole]  # fmt: skip
    return [
        f"Does not hold over {number_word(iv.size)} repetitions",
        f"against {black.mean():.2f} for the black boxes",
        f"(iv) minus (ii) per seed is {', '.join(f'{d:+.1f}' for d in iv - black)} (mean "
        f"{full.mean_difference:+.1f}, one-sided p = {full.p_value:.2g})",
        f"The black boxes alone range from {boxes.min():.1f} to {boxes.max():.1f} over the seeds",
        f"(iv) trails on seeds {trails[0]}-{trails[-1]}" if trails[-1] - trails[0] == 3 else "(iv) trails elsewhere",
        f"Grid sensitivity_curriculum ({sum(c.size for c in whole)} runs) trains both hybrids on seeds "
        f"{span(whole[0].index, '.2g', '-')}",
        *listed_seeds,
        " / ".join(set(behind)),
    ]


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The findings' phrases that carry a number of the runs, as the runs make them."""
    mse = {method: by_seed(metrics, method) for method in (*CMU_METHODS, *CURRICULUM)}
    return [*lorenz_fragments(metrics), *mocap_table_fragments(mse, metrics), *mocap_claim_fragments(mse)]


def percents(tokens: list[str]) -> list[str]:
    """The evidence's fractions as whole percents, half up (0.345 -> 35)."""
    return [str((Decimal(t) * 100).quantize(Decimal(1), ROUND_HALF_UP)) for t in tokens]


def span_of(tokens: list[str]) -> str:
    """'0.0349-0.746': the least and the largest of the evidence's numbers, as it prints them."""
    ordered = sorted(tokens, key=float)
    return f"{ordered[0]}-{ordered[-1]}"


def per_seed(evidence: str, label: str, after: str = "") -> list[str]:
    """The numbers (as the evidence prints them) that follow `label`, in the evidence after `after`."""
    part = evidence.partition(after)[2] if after else evidence
    return re.search(re.escape(label) + r" ((?:[-\d.e+]+ ?)+)", part).group(1).split()


def compared(evidence: str, label: str) -> tuple[str, float, str]:
    """(status, mean difference, one-sided p) of the evidence's comparison `label`."""
    found = re.search(re.escape(label) + r": ([a-z ]+) \(mean difference (\S+) over \d+ paired repetitions, "
                      r"one-sided p = ([\d.e-]+)\)", evidence)  # fmt: skip
    return found.group(1), float(found.group(2)), found.group(3)


def more_seeds(first: list[str], second: list[str], stated: str) -> tuple[bool, int]:
    """Whether more seeds would show the claim holding (else contradict it), and about how many would, at the
    difference the per-seed values show (`repetitions_to_decide`)."""
    effect = paired_comparison(pd.Series(map(float, first)), pd.Series(map(float, second)), stated).effect_size
    return effect > 0, repetitions_to_decide(effect)


def lotka_volterra_fragments(claims: pd.DataFrame) -> list[str]:
    """Fig. 6.3's finding: the forecast MSE per seed of the black box, the white box and the hybrid."""
    evidence = claims.loc["thesis/fig6.3", "evidence"]
    tokens = {label: per_seed(evidence, label) for label in LV_MODELS.values()}
    black, white, hybrid = (pd.Series(map(float, seeds)) for seeds in tokens.values())
    halved, white_box = compared(evidence, "2 x hybrid vs black box"), compared(evidence, "hybrid vs white box")
    gain = white - hybrid
    below = int((gain > 0).sum())
    black_label, white_label, hybrid_label = LV_MODELS.values()
    ranges = f"({span_of(tokens[hybrid_label])} against {span_of(tokens[black_label])}, paired p = {halved[2]})"
    toward_holding, seeds = more_seeds(tokens[hybrid_label], tokens[white_label], "less")
    return [
        f"{'Half' if [halved[0], white_box[0]].count('holds') == 1 else 'Not half'} of it holds over the "
        f"{number_word(gain.size)} seeds",
        f"at most half the black box's on every seed {ranges}" if (2 * hybrid <= black).all() else "not half",
        "below the white-box prior SDE's on every seed too" if below == gain.size else "not below on every seed",
        f"({gain.min():.2g} on seed {gain.idxmin()} to {gain.max():.2g} on seed {gain.idxmax()}",
        f"(p = {float(white_box[2]):.1g}; a sign test would give {below} of {gain.size}, p = "
        f"{stats.binomtest(below, gain.size, alternative='greater').pvalue:.1g})",
        f"about {seeds} seeds would show the white-box half holding" if toward_holding else "would contradict",
    ]


def evidence_fragments(claims: pd.DataFrame) -> list[str]:
    """The figure findings' phrases that carry a per-seed number of the forecasts, as claims.csv records them: Fig.
    6.3's, then Figs. 6.5, 6.7 and 6.8's (the hybrid's and the baseline's bands and errors)."""
    hybrid, baseline = LORENZ_MODELS.values()
    found = claims[["status", "evidence"]]
    status_65, band = found.loc["thesis/fig6.5"]
    held = {label: percents(per_seed(band, label)) for label in (hybrid, baseline)}
    change = compared(band, "hybrid vs baseline")
    status_67, errors = found.loc["thesis/fig6.7"]
    mse = {label: per_seed(errors, label) for label in (hybrid, baseline)}
    better = sum(float(h) < float(b) for h, b in zip(*mse.values(), strict=True))
    more = {65: more_seeds(per_seed(band, hybrid), per_seed(band, baseline), "greater"),
            67: more_seeds(mse[hybrid], mse[baseline], "less")}  # fmt: skip
    would = {figure: "show it holding" if toward else f"not make it hold: at the difference observed, about {seeds} "
             "would contradict it" for figure, (toward, seeds) in more.items()}  # fmt: skip
    status_68, long = found.loc["thesis/fig6.8"]
    paths = re.search(r"paths diverged \(of (\d+)\)", long).group(1)
    diverged = per_seed(long, hybrid, "paths diverged")
    none = [seed for seed, count in enumerate(diverged) if count == "0"]
    held_long = percents(per_seed(long, hybrid))
    return [
        *lotka_volterra_fragments(claims),
        f"{status_65.capitalize()} over the {number_word(len(held[baseline]))} seeds",
        f"the hybrid's band holds x at {listed(held[hybrid])}% of the 200 steps, the baseline's at "
        f"{listed(held[baseline])}%",
        f"(paired mean difference {100 * change[1]:.0f} points, one-sided p = {change[2]} for the stated direction)",
        f"({held[hybrid][0]} against {held[baseline][0]}%)",
        f"More seeds would {would[65]} (the paired t-test's 80% power)",
        f"{status_67.capitalize()} over the {number_word(len(mse[baseline]))} seeds: the hybrid tracks better on "
        f"{number_word(better)} (seeds 0-{len(mse[baseline]) - 1}: the hybrid's 200-step MSE "
        f"{', '.join(mse[hybrid])}; the baseline's {', '.join(mse[baseline])}), worse on "
        f"{number_word(len(mse[baseline]) - better)}",
        f"More seeds would {would[67]} (80% power)",
        f"on seed 0 all {paths} paths" if diverged[0] == paths else "not all on seed 0",
        f"On the figure's run all {paths} of the hybrid's paths overflow" if diverged[0] == paths else "not all",
        f"{status_68.capitalize()} over the {number_word(len(held_long))} seeds: the hybrid's band holds the data at "
        f"{listed(held_long)}% of the 999 steps",
        f"the paths overflow on {number_word(len(diverged) - len(none))} ({listed(diverged)} of {paths}); on seed "
        f"{listed([str(seed) for seed in none])}, where none does, its band holds "
        f"{listed([held_long[seed] for seed in none])}%",
    ]


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    fragments = expected_fragments(KEPT.metrics()) + evidence_fragments(KEPT.claims())
    missing = KEPT.missing_fragments(fragments)
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize(
    ("method", "metric", "factor"),
    [("e_pac_bayes_hybrid@cmu", "test_mse", 1.1), ("e_pac_bayes", "train_mse", 0.9), ("e_bayes", "test_mse", 1.05)],
)
def test_control_runs_with_other_values_fail_the_check(method: str, metric: str, factor: float) -> None:
    metrics = scaled(KEPT.metrics(), factor, method=method, metric=metric)
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"


@pytest.mark.parametrize(
    ("artifact", "old", "new"),
    [("thesis/fig6.5", "0.345", "0.445"), ("thesis/fig6.8", "21 21 0 21 7", "21 21 3 21 7"),
     ("thesis/fig6.3", "p = 0.091", "p = 0.041"), ("thesis/fig6.7", "18.3", "38.3")],
)  # fmt: skip
def test_control_claims_with_other_evidence_fail_the_check(artifact: str, old: str, new: str) -> None:
    claims = KEPT.claims()
    rows = claims.index == artifact
    assert claims.loc[rows, "evidence"].str.contains(old, regex=False).all()
    claims.loc[rows, "evidence"] = claims.loc[rows, "evidence"].str.replace(old, new, regex=False)
    assert KEPT.missing_fragments(evidence_fragments(claims)), "the changed evidence passes the check"

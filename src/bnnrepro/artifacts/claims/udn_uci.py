"""The caption claims of the UDN paper's UCI experiments (Fig. 8), each a check of the paper's words on our results."""

from __future__ import annotations

import math

import pandas as pd
import torch
from scipy import stats

from bnnrepro.artifacts.claims import Outcome, claim, compare_all, holm_note, repetitions, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.verdict_rules import CONTRADICTED, LEVEL, NOT_RESOLVED, Decision, all_of, decided_by
from bnnrepro.inference.depth_posteriors import TruncatedPoisson, expected_depth

UCI_SHALLOW, UCI_DEEP = ("yacht", "boston", "energy", "concrete", "power"), ("wine", "naval", "kin8nm", "protein")


def _uci_depth(context: ArtifactContext) -> dict[str, pd.Series]:
    """{data set: the UDN's E_q[l] per split}."""
    rows = context.metric("expected_depth")
    rows = rows[rows["method"] == "udn"]
    return {d.removeprefix("uci_"): group.set_index("split")["value"] for d, group in rows.groupby("dataset")}


def _one_sided(result, other) -> Decision:
    return decided_by(result.pvalue, other.pvalue)


INITIAL_RATE = 1.0
"""lambda_0 of the UCI runs' depth posterior (App. B.1, as for the spirals; config/train/method/udn.yaml)."""


def untrained_depth() -> float:
    """E_q[l] of the depth posterior before training, TP(0.95) at `INITIAL_RATE`: 1.94, itself below two."""
    with torch.no_grad():
        posterior = TruncatedPoisson(INITIAL_RATE)
        return expected_depth(posterior.log_probs(posterior.max_depth()))


def _shallow_status(values: pd.Series, start: float) -> Decision:
    """Below two (one-sided t-test) and moved from the untrained posterior's `start` (two-sided): the learned depth,
    not the initial one, is shallow. Contradicted when significantly above two."""
    if len(values) < 2 or values.std(ddof=1) == 0:
        return Decision(NOT_RESOLVED, math.nan, math.nan)
    below = _one_sided(
        stats.ttest_1samp(values, 2, alternative="less"), stats.ttest_1samp(values, 2, alternative="greater")
    )
    learned = stats.ttest_1samp(values, start).pvalue < LEVEL
    return below if below.status == CONTRADICTED or learned else Decision(NOT_RESOLVED, below.p_stated, below.p_other)


@claim("udn/fig8", "For yacht, boston, energy, concrete and power the posterior E_q[l] is lower than two.")
def udn_shallow_on_easy_uci(context: ArtifactContext) -> Outcome:
    """Holds when on each of these sets run the UDN's E_q[l] (at the selected epoch) is significantly below 2 over
    the splits (one-sample t-test, one-sided) and significantly different from the untrained posterior's (1.94,
    itself below two: an untrained UDN must not pass); contradicted when on one it is significantly above 2."""
    depth = {d: v for d, v in _uci_depth(context).items() if d in UCI_SHALLOW}
    require(bool(depth), "UDN run on yacht, boston, energy, concrete or power")
    start = untrained_depth()
    statuses = {d: _shallow_status(v, start) for d, v in depth.items()}
    listed = ", ".join(f"{d} {depth[d].mean():.2f} ({s.status})" for d, s in statuses.items())
    family = all_of(list(statuses.values()))
    return Outcome.decided(family.status, f"mean E_q[l] over splits: {listed} (untrained "
                           f"{start:.2f})" + holm_note(family, len(statuses)))  # fmt: skip


@claim("udn/fig8", "On wine, naval, kin8nm and protein the UDN learns more layers.")
def udn_deeper_on_hard_uci(context: ArtifactContext) -> Outcome:
    """Holds when the UDN's E_q[l] on each of these sets run is significantly above its E_q[l] on the deepest of the
    first five (Welch's t-test over the splits, one-sided)."""
    depth = _uci_depth(context)
    shallow = {d: v for d, v in depth.items() if d in UCI_SHALLOW}
    deep = {d: v for d, v in depth.items() if d in UCI_DEEP}
    require(bool(shallow) and bool(deep), "UDN runs on a set of each group")
    deepest = max(shallow, key=lambda d: shallow[d].mean())
    statuses = {
        d: _one_sided(stats.ttest_ind(v, shallow[deepest], equal_var=False, alternative="greater"),
                      stats.ttest_ind(v, shallow[deepest], equal_var=False, alternative="less"))
        for d, v in deep.items()
    }  # fmt: skip
    listed = ", ".join(f"{d} {deep[d].mean():.2f} ({s.status})" for d, s in statuses.items())
    family = all_of(list(statuses.values()))
    return Outcome.decided(family.status, f"mean E_q[l]: {listed} vs {deepest} "
                           f"{shallow[deepest].mean():.2f}" + holm_note(family, len(statuses)))  # fmt: skip


SIMILAR = 0.05
"""'Similarly': the UDN's test RMSE at most this fraction above the best finite network's."""


@claim("udn/fig8", "The UDN performs similarly to or better than the finite alternatives f2-f6.")
def udn_competitive_on_uci(context: ArtifactContext) -> Outcome:
    """On every set with runs of the UDN and of a finite network: holds when the UDN's test RMSE is significantly
    below (1 + `SIMILAR`) times the best finite network's (the one with the lowest mean), paired by split
    (non-inferiority); contradicted when it is significantly above that on one set."""
    rows = context.metric("test_rmse_original")
    pairs = []
    for dataset, group in rows.groupby("dataset"):
        values = repetitions(group, "split")
        if "udn" not in values.columns or values.shape[1] < 2:
            continue
        best = values.drop(columns="udn").mean().idxmin()
        margin = SIMILAR * float(values[best].mean())
        pairs.append(
            (f"{dataset.removeprefix('uci_')} udn vs {1 + SIMILAR:g} x {best}", values["udn"], values[best] + margin)
        )
    require(bool(pairs), "set with runs of the UDN and of a finite network")
    return compare_all(pairs, "less")

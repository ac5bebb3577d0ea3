"""The caption claims of the thesis' BEDL UCI table (Table 5.1), each a check of the paper's words on our results,
decided over the splits (paired by split)."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, compare_all, repetitions, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.thesis_bedl import uci_log_likelihood_runs


def _by_split(context: ArtifactContext, bases: tuple[str, str]) -> dict[str, pd.DataFrame]:
    """{data set: [split x method base]} test log-likelihoods of the sets with runs of both `bases`."""
    rows = uci_log_likelihood_runs(context)
    rows = rows[rows["base"].isin(bases)]
    sets = {
        dataset.removeprefix("uci_"): repetitions(group, "split", ("base",))
        for dataset, group in rows.groupby("dataset")
        if group["base"].nunique() == 2
    }
    require(bool(sets), f"data set with runs of both {' and '.join(bases)}")
    return sets


@claim("thesis/table5.1", "BEDL-PAC improves on BEDL on every data set but naval.")
def pac_improves_bedl(context: ArtifactContext) -> Outcome:
    """Holds when BEDL-PAC's test log-likelihood is significantly above BEDL's on every data set other than naval,
    paired by split."""
    sets = {name: split for name, split in _by_split(context, ("bedl", "bedl_pac")).items() if name != "naval"}
    require(bool(sets), "data set other than naval with runs of BEDL and BEDL-PAC")
    return compare_all([(name, s["bedl_pac"], s["bedl"]) for name, s in sets.items()], "greater")


@claim("thesis/table5.1", "BEDL-Hyper is worse than BEDL on every data set.")
def hyperprior_worse_than_bedl(context: ArtifactContext) -> Outcome:
    """Holds when BEDL-Hyper's test log-likelihood is significantly below BEDL's on every data set, paired by
    split."""
    sets = _by_split(context, ("bedl", "bedl_hyper"))
    return compare_all([(name, s["bedl_hyper"], s["bedl"]) for name, s in sets.items()], "less")

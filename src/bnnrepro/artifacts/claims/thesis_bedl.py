"""The caption claims of the thesis' BEDL UCI table (Table 5.1), each a check of the paper's words on our results."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, own_cells, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.thesis_bedl import uci_log_likelihood


def _bedl_uci_cells(context: ArtifactContext, rows: tuple[str, ...]) -> pd.DataFrame:
    return own_cells(uci_log_likelihood(context), rows)["ours"]


@claim("thesis/table5.1", "BEDL-PAC improves on BEDL on every data set but naval.")
def pac_improves_bedl(context: ArtifactContext) -> Outcome:
    """Holds when BEDL-PAC's mean test log-likelihood exceeds BEDL's on every data set other than naval."""
    means = _bedl_uci_cells(context, ("BEDL", "BEDL-PAC")).drop(index="naval", errors="ignore")
    require(not means.empty, "data set other than naval with runs of BEDL and BEDL-PAC")
    gap = means["BEDL-PAC"] - means["BEDL"]
    listed = ", ".join(f"{name} {value:+.3f}" for name, value in gap.items())
    return Outcome(bool((gap > 0).all()), f"BEDL-PAC - BEDL: {listed}")


@claim("thesis/table5.1", "BEDL-Hyper is worse than BEDL on every data set.")
def hyperprior_worse_than_bedl(context: ArtifactContext) -> Outcome:
    """Holds when BEDL-Hyper's mean test log-likelihood is below BEDL's on every data set."""
    means = _bedl_uci_cells(context, ("BEDL", "BEDL-Hyper"))
    gap = means["BEDL-Hyper"] - means["BEDL"]
    listed = ", ".join(f"{name} {value:+.3f}" for name, value in gap.items())
    return Outcome(bool((gap < 0).all()), f"BEDL-Hyper - BEDL: {listed}")

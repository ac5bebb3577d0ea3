"""The caption claims of the thesis' VBP UCI table (Table 3.1), each a check of the paper's words on our results."""

from __future__ import annotations

import numpy as np

from bnnrepro.artifacts.claims import Outcome, claim, own_cells
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.thesis_vbp_tables import uci_log_likelihood


@claim("thesis/table3.1", "VBP either outperforms the baselines or performs competitively.")
def vbp_competitive_on_uci(context: ArtifactContext) -> Outcome:
    """Against our VarOut runs (the DVI and PBP rows are cited numbers): holds when on every data set VBP's mean test
    log-likelihood is at least VarOut's minus twice their combined standard error."""
    cells = own_cells(uci_log_likelihood(context.metrics), ("VBP", "VarOut"))
    gap = cells["ours"]["VBP"] - cells["ours"]["VarOut"]
    tolerance = 2 * np.hypot(cells["ours_error"]["VBP"], cells["ours_error"]["VarOut"])
    listed = ", ".join(f"{name} {value:+.3f}" for name, value in gap.items())
    return Outcome(bool((gap >= -tolerance).all()), f"VBP - VarOut: {listed}")

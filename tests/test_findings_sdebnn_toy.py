"""The numbers the SDE-BNN toy's findings (docs/fidelity/paper/sdebnn_toy/findings.yaml) take from the kept runs,
computed again from them (metrics.csv, claims.csv, provenance.json): a new batch cannot leave the prose behind (the
control: the same check on kept files with other values fails). The SDE-BNN's training RMSE and the deep ensemble's
test NLL are `[[value]]` fields (values.yaml), computed when the document is made.

Not the kept runs' numbers, so not checked here:
- settings of the paper or the study's config: Table 2's 800 epochs, the 40 points of one full batch, 100 Euler
  steps and 100 samples, dt = 0.01, the clipping norm 10, the authors' fixed Laplace scale of 1;
- the divergence diagnosis from the unclipped workshop run's epoch-400 checkpoint (epoch 416, the 13th step, hidden
  state 390, output 205, log-likelihoods -1600 and -8, gradient norms 2-3, 333 and 1.4e9, path KLs 9e3 to 1e5,
  weights 6 to 28, checked to epoch 464, its learned scale 0.13 and the 8x larger gradients): that run is not kept;
- the default-scale runs (2000 epochs, 1200-1600 steps, dip errors 0.055 and 0.089, 20 steps and samples, 0.587 and
  0.230): not kept;
- the earlier native-arithmetic batch at 867b279 (test RMSE 281 at epoch 400, errors 0.084 and 0.038, the deep
  ensemble's NLL 74.8, the SDE-BNN's agreement to 2e-7): only git history holds its metrics;
- the clipped workshop run's evaluation (its errors 0.086 and 0.081 and its epoch-400 test RMSE 0.69): its toy paths
  and training history are not kept, and the claim that would compute the errors is not checked at paper scale.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/sdebnn_toy")
CONSTANTS = re.compile(r"a constant predictor's ([\d.]+)\); at the (\d+) points .*\(constant's ([\d.]+)\)")
"""The constant predictor's errors (all training points; the dip's count and error) in Fig. 2's claim evidence."""


def last_epoch(metrics: pd.DataFrame, method: str) -> str:
    """The epoch a run of `method` was evaluated at, or how it ended where it did not train to the end."""
    run = metrics[(metrics["method"] == method) & (metrics["metric"] == "selected_epoch")].iloc[0]
    return f"{run['value']:.0f}" if run["health"] == "ok" else run["health"]


def expected_fragments(
    metrics: pd.DataFrame, claims: pd.DataFrame | None = None, provenance: dict | None = None
) -> list[str]:
    """The findings' phrases that carry a number of the kept runs, as the kept files make them."""
    claims = KEPT.claims() if claims is None else claims
    provenance = KEPT.provenance() if provenance is None else provenance
    fig2, fig4 = claims.loc["sdebnn/fig2"], claims.loc["sdebnn_ws/fig4"]
    constants = CONSTANTS.search(fig2["evidence"])
    return [
        f"Not at Table 2's {last_epoch(metrics, 'sdebnn')} epochs"
        if fig2["status"] == "contradicted"
        else f"Fig. 2's claim {fig2['status']}",
        f"{fig4['status'].capitalize()} at paper: the workshop SDE-BNN",
        f"with the whole study at {provenance['commit']} under the portable CPU arithmetic, "
        f"{provenance['wall_seconds'] / 60:.0f} min wall",
        f"it completes all {last_epoch(metrics, 'ws_sdebnn')} epochs",
        f"at the {constants[2]} in the dip (a constant predictor's: {constants[1]} and {constants[3]})"
        if constants
        else "Fig. 2's evidence names no constant predictor",
    ]


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


def changed(what: str) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The kept files with `what` changed as a rerun could change it."""
    metrics, claims, provenance = KEPT.metrics(), KEPT.claims(), KEPT.provenance()
    if what == "the clipped run stops early":
        rows = (metrics["method"] == "ws_sdebnn") & (metrics["metric"] == "selected_epoch")
        metrics.loc[rows, "value"] = 416.0
    elif what == "another dip":
        claims["evidence"] = claims["evidence"].str.replace("constant's 0.621", "constant's 0.598")
    else:
        provenance["wall_seconds"] *= 1.2
    return metrics, claims, provenance


@pytest.mark.parametrize("what", ["the clipped run stops early", "another dip", "a slower batch"])
def test_control_kept_files_with_other_values_fail_the_check(what: str) -> None:
    assert KEPT.missing_fragments(expected_fragments(*changed(what))), "the changed files pass the check"

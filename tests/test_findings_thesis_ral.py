"""The numbers the thesis's Fig. 4.5 finding (docs/fidelity/paper/thesis_ral/findings.yaml) takes from the kept
runs, computed again from them (metrics.csv, claims.csv, provenance.json): a new batch cannot leave the prose behind
(the control: the same check on runs with other values fails). The final accuracies and the training seconds are
`[[value]]` fields (values.yaml), computed when the document is made.

Not the kept runs' numbers, so not checked here: the settings (the first 10,000 training images, batches of 64,
Adam lr 1e-3, one torch thread).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, number_word, ordinal

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/thesis_ral")


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The finding's phrases that carry a number of the kept runs, as the runs make them."""
    seeds = set(metrics.groupby("method")["seed"].nunique())
    epochs = metrics[metrics["metric"] == "selected_epoch"]["value"].unique()
    status = KEPT.claims().loc["thesis/fig4.5", "status"]
    machine = KEPT.machine()
    return [
        f"{status.capitalize()} on the real FashionMNIST",
        f"{number_word(seeds.pop())} seeds" if len(seeds) == 1 else f"uneven seeds: {sorted(seeds)} per method",
        f"After the {ordinal(int(epochs[0]))} epoch" if len(epochs) == 1 else f"epochs {sorted(epochs)}",
        f"Cost per run on a {machine['cpus']}-core {machine['cpu']}",
    ]


def test_every_number_the_finding_takes_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize("change", ["a seed fewer", "evaluated at another epoch"])
def test_control_runs_with_other_values_fail_the_check(change: str) -> None:
    metrics = KEPT.metrics()
    if change == "a seed fewer":
        metrics = metrics[metrics["seed"] != 4]
    else:
        metrics.loc[metrics["metric"] == "selected_epoch", "value"] = 19.0
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

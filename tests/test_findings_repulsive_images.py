"""The numbers the repulsive ensembles' image finding (docs/fidelity/paper/repulsive_images/findings.yaml) takes
from the kept runs, computed again from them (metrics.csv, the Table 1 they make, provenance.json): a new batch
cannot leave the prose behind (the control: the same check on runs with other values fails). The table's cells are
`[[numbers]]` fields and kde-WGD's paired accuracy change a `[[value]]` field (values.yaml), computed when the
document is made.

Not the kept runs' numbers, so not checked here: the settings (20 members, the MLP 784-100-10, Adam lr 1e-3,
batches of 128), the published NLL of 0.129 at 91% accuracy, and the commit c93af10 the deep-ensemble runs were
trained at (the provenance records the collection's commit only; git history holds the earlier one).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.findings_helpers import KeptFolder, number_word, ordinal_word, scaled

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/repulsive_images")


def seed_range(seeds: list[int]) -> str:
    """Seeds as the prose writes them: 0-3 where consecutive, else listed."""
    consecutive = seeds == list(range(seeds[0], seeds[-1] + 1))
    return f"{seeds[0]}-{seeds[-1]}" if consecutive else ", ".join(map(str, seeds))


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The finding's phrases that carry a number of the kept runs, as the runs make them."""
    seeds = metrics.groupby("method")["seed"].unique().map(sorted)
    missing = sorted(set(metrics["seed"]) - set(seeds["de"]))
    minutes = metrics[metrics["metric"] == "train_seconds"].groupby("method")["value"].agg(["min", "max"]) / 60
    took = {method: f"{math.floor(row['min'])}-{math.ceil(row['max'])} minutes" for method, row in minutes.iterrows()}
    epochs = metrics[metrics["metric"] == "selected_epoch"]["value"].unique()
    table = pd.read_csv(KEPT.path / "tables/repulsive_table1.csv")
    fashion = table[table["column"].str.startswith("FashionMNIST")]
    not_run = fashion.groupby("row")["ours"].apply(lambda ours: ours.isna().all()).sum()
    ratio = fashion[fashion["column"] == "FashionMNIST MD_o/MD_t"].set_index("row")
    lower = (ratio.loc["kde-WGD", ["ours", "published"]] < ratio.loc["Deep ensemble", ["ours", "published"]]).all()
    machine = KEPT.machine()
    return [
        f"{number_word(len(seeds)).capitalize()} rows of FashionMNIST",
        f"the deep ensemble (seeds {seed_range(seeds['de'])}) and kde-WGD (seeds {seed_range(seeds['kde_wgd'])})",
        f"{epochs[0]:.0f} epochs of batches of 128" if len(epochs) == 1 else f"epochs {sorted(epochs)}",
        f"the {ordinal_word(missing[0] + 1)} deep-ensemble seed and the other {number_word(not_run)} "
        "methods were not reached"
        if len(missing) == 1
        else f"deep-ensemble seeds {missing} not reached",
        f"its MD_o/MD_t is {'the lower' if lower else 'not the lower'} of the two in ours and in the paper's",
        f"A run took {took['de']} (deep ensemble) and {took['kde_wgd']} (kde-WGD) of training on this "
        f"{machine['cpus']}-core {machine['cpu']}",
    ]


def test_every_number_the_finding_takes_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize("change", ["kde-WGD trains faster", "the fifth deep-ensemble seed is kept"])
def test_control_runs_with_other_values_fail_the_check(change: str) -> None:
    metrics = KEPT.metrics()
    if change == "kde-WGD trains faster":
        metrics = scaled(metrics, 0.8, method="kde_wgd", metric="train_seconds")
    else:
        fifth = metrics[(metrics["method"] == "kde_wgd") & (metrics["seed"] == 4)].assign(method="de")
        metrics = pd.concat([metrics, fifth])
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

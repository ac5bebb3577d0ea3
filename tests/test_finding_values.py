"""A finding's numbers computed from the kept runs (bnnrepro.fidelity.finding_values): a paired change against the
t-test on the same rows, a summary, and the errors of a field without a spec and of a change without pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bnnrepro.fidelity.finding_values import finding_value, with_values

UDN_SPIRALS = Path(__file__).resolve().parents[1] / "docs/fidelity/paper/udn_spirals"


def _runs(values: dict[tuple[float | None, int], float]) -> pd.DataFrame:
    rows = [{"method": "udn", "ratio": ratio, "seed": seed, "metric": "expected_depth", "value": value}
            for (ratio, seed), value in values.items()]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_paired_change_is_the_t_test_of_the_paired_differences() -> None:
    rng = np.random.default_rng(0)
    base, faster = rng.normal(5, 2, 6), rng.normal(1, 0.5, 6)
    metrics = _runs({**{(None, s): base[s] for s in range(6)}, **{(1.0, s): base[s] + faster[s] for s in range(6)}})
    spec = {"metric": "expected_depth", "where": {"method": "udn"}, "change": {"ratio": 1.0},
            "against": {"ratio": None}, "format": "{mean:.6f} {n} {p:.6g}"}  # fmt: skip
    mean, n, p = finding_value(metrics, spec).split()
    assert float(mean) == pytest.approx(faster.mean(), abs=1e-6) and n == "6"
    assert float(p) == pytest.approx(stats.ttest_1samp(faster, 0).pvalue, rel=1e-5)
    summary = {"metric": "expected_depth", "where": {"ratio": None}, "scale": 2, "format": "{mean:.4f} of {n}"}
    assert finding_value(metrics, summary) == f"{2 * base.mean():.4f} of 6"


def test_a_change_without_pairs_and_a_field_without_a_spec_are_refused(tmp_path: Path) -> None:
    metrics = _runs({(None, 0): 1.0, (1.0, 1): 2.0})  # different seeds: nothing to pair
    spec = {"metric": "expected_depth", "change": {"ratio": 1.0}, "against": {"ratio": None}, "format": "{mean}"}
    with pytest.raises(ValueError, match="0 pair.s. of kept runs"):
        finding_value(metrics, spec)
    with pytest.raises(ValueError, match="no column 'omega'"):
        finding_value(metrics, {**spec, "where": {"omega": 26}})
    with pytest.raises(ValueError, match="values.yaml: a finding names the value.s. nonsense"):
        with_values("grows by [[value nonsense]]", tmp_path)


def test_the_udn_depth_rate_sensitivity_states_what_the_committed_runs_give() -> None:
    """UDN spirals' finding on the depth posterior's rate: +2.67 layers over the ten paired runs at omegas 26 and 28
    (the prose once said +2.2 from an earlier batch)."""
    metrics = pd.read_csv(UDN_SPIRALS / "metrics.csv")
    runs = metrics[(metrics["method"] == "udn") & metrics["omega"].isin([26, 28]) & (metrics["lr"] == 0.005)]
    depth = runs[runs["metric"] == "expected_depth"]
    faster = depth[depth["depth_lr_ratio"] == 1.0].set_index(["omega", "seed"])["value"]
    tenth = depth[depth["depth_lr_ratio"].isna()].set_index(["omega", "seed"])["value"]
    differences = faster - tenth.reindex(faster.index)
    text = with_values("[[value depth_lr_depth]]", UDN_SPIRALS)
    assert text.startswith(f"{differences.mean():+.2f} layers") and f"over the {len(differences)}," in text

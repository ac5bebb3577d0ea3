"""The numbers of a finding's prose, computed from the kept runs so that a new batch cannot leave the prose behind.

A kept folder (docs/fidelity/<scale>/<study>/ or docs/benchmark/<scale>/<benchmark>/) may hold `values.yaml`,
{name: how to compute it from the folder's metrics.csv}, and a finding writes `[[value NAME]]` where the number
goes. A value takes the rows of one `metric` whose columns match `where` (a value, or a list of values; null matches
an empty cell), multiplied by `scale` (1 by default), and is either

- a summary of them: `format` over {mean, sd, n, min, max}, or
- a paired change: the rows matching `change` minus those matching `against`, paired on the columns `pair_by`
  (seed by default), with a two-sided one-sample t-test of the differences (`scipy.stats.ttest_1samp`): `format`
  over {mean, sd, n, p}.

For example the UDN's depth-rate sensitivity (UDN App. B.1's tenth against the weights' rate):

    depth_lr_depth:
      metric: expected_depth
      where: {method: udn, lr: 0.005, omega: [26, 28]}
      change: {depth_lr_ratio: 1.0}
      against: {depth_lr_ratio: null}
      pair_by: [omega, seed]
      format: "{mean:+.2f} layers on average (paired over the {n}, p = {p:.2g})"
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bnnrepro.fidelity.kept_files import METRICS_FILE
from bnnrepro.files import read_yaml

VALUES_FILE = "values.yaml"
VALUE_FIELD = re.compile(r"\[\[value ([\w.-]+)\]\]")
"""`[[value NAME]]` in a finding: the number `NAME` of the folder's `VALUES_FILE`."""


def _matching(metrics: pd.DataFrame, where: dict) -> pd.Series:
    """The rows whose columns take the given values (a list: any of them; null: an empty cell)."""
    keep = pd.Series(True, index=metrics.index)
    for column, wanted in where.items():
        if column not in metrics:
            raise ValueError(f"no column {column!r} in the kept metrics (they have {', '.join(metrics.columns)})")
        values = metrics[column]
        if wanted is None:
            keep &= values.isna()
        else:
            options = [str(v) for v in (wanted if isinstance(wanted, list) else [wanted])]
            keep &= values.astype(str).isin(options) | values.map(_number_text).isin(options)
    return keep


def _number_text(value: object) -> str:
    """A number as a spec writes it: 26 for 26.0, 0.005 as is."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def finding_value(metrics: pd.DataFrame, spec: dict) -> str:
    """One value of `VALUES_FILE` (see the module docstring), formatted."""
    rows = metrics[(metrics["metric"] == spec["metric"]) & _matching(metrics, spec.get("where", {}))]
    scale = float(spec.get("scale", 1.0))
    if "change" not in spec:
        values = rows["value"].to_numpy(dtype=float) * scale
        if values.size == 0:
            raise ValueError(f"no kept run has {spec['metric']} where {spec.get('where')}")
        summary = {"mean": values.mean(), "sd": values.std(ddof=1) if values.size > 1 else np.nan, "n": values.size,
                   "min": values.min(), "max": values.max()}  # fmt: skip
        return spec["format"].format(**summary)
    pair_by = spec.get("pair_by", ["seed"])
    changed = rows[_matching(rows, spec["change"])].set_index(pair_by)["value"]
    baseline = rows[_matching(rows, spec["against"])].set_index(pair_by)["value"]
    differences = (changed - baseline.reindex(changed.index)).dropna().to_numpy(dtype=float) * scale
    if differences.size < 2:
        raise ValueError(f"{differences.size} pair(s) of kept runs for {spec['metric']}: {spec['change']} against "
                         f"{spec['against']} paired on {pair_by}")  # fmt: skip
    p_value = float(stats.ttest_1samp(differences, 0.0).pvalue)
    return spec["format"].format(mean=differences.mean(), sd=differences.std(ddof=1), n=differences.size, p=p_value)


def with_values(text: str, folder: Path) -> str:
    """A finding's text with its `[[value NAME]]` fields computed from the folder's kept metrics; an error naming
    the folder's values file where a field has no spec there."""
    names = VALUE_FIELD.findall(text)
    if not names:
        return text
    specs_file = folder / VALUES_FILE
    specs = read_yaml(specs_file) if specs_file.is_file() else {}
    if unknown := [name for name in names if name not in specs]:
        raise ValueError(f"{specs_file}: a finding names the value(s) {', '.join(unknown)}, which it does not define")
    metrics = pd.read_csv(folder / METRICS_FILE)
    return VALUE_FIELD.sub(lambda match: finding_value(metrics, specs[match.group(1)]), text)

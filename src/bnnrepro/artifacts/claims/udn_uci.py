"""The caption claims of the UDN paper's UCI experiments (Fig. 8), each a check of the paper's words on our results."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext

UCI_SHALLOW, UCI_DEEP = ("yacht", "boston", "energy", "concrete", "power"), ("wine", "naval", "kin8nm", "protein")


def _uci_depth(context: ArtifactContext) -> pd.Series:
    rows = context.metric("expected_depth")
    rows = rows[rows["method"] == "udn"]
    return rows.groupby(rows["dataset"].str.removeprefix("uci_"))["value"].mean()


@claim("udn/fig8", "For yacht, boston, energy, concrete and power the posterior E_q[l] is lower than two.")
def udn_shallow_on_easy_uci(context: ArtifactContext) -> Outcome:
    """Holds when the UDN's mean E_q[l] (at the selected epoch, over splits) is < 2 on each of these sets run."""
    depth = _uci_depth(context)
    shallow = depth[depth.index.isin(UCI_SHALLOW)]
    require(len(shallow) > 0, "UDN run on yacht, boston, energy, concrete or power")
    listed = ", ".join(f"{d} {v:.2f}" for d, v in shallow.items())
    return Outcome(bool((shallow < 2).all()), f"mean E_q[l]: {listed}")


@claim("udn/fig8", "On wine, naval, kin8nm and protein the UDN learns more layers.")
def udn_deeper_on_hard_uci(context: ArtifactContext) -> Outcome:
    """Holds when the UDN's mean E_q[l] on each of these sets run exceeds its largest on the first five."""
    depth = _uci_depth(context)
    shallow, deep = depth[depth.index.isin(UCI_SHALLOW)], depth[depth.index.isin(UCI_DEEP)]
    require(len(shallow) > 0 and len(deep) > 0, "UDN runs on a set of each group")
    listed = ", ".join(f"{d} {v:.2f}" for d, v in deep.items())
    return Outcome(bool((deep > shallow.max()).all()), f"mean E_q[l]: {listed} vs at most {shallow.max():.2f}")


@claim("udn/fig8", "The UDN performs similarly to or better than the finite alternatives f2-f6.")
def udn_competitive_on_uci(context: ArtifactContext) -> Outcome:
    """Holds when on every set with runs of the UDN and of a finite network the UDN's mean test RMSE is at most the
    best finite network's plus one standard error of the UDN's RMSE over splits (the other sets are left out)."""
    rows = context.metric("test_rmse_original")
    stats = rows.groupby(["dataset", "method"])["value"].agg(["mean", "sem"]).fillna(0)
    verdicts = []
    for dataset, table in stats.groupby(level="dataset"):
        table = table.droplevel("dataset")
        if "udn" not in table.index or len(table) < 2:
            continue
        best_finite = table.drop(index="udn")["mean"].min()
        udn = table.loc["udn"]
        verdicts.append(
            (dataset.removeprefix("uci_"), udn["mean"] <= best_finite + udn["sem"], udn["mean"], best_finite)
        )
    require(bool(verdicts), "set with runs of the UDN and of a finite network")
    listed = ", ".join(f"{d} {u:.3g} vs {f:.3g}" for d, _, u, f in verdicts)
    return Outcome(all(v for _, v, _, _ in verdicts), f"UDN vs best f_L test RMSE: {listed}")

"""Which method to use, generated from a study's ranking and equivalence tables (`ranking.ranking_table` with its
cost columns, `practical_equivalence.equivalence_table`), as docs/benchmark.md and the report show it: per metric
ranked over datasets, the best method, those practically equivalent to it or better (the test's probability at least
`DECIDED`: the Bayesian signed-rank test's on the datasets' means in the report, the hierarchical test's in
docs/benchmark.md), those not shown worse, each with its training time per run, and the cheapest of the best and
those equivalent to it (not of those merely not shown worse: with few datasets that is every method); then what the
tables cannot tell."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from bnnrepro.report.practical_equivalence import DECIDED, MIN_DATASETS, decided
from bnnrepro.report.ranking import COST_COLUMNS

EQUIVALENT, WORSE = "P(equivalent or better)", "P(worse)"
SECONDS = COST_COLUMNS["seconds"]
SIGNED_RANK_LIMIT = (
    "with {datasets} datasets the signed-rank test decides only differences that hold on nearly every one of them, "
    "so 'not shown worse' is no evidence of equivalence"
)
"""What the signed-rank test on the datasets' means cannot tell (`{datasets}`: how many it had)."""
TOO_FEW_DATASETS = (
    f"with {{datasets}} datasets, fewer than the {MIN_DATASETS} a verdict needs, no method is called equivalent or "
    "worse (the probabilities are shown)"
)
"""What any test cannot tell from fewer than MIN_DATASETS datasets (practical_equivalence.decided)."""


def recommendation(
    ranking: pd.DataFrame,
    equivalence: pd.DataFrame,
    names: Mapping[str, str] | None = None,
    limit: str = SIGNED_RANK_LIMIT,
) -> list[str]:
    """A line per metric of `equivalence` (`names` shows a metric by another name), a blank one, then one of caveats
    (`limit`: what the test that made the probabilities cannot tell, `{datasets}` its number of datasets); [] where
    the equivalence table is empty (one dataset decides nothing about data sets)."""
    if equivalence.empty:
        return []
    names = names or {}
    cells = ranking.pivot_table(index="row", columns="column", values="ours", aggfunc="first")
    probabilities = equivalence.pivot_table(index="row", columns="column", values="ours", aggfunc="first")
    shared = equivalence.pivot_table(index="row", columns="column", values="n_runs", aggfunc="first")  # datasets
    seconds = cells[SECONDS] if SECONDS in cells else pd.Series(float("nan"), index=cells.index)

    def named(methods: pd.Series) -> str:
        shown = [f"{m} (P = {p:.2f}, {seconds.get(m, float('nan')):.3g} s/run)" for m, p in methods.items()]
        return ", ".join(shown) or "none"

    datasets = int(equivalence["n_runs"].max())
    lines = []
    for metric in dict.fromkeys(column.rsplit(" P(", 1)[0] for column in equivalence["column"]):
        best = str(cells[f"{metric} rank"].idxmin())
        others = probabilities.drop(index=best)
        better, worse = others[f"{metric} {EQUIVALENT}"], others[f"{metric} {WORSE}"]
        is_equivalent, is_worse = (
            pd.Series(
                [decided(p, shared.at[m, column.name]) for m, p in column.items()], index=column.index, dtype=bool
            )
            for column in (better, worse)
        )
        equivalent = better[is_equivalent].sort_values(ascending=False)
        undecided = better[~is_equivalent & ~is_worse].sort_values(ascending=False)
        # not the undecided: with few datasets every method is undecided, the worst ones too
        cheapest = min([best, *equivalent.index], key=lambda m: seconds.get(m, float("inf")))
        lines.append(
            f"- {names.get(metric, metric)}: best {best} ({seconds.get(best, float('nan')):.3g} s/run). Practically "
            f"equivalent or better with probability at least {DECIDED}: {named(equivalent)}. Not shown worse "
            f"({EQUIVALENT}): {named(undecided)}. Cheapest of the best and those shown equivalent: {cheapest}."
        )
    limit = limit if datasets >= MIN_DATASETS else TOO_FEW_DATASETS
    lines += [""]
    lines.append(
        f"What this cannot tell: {limit.format(datasets=datasets)}; only the methods and datasets run here are "
        "compared, each at the settings its study gives it, which may not be its best."
    )
    return lines

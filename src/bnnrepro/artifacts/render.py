"""Write artifacts to disk: figures as PDF and PNG, tables as CSV, Markdown and LaTeX, and what was checked
against the paper as JSON.

A table puts ours beside the published numbers of the catalog: the difference, and whether ours lies
within the published error (|ours - published| <= published error). Every figure names its scale in its
lower right corner, so that a figure copied out of reports/ (which holds the last-built scale) says what it is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bnnrepro.artifacts.registry import catalog_entry  # noqa: E402
from bnnrepro.files import write_atomic  # noqa: E402

TABLE_COLUMNS = [
    "row", "column", "ours", "ours_error", "n_runs", "published", "published_error",
    "difference", "within_published_error", "standin",
]  # fmt: skip


def standard_deviation(values: pd.Series) -> float:
    """The standard deviation (n - 1) of the seeds' values; NaN for one seed."""
    return float(values.std(ddof=1)) if len(values) > 1 else math.nan


def standard_error(values: pd.Series) -> float:
    """std / sqrt(n) of the seeds' values; NaN for one seed."""
    return standard_deviation(values) / math.sqrt(len(values))


def stamp_scale(fig: Figure, scale: str, standin: bool) -> None:
    """Write the scale (and 'stand-in data' where the data are not the paper's) in the figure's lower right corner."""
    label = f"{scale} scale" + (", stand-in data" if standin else "")
    fig.text(0.995, 0.005, label, ha="right", va="bottom", fontsize=7, color="0.35")


def save_figure(fig: Figure, pdf: Path, png: Path) -> None:
    # A fixed creation date keeps the PDF identical across reruns of the same numbers.
    write_atomic(pdf, lambda tmp: fig.savefig(tmp, metadata={"CreationDate": None}))
    write_atomic(png, lambda tmp: fig.savefig(tmp, dpi=150))


def compare_with_published(artifact_id: str, ours: pd.DataFrame, standin: bool) -> pd.DataFrame:
    """Outer join of our cells with the published ones on (row, column)."""
    published = catalog_entry(artifact_id).get("published", {}).get("values", [])
    paper = pd.DataFrame(
        [
            {"row": v["row"], "column": v["column"], "published": v["value"], "published_error": v["error"]}
            for v in published
        ],
        columns=["row", "column", "published", "published_error"],
    )
    # numeric even where the paper gives no error at all (thesis Tables 5.2, 5.3: every error is null)
    paper["published_error"] = pd.to_numeric(paper["published_error"])
    table = paper.merge(ours, on=["row", "column"], how="outer", sort=False)
    # the published order first, then our cells that the paper lacks in the order we made them
    keys = [*zip(paper["row"], paper["column"], strict=True), *zip(ours["row"], ours["column"], strict=True)]
    order = {key: i for i, key in reversed(list(enumerate(keys)))}
    table["order"] = [order[key] for key in zip(table["row"], table["column"], strict=True)]
    table = table.sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)
    table["difference"] = pd.to_numeric(table["ours"], errors="coerce") - table["published"]
    known = table["published_error"].notna() & table["ours"].notna()
    within = table["difference"].abs() <= table["published_error"]
    table["within_published_error"] = [bool(w) if k else None for w, k in zip(within, known, strict=True)]
    table["n_runs"] = table["n_runs"].astype("Int64")
    table["standin"] = standin
    return table[TABLE_COLUMNS]


def within_error_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many of a comparison table's cells lie within the published error, outside it, or have ours and a
    published value but no published error to judge by."""
    known = table["within_published_error"].dropna().astype(bool)
    both = table["ours"].notna() & table["published"].notna()
    return {"within": int(known.sum()), "outside": int((~known).sum()), "no_error": int(both.sum() - len(known))}


def save_checks(path: Path, claims: list[dict], table: pd.DataFrame | None) -> None:
    """The artifact's caption claims as checked ({claim, holds, evidence}) and, for a table, its cell counts."""
    checks = {"claims": claims, "cells": within_error_counts(table) if table is not None else None}
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(checks, indent=1, ensure_ascii=False)))


def _format(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def to_markdown(table: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(_format(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def to_latex(table: pd.DataFrame) -> str:
    shown = table.map(_format)
    shown.columns = [c.replace("_", " ") for c in table.columns]
    return shown.to_latex(index=False, escape=True)


def save_table(table: pd.DataFrame, csv: Path, markdown: Path, latex: Path) -> None:
    write_atomic(csv, lambda tmp: table.to_csv(tmp, index=False))
    write_atomic(markdown, lambda tmp: tmp.write_text(to_markdown(table)))
    write_atomic(latex, lambda tmp: tmp.write_text(to_latex(table)))

"""Write artifacts to disk: figures as PDF and PNG, tables as CSV, Markdown and LaTeX, and what was checked
against the paper as JSON.

A table puts ours beside the published numbers of the catalog: the difference, and each cell's verdict under the
rule of `bnnrepro.artifacts.verdict_rules` (agrees, differs, undetermined, not judged, not comparable) within the
equivalence margin of its metric kind (`margin` column). A cell whose numbers
coincide with another row's in the same column (two models that are one at the stated settings) is flagged and
counted once; a cell that averages fewer settings than the paper's (the draw function's `partial` column) is never
counted as agreeing. Every figure names its scale in its
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
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from bnnrepro.artifacts.registry import catalog_entry  # noqa: E402
from bnnrepro.artifacts.verdict_rules import (  # noqa: E402
    AGREES,
    CELL_VERDICTS,
    MARGINS,
    NOT_COMPARABLE,
    NOT_JUDGED,
    UNDETERMINED,
    CellVerdict,
    PublishedSpread,
    cell_verdict,
    metric_kind,
    our_standard_error,
    spread_of,
)  # fmt: skip
from bnnrepro.files import write_atomic  # noqa: E402

TABLE_COLUMNS = [
    "row", "column", "ours", "ours_error", "n_runs", "published", "published_error",
    "difference", "verdict", "p_value", "margin", "p_equivalence", "coincides_with", "partial", "standin",
]  # fmt: skip
COINCIDE_TOLERANCE = 1e-3
"""Cells of two rows whose means and errors agree within this relative tolerance are one result counted once (thesis
Table 6.2's D-BNN (VI), (i) and (ii), one model at the stated likelihood variance, agree to 4e-5)."""


def standard_deviation(values: pd.Series) -> float:
    """The standard deviation (n - 1) of the seeds' values; NaN for one seed."""
    return float(values.std(ddof=1)) if len(values) > 1 else math.nan


def standard_error(values: pd.Series) -> float:
    """std / sqrt(n) of the seeds' values; NaN for one seed."""
    return standard_deviation(values) / math.sqrt(len(values))


def stamp_scale(fig: Figure, scale: str, standin: bool) -> None:
    """Write the scale (and 'stand-in data' where the data are not the paper's) at the figure's lower right corner,
    below its edge (the saved canvas grows to hold it: SAVED_BOUNDS), where it covers no label or legend."""
    label = f"{scale} scale" + (", stand-in data" if standin else "")
    fig.text(0.995, 0.0, label, ha="right", va="top", fontsize=7, color="0.35")


SMALLEST_FONT_KEY = "bnnrepro smallest font pt"
"""PNG text chunk: the smallest font size (points, at the figure's own size) of any text the figure shows; the report's
page check (bnnrepro.report.page_layout) scales it to the size the page prints the figure at."""
PRINTED_WIDTH_CM = 16.5
"""The report prints a figure across the text width (A4 with 2 cm margins), or shorter where it would then be taller
than PRINTED_MAX_HEIGHT_CM."""
PRINTED_MAX_HEIGHT_CM = 19.0
MIN_PRINTED_TEXT_PT = 7.0
"""No text of a figure prints smaller than this in the report."""
SAVED_BOUNDS = {"bbox_inches": "tight", "pad_inches": 0.05}
"""A figure is saved with the canvas grown to hold a label its layout pushed past the edge, rather than cut off."""


def printed_scale(width_in: float, height_in: float) -> float:
    """How much the report scales a figure of this size (bnnrepro.report.typst_elements.figure_image)."""
    return min(PRINTED_WIDTH_CM / 2.54 / width_in, PRINTED_MAX_HEIGHT_CM / 2.54 / height_in)


def _texts(fig: Figure) -> list[Text]:
    return [text for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip()]


def smallest_font_pt(fig: Figure) -> float:
    """The smallest font size of the figure's visible, non-empty texts (titles, labels, ticks, legends, notes)."""
    return min((text.get_fontsize() for text in _texts(fig)), default=math.inf)


def _raise_small_text(fig: Figure, smallest: float) -> None:
    for axes in fig.axes:
        for axis in ("x", "y"):
            labels = getattr(axes, f"get_{axis}ticklabels")()
            if labels and labels[0].get_fontsize() < smallest:
                axes.tick_params(axis=axis, which="both", labelsize=smallest)
    for text in fig.findobj(Text):  # empty ones too: an axis' offset text is written when the figure is drawn
        if text.get_fontsize() < smallest:
            text.set_fontsize(smallest)


def legible_when_printed(fig: Figure) -> None:
    """Raise every text that would print smaller than MIN_PRINTED_TEXT_PT in the report (tick labels through their
    axes, so that ticks made at drawing time follow; matplotlib's default locators then place fewer ticks), and lay
    the figure out again; repeated while the larger text grows the saved canvas (SAVED_BOUNDS) and so shrinks the
    print."""
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("tight")
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    for _ in range(10):
        canvas.draw()
        bounds = fig.get_tightbbox(canvas.get_renderer()).padded(SAVED_BOUNDS["pad_inches"])
        smallest = MIN_PRINTED_TEXT_PT / printed_scale(bounds.width, bounds.height)
        if smallest_font_pt(fig) >= smallest:
            return
        _raise_small_text(fig, smallest * 1.05)


def save_figure(fig: Figure, pdf: Path, png: Path) -> None:
    legible_when_printed(fig)
    # A fixed creation date keeps the PDF identical across reruns of the same numbers.
    write_atomic(pdf, lambda tmp: fig.savefig(tmp, metadata={"CreationDate": None}, **SAVED_BOUNDS))
    metadata = {SMALLEST_FONT_KEY: f"{smallest_font_pt(fig):g}"}
    write_atomic(png, lambda tmp: fig.savefig(tmp, dpi=150, metadata=metadata, **SAVED_BOUNDS))


def compare_with_published(artifact_id: str, ours: pd.DataFrame, standin: bool) -> pd.DataFrame:
    """Outer join of our cells with the published ones on (row, column), each judged by the cell rule."""
    published_block = catalog_entry(artifact_id).get("published", {})
    paper = pd.DataFrame(
        [
            {"row": v["row"], "column": v["column"], "published": v["value"], "published_error": v["error"]}
            for v in published_block.get("values", [])
        ],
        columns=["row", "column", "published", "published_error"],
    )
    # numeric even where the paper gives no error at all (thesis Tables 5.2, 5.3: every error is null)
    paper["published_error"] = pd.to_numeric(paper["published_error"])
    ours = ours.assign(partial=ours.get("partial", None))
    table = paper.merge(ours, on=["row", "column"], how="outer", sort=False)
    # the published order first, then our cells that the paper lacks in the order we made them
    keys = [*zip(paper["row"], paper["column"], strict=True), *zip(ours["row"], ours["column"], strict=True)]
    order = {key: i for i, key in reversed(list(enumerate(keys)))}
    table["order"] = [order[key] for key in zip(table["row"], table["column"], strict=True)]
    table = table.sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)
    numbers = table.assign(ours=pd.to_numeric(table["ours"], errors="coerce"))  # a generated table's text stays text
    table["difference"] = numbers["ours"] - table["published"]
    table["coincides_with"] = _coinciding_rows(numbers)
    spread = spread_of(published_block)
    verdicts = [judge_cell(row, published_block, spread) for row in numbers.itertuples()]
    table["verdict"] = [v.label for v in verdicts]
    table["p_value"] = [v.p_value for v in verdicts]
    table["margin"] = [v.margin for v in verdicts]
    table["p_equivalence"] = [v.p_equivalence for v in verdicts]
    partial = table["partial"].notna() & (table["verdict"] == AGREES)
    table.loc[partial, "verdict"] = UNDETERMINED  # an average over fewer settings than the paper's never agrees
    table["n_runs"] = table["n_runs"].astype("Int64")
    table["standin"] = standin
    return table[TABLE_COLUMNS]


def judge_cell(row, published_block: dict, spread: PublishedSpread) -> CellVerdict:
    """The cell rule on one row of ours beside the published value (`row`: ours, ours_error, n_runs, published,
    published_error, column), within its metric kind's margin; *not comparable* where the catalog block's
    `not_comparable` names the column with its reason."""
    if pd.isna(row.published):
        return CellVerdict(NOT_JUDGED, math.nan, "no published value")
    for part, reason in (published_block.get("not_comparable") or {}).items():
        if part in row.column and not pd.isna(row.ours):
            return CellVerdict(NOT_COMPARABLE, math.nan, reason)
    margin = MARGINS[metric_kind(row.column, published_block)].size(row.published)
    ours_se = our_standard_error(row.ours_error, row.n_runs, spread)
    return cell_verdict(row.ours, ours_se, row.n_runs, row.published, row.published_error, spread, margin)


def _coinciding_rows(table: pd.DataFrame) -> list[str | None]:
    """For each cell beside a published value, the earlier such row of its column whose mean and error equal its own
    within `COINCIDE_TOLERANCE` (the same model under two names), or None."""
    seen: dict[str, list[tuple[str, float, float]]] = {}
    flags = []
    for row in table.itertuples():
        if pd.isna(row.ours) or pd.isna(row.published):
            flags.append(None)
            continue
        earlier = seen.setdefault(row.column, [])
        same = [name for name, ours, error in earlier if _close(ours, row.ours) and _close(error, row.ours_error)]
        flags.append(same[0] if same else None)
        earlier.append((row.row, row.ours, row.ours_error))
    return flags


def _close(a: float, b: float) -> bool:
    if pd.isna(a) or pd.isna(b):
        return pd.isna(a) and pd.isna(b)
    return math.isclose(a, b, rel_tol=COINCIDE_TOLERANCE)


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many of a comparison table's cells with ours and a published value the cell rule finds in each verdict
    (`CELL_VERDICTS`), a cell that coincides with another row's counted once."""
    counted = table[table["ours"].notna() & table["published"].notna() & table["coincides_with"].isna()]
    return {label: int((counted["verdict"] == label).sum()) for label in CELL_VERDICTS}


def save_checks(path: Path, claims: list[dict], table: pd.DataFrame | None) -> None:
    """The artifact's caption claims as checked ({claim, holds, evidence}) and, for a table, its cell counts."""
    checks = {"claims": claims, "cells": verdict_counts(table) if table is not None else None}
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

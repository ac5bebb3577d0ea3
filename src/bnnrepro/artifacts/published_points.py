"""Numbers a paper states for one of its figures, overlaid on our redrawn figure in one "published" style.

They live in the catalog, as `published_points:` of the figure's entry: `note` (where the paper states them),
`legend` (the overlay's legend entry) and `values`, each with `x`, `y`, optional `error` (± on y), optional `series`
(the method or curve as our figure labels it) and `kind`, the kind of statement (KIND_MARKERS):

- point: the paper states y at x (the default);
- upper_bound: the paper states only that y lies below the value at x;
- x_threshold: the paper states that what the figure shows changes from x on, and no y.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes

from bnnrepro.artifacts.registry import catalog_entry

POINT_COLUMNS = ["series", "x", "y", "error", "kind"]
KIND_MARKERS = {"point": "o", "upper_bound": "v", "x_threshold": None}  # x_threshold: a vertical line
PUBLISHED_GID = "published"  # the gid of every overlay artist, so that tests and readers can find them
PUBLISHED_COLOUR = "black"


def published_points(artifact_id: str) -> pd.DataFrame:
    """The catalog's published points of a figure as a frame of POINT_COLUMNS; empty when the paper states none."""
    entry = catalog_entry(artifact_id).get("published_points")
    if entry is None:
        return pd.DataFrame(columns=POINT_COLUMNS)
    rows = []
    for value in entry["values"]:
        row = {"kind": "point", **value}
        if unknown := set(row) - set(POINT_COLUMNS):
            raise ValueError(f"{artifact_id}: published point {value} has unknown fields {sorted(unknown)}")
        if row["kind"] not in KIND_MARKERS:
            raise ValueError(f"{artifact_id}: published point kind must be one of {list(KIND_MARKERS)}: {value}")
        if ("y" in row) == (row["kind"] == "x_threshold"):
            raise ValueError(f"{artifact_id}: give y for every published point but an x_threshold: {value}")
        rows.append(row)
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def published_legend(artifact_id: str) -> str:
    """The legend entry of a figure's published points, e.g. 'published (text, App. B.4): E_q[ℓ] < 2'."""
    return catalog_entry(artifact_id)["published_points"]["legend"]


def on_categorical_axis(points: pd.DataFrame, categories: Sequence[str]) -> pd.DataFrame:
    """The points placed where seaborn draws categorical x (`categories` at 0..n-1); points of other x dropped."""
    positions = {category: i for i, category in enumerate(categories)}
    shown = points[points["x"].isin(positions)]
    return shown.assign(x=shown["x"].map(positions).astype(float))


def overlay_published(ax: Axes, points: pd.DataFrame, label: str, x: str = "x", y: str = "y") -> list[Artist]:
    """Draw each point as a black open marker (▽ for an upper bound, with its error bar if any) or a black dashed
    vertical line (an x threshold); add one legend entry `label` to the axes' legend. Returns one artist per point."""
    artists = []
    for point in points.to_dict("records"):
        marker = KIND_MARKERS[point["kind"]]
        if marker is None:
            artist = ax.axvline(point[x], color=PUBLISHED_COLOUR, linestyle="--", linewidth=1.2, zorder=5)
        else:
            error = None if pd.isna(point["error"]) else point["error"]
            artist = ax.errorbar(point[x], point[y], yerr=error, fmt=marker, color=PUBLISHED_COLOUR, mfc="none",
                                 markersize=8, markeredgewidth=1.5, capsize=3, zorder=5).lines[0]  # fmt: skip
        artist.set_gid(PUBLISHED_GID)
        artists.append(artist)
    if artists:
        legend = ax.get_legend()
        handles = list(legend.legend_handles) if legend else []
        labels = [text.get_text() for text in legend.get_texts()] if legend else []
        title = legend.get_title().get_text() if legend else ""
        ax.legend([*handles, artists[0]], [*labels, label], title=title or None, fontsize="small")
    return artists

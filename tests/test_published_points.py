"""Numbers the papers state for their figures (catalog `published_points`) and their overlay on our figures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest
from matplotlib import pyplot as plt

from bnnrepro.artifacts import published_points as published_module
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.published_points import (
    POINT_COLUMNS,
    PUBLISHED_GID,
    on_categorical_axis,
    overlay_published,
    published_legend,
    published_points,
)
from bnnrepro.artifacts.registry import catalog
from bnnrepro.artifacts.udn_spirals import accuracy_vs_omega, depth_vs_omega
from bnnrepro.artifacts.udn_uci import uci_rmse_and_depth

EASY_UCI_SETS = ["yacht", "boston", "energy", "concrete", "power"]


def published_artists(fig) -> list:
    return [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == PUBLISHED_GID]


def legend_labels(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()] if ax.get_legend() else []


def metrics_context(tmp_path, study: str, rows: list[dict]) -> ArtifactContext:
    """A tidy metrics CSV of the given rows (method, dataset, seed, metric, value and any hyperparameters)."""
    frame = pd.DataFrame([{"study": study, "run": f"{r['method']}/{r['dataset']}/{r['seed']}", "standin": False,
                           "split": "test", **r} for r in rows])  # fmt: skip
    path = tmp_path / "metrics.csv"
    frame.to_csv(path, index=False)
    return ArtifactContext(study, "paper", path)


def spiral_context(tmp_path, omegas=(2.0, 10.0, 20.0)) -> ArtifactContext:
    rows = [
        {"method": method, "dataset": "spirals", "seed": seed, "lr": lr, "omega": omega, "metric": metric,
         "value": value + 0.1 * seed}
        for omega in omegas for seed in (0, 1) for lr in (0.005, 0.01)
        for method, metric, value in (("udn", "last_expected_depth", 2 + omega / 10), ("udn", "test_accuracy", 0.9),
                                      ("finite_3", "test_accuracy", 0.8))
    ]  # fmt: skip
    return metrics_context(tmp_path, "udn_spirals", rows)


def uci_context(tmp_path, sets=("yacht", "boston", "wine")) -> ArtifactContext:
    rows = [{"method": "udn", "dataset": f"uci_{d}", "seed": s, "metric": "expected_depth", "value": 1.5 + s / 10}
            for d in sets for s in (0, 1)]  # fmt: skip
    rows += [{"method": m, "dataset": f"uci_{d}", "seed": s, "metric": "test_rmse_original", "value": 1.0 + s / 10}
             for m in ("udn", "f2") for d in sets for s in (0, 1)]  # fmt: skip
    return metrics_context(tmp_path, "udn_uci", rows)


# --- the catalog's points ---------------------------------------------------------------------------------------


def test_udn_fig8_states_e_q_depth_below_two_on_the_five_easy_sets() -> None:
    points = published_points("udn/fig8")
    assert list(points.columns) == POINT_COLUMNS
    assert points["x"].tolist() == EASY_UCI_SETS
    assert (points["y"] == 2).all() and (points["kind"] == "upper_bound").all() and (points["series"] == "UDN").all()
    assert points["error"].isna().all()
    assert "App. B.4" in published_legend("udn/fig8")


def test_udn_fig3b_states_where_the_runs_disagree() -> None:
    points = published_points("udn/fig3b")
    assert list(points.columns) == POINT_COLUMNS
    assert points[["series", "x", "kind"]].to_dict("records") == [{"series": "UDN", "x": 26, "kind": "x_threshold"}]
    assert points["y"].isna().all()
    assert "§6.1" in published_legend("udn/fig3b")


def test_every_catalog_entry_with_published_points_is_a_figure_that_loads() -> None:
    covered = [e for e in catalog()["artifacts"] if "published_points" in e]
    assert {e["id"] for e in covered} == {"udn/fig3b", "udn/fig8"}
    for entry in covered:
        assert entry["kind"] == "data" and entry["published_points"]["note"]
        assert published_legend(entry["id"]).startswith("published (")
        assert len(published_points(entry["id"])) == len(entry["published_points"]["values"])


@pytest.mark.parametrize("artifact_id", ["udn/fig3a", "udn/fig6", "sdebnn/fig2", "sdebnn_ws/fig4", "repulsive/fig1"])
def test_a_figure_whose_paper_states_no_numbers_has_an_empty_frame(artifact_id: str) -> None:
    points = published_points(artifact_id)
    assert points.empty and list(points.columns) == POINT_COLUMNS


@pytest.mark.parametrize(
    ("value", "message"),
    [({"x": 1, "y": 2, "colour": "red"}, "unknown fields"), ({"x": 1, "y": 2, "kind": "about"}, "kind must be"),
     ({"x": 1, "kind": "upper_bound"}, "give y"), ({"x": 1, "y": 2, "kind": "x_threshold"}, "give y")],
)  # fmt: skip
def test_a_malformed_published_point_names_what_is_wrong(monkeypatch, value: dict, message: str) -> None:
    entry = {"id": "udn/fig8", "published_points": {"note": "n", "legend": "l", "values": [value]}}
    monkeypatch.setattr(published_module, "catalog_entry", lambda artifact_id: entry)
    with pytest.raises(ValueError, match=message):
        published_points("udn/fig8")


# --- the overlay ----------------------------------------------------------------------------------------------------


def test_overlay_draws_one_black_open_marker_per_point_and_one_legend_entry() -> None:
    points = pd.DataFrame(
        [{"series": "A", "x": 0.0, "y": 1.0, "error": 0.2, "kind": "point"},
         {"series": "A", "x": 1.0, "y": 2.0, "error": None, "kind": "upper_bound"},
         {"series": "A", "x": 1.5, "y": None, "error": None, "kind": "x_threshold"}],
        columns=POINT_COLUMNS,
    )  # fmt: skip
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2], label="ours")
    ax.legend(title="model")
    artists = overlay_published(ax, points, "published (paper, Fig. 9)")
    assert published_artists(fig) == artists and len(artists) == len(points)
    assert [a.get_marker() for a in artists[:2]] == ["o", "v"] and artists[2].get_linestyle() == "--"
    assert all(a.get_color() == "black" for a in artists)
    assert all(a.get_markerfacecolor() == "none" for a in artists[:2])
    assert [float(a.get_xdata()[0]) for a in artists] == [0.0, 1.0, 1.5]
    assert len(ax.containers[0].lines[2]) == 1  # the point's error bar; the bound has none
    assert legend_labels(ax) == ["ours", "published (paper, Fig. 9)"]
    assert ax.get_legend().get_title().get_text() == "model"
    plt.close(fig)


def test_overlay_of_no_points_draws_nothing_and_adds_no_legend() -> None:
    fig, ax = plt.subplots()
    assert overlay_published(ax, pd.DataFrame(columns=POINT_COLUMNS), "published") == []
    assert published_artists(fig) == [] and ax.get_legend() is None
    plt.close(fig)


def test_categorical_points_sit_at_seaborns_positions_and_others_are_dropped() -> None:
    points = published_points("udn/fig8")
    placed = on_categorical_axis(points, ["wine", "boston", "yacht"])
    assert placed["x"].tolist() == [2.0, 1.0] and placed["series"].tolist() == ["UDN", "UDN"]


# --- on the real figures ------------------------------------------------------------------------------------------


def test_fig8_marks_the_published_bound_under_each_easy_set_we_ran(tmp_path) -> None:
    fig = uci_rmse_and_depth(uci_context(tmp_path))
    artists = published_artists(fig)
    assert len(artists) == 2  # yacht and boston; the paper states no bound for wine
    depth_ax = artists[0].axes
    ticks = {
        tick.get_text(): position
        for tick, position in zip(depth_ax.get_xticklabels(), depth_ax.get_xticks(), strict=True)
    }
    assert sorted(float(a.get_xdata()[0]) for a in artists) == sorted([ticks["yacht"], ticks["boston"]])
    assert all(float(a.get_ydata()[0]) == 2 and a.get_marker() == "v" for a in artists)
    assert legend_labels(depth_ax) == [published_legend("udn/fig8")]
    plt.close(fig)


def test_fig3b_draws_the_published_threshold_on_omegas_own_scale(tmp_path) -> None:
    fig = depth_vs_omega(spiral_context(tmp_path))
    (line,) = published_artists(fig)
    ax = fig.axes[0]
    assert list(line.get_xdata()) == [26, 26] and ax.get_xlim()[1] > 26
    box_centres = sorted(patch.get_path().get_extents().intervalx.mean() for patch in ax.patches)
    np.testing.assert_allclose(box_centres, [2, 10, 20], atol=1e-6)  # boxes at their ω, not at 0, 1, 2
    assert legend_labels(ax) == [published_legend("udn/fig3b")]
    plt.close(fig)


def test_a_figure_without_published_points_gets_no_published_artist(tmp_path) -> None:
    fig = accuracy_vs_omega(spiral_context(tmp_path))
    assert published_artists(fig) == []
    assert "published" not in " ".join(legend_labels(fig.axes[0]))
    plt.close(fig)

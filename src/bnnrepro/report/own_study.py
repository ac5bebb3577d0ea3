"""The report's results of a study of your own (`paper: own`), which no published artifact describes, for its datasets
of one task (a study may mix classification and regression sets: the report has a section per task): their table of
test metrics (`bnnrepro.report.study_summary`), the methods ranked over its datasets and replicates with the
Friedman and Nemenyi tests (`bnnrepro.report.ranking`), and two figures: each test metric of its task per method with
its standard error, one panel per dataset, and the critical-difference diagram of each ranked metric. A benchmark
(its study file's `benchmark:` block) is first reduced to the settings its validation protocol chose, and adds the
table of those choices and its published numbers beside ours (`bnnrepro.report.benchmark`).

`python -m bnnrepro.report.own_study STUDY_FILE METRICS_CSV --task TASK --datasets NAME... --table CSV MD TEX
--ranking CSV MD TEX --metrics-figure PDF PNG --ranking-figure PDF PNG --selection CSV MD TEX --published CSV MD TEX
--equivalence CSV MD TEX`
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from bnnrepro.artifacts.render import TABLE_COLUMNS, save_figure, save_table, standard_error
from bnnrepro.files import read_yaml
from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.report.benchmark import (
    block_keys,
    method_costs,
    published_comparison,
    published_values,
    ranked,
    replicate_name,
    unranked_methods,
    validation_choice,
)
from bnnrepro.report.practical_equivalence import equivalence_table
from bnnrepro.report.ranking import RANKED_METRICS, draw_critical_differences, ranking_table, study_rankings
from bnnrepro.report.study_summary import REPLICATES, TEST_PREFIX, row_label, study_summary


def metrics_figure(metrics: pd.DataFrame, task: str) -> Figure:
    """Each ranked test metric of `task` (a column of panels) per dataset (a row): every method's mean over its
    replicates with the standard error as an error bar, the methods top to bottom in the table's order (a page is
    taller than wide: the datasets, of which a study may have many, run down it); for regression runs that record
    it, a last column of calibration panels (`draw_coverage`)."""
    ranked = RANKED_METRICS.get(task, {})
    shown = [m for m in ranked if (metrics["metric"] == TEST_PREFIX + m).any()]
    if not shown:
        return note_figure(f"the runs record none of the metrics ranked for {task} ({', '.join(ranked) or 'none'})")
    test = metrics[metrics["metric"].isin([TEST_PREFIX + m for m in shown])].copy()
    test["entrant"] = [row_label(m, h) for m, h in zip(test["method"], test["hparams"], strict=True)]
    cells = (
        test.groupby(["metric", "dataset", "entrant"], sort=False)["value"].agg(["mean", standard_error]).sort_index()
    )
    datasets, entrants = list(dict.fromkeys(test["dataset"])), list(dict.fromkeys(test["entrant"]))
    coverage = interval_coverages(metrics) if task == "regression" else None
    columns = len(shown) + (coverage is not None)
    fig = Figure(figsize=(2.4 * columns + 1.4, (0.22 * len(entrants) + 0.9) * len(datasets)))
    axes = fig.subplots(len(datasets), columns, squeeze=False, sharey=True)
    for row, dataset in enumerate(datasets):
        if coverage is not None:
            draw_coverage(axes[row][-1], coverage.loc[dataset].reindex(entrants), dataset, legend=row == 0)
        for column, metric in enumerate(shown):
            ax = axes[row][column]
            values = cells.loc[(TEST_PREFIX + metric, dataset)].reindex(entrants)
            ax.errorbar(values["mean"], range(len(entrants)), xerr=values["standard_error"], fmt="o", ms=3, capsize=2)
            ax.set_yticks(range(len(entrants)), entrants, fontsize=8)
            ax.set_title(f"{dataset}\ntest {metric}", fontsize=8)  # two lines: one is wider than a panel
            ax.tick_params(axis="x", labelsize=7)
    axes[0][0].invert_yaxis()  # once: the panels share their y axis; the first method on top, as in the table
    fig.set_layout_engine("constrained")
    return fig


COVERAGE_LEVELS = {"coverage_50": 0.5, "coverage_90": 0.9, "coverage_95": 0.95}
"""The central predictive intervals whose test coverage a regression run records (bnnrepro.metrics.INTERVAL_LEVELS,
by the names its SPLIT_METRICS give them; named here, where no torch is loaded)."""


def interval_coverages(metrics: pd.DataFrame) -> pd.DataFrame | None:
    """Each entrant's mean test coverage of each interval per dataset ([dataset, entrant] x metric), None where the
    runs record none (made before they were recorded)."""
    rows = metrics[metrics["metric"].isin([TEST_PREFIX + m for m in COVERAGE_LEVELS])].copy()
    if rows.empty:
        return None
    rows["entrant"] = [row_label(m, h) for m, h in zip(rows["method"], rows["hparams"], strict=True)]
    return rows.pivot_table(index=["dataset", "entrant"], columns="metric", values="value", aggfunc="mean")


def draw_coverage(ax, coverage: pd.DataFrame, dataset: str, legend: bool) -> None:
    """The calibration panel of a dataset: each entrant's mean test coverage of the central 50/90/95% predictive
    intervals (a marker each) against the levels (dashed lines): a calibrated method's markers sit on its lines,
    an overconfident one's left of them. The `legend` of the markers goes right of the panel, clear of them."""
    for (metric, level), marker in zip(COVERAGE_LEVELS.items(), "os^", strict=True):
        ax.axvline(level, color="0.6", linestyle="--", linewidth=0.8)
        values = coverage.get(TEST_PREFIX + metric, pd.Series(index=coverage.index, dtype=float))
        ax.plot(values.to_numpy(), range(len(coverage)), marker, ms=3, label=f"{level:.0%}")
    ax.set_xlim(0, 1.02)
    ax.set_title(f"{dataset}\ntest coverage", fontsize=8)  # "interval coverage" ran into the next title
    ax.tick_params(axis="x", labelsize=7)
    if legend:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), handletextpad=0.2, borderpad=0.3)


def task_metrics(metrics: pd.DataFrame, task: str) -> pd.DataFrame:
    """The rows of the ranked test metrics of `task` (RMSE and NLL in the targets' units; accuracy, NLL, ECE), so
    that its table has a column per dataset and metric a reader compares; all test metrics where the runs record
    none of them."""
    order = {TEST_PREFIX + m: i for i, m in enumerate(RANKED_METRICS.get(task, {}))}
    ranked = metrics["metric"].isin(order)
    if not ranked.any():
        return metrics
    # the metrics in the order of the figure and the ranking (a stable sort keeps the methods' order)
    return metrics[ranked].sort_values("metric", key=lambda column: column.map(order), kind="stable")


def note_figure(note: str) -> Figure:
    """A figure that says why there is nothing to draw."""
    fig = Figure(figsize=(6.0, 1.0))
    fig.text(0.5, 0.5, note, ha="center", va="center", fontsize=9)
    return fig


def ranking_figure(rankings) -> Figure:
    """The critical-difference diagram of each ranked metric, one under the other."""
    if not rankings:
        return note_figure("no metric to rank")
    fig = Figure(figsize=(7.0, 1.9 * len(rankings)))
    draw_critical_differences(rankings, fig.subplots(len(rankings), 1, squeeze=False)[:, 0])
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report.own_study")
    parser.add_argument("study_file", type=Path, help="config/studies/<study>.yaml")
    parser.add_argument("metrics", type=Path, help="the study's tidy metrics CSV")
    parser.add_argument("--task", required=True, help="the task of the datasets this part of the study shows")
    parser.add_argument("--datasets", nargs="+", required=True, help="the study's datasets of that task")
    parser.add_argument("--table", nargs=3, type=Path, required=True, metavar=("CSV", "MD", "TEX"))
    parser.add_argument("--ranking", nargs=3, type=Path, required=True, metavar=("CSV", "MD", "TEX"))
    parser.add_argument("--metrics-figure", nargs=2, type=Path, required=True, metavar=("PDF", "PNG"))
    parser.add_argument("--ranking-figure", nargs=2, type=Path, required=True, metavar=("PDF", "PNG"))
    parser.add_argument("--selection", nargs=3, type=Path, required=True, metavar=("CSV", "MD", "TEX"))
    parser.add_argument("--published", nargs=3, type=Path, required=True, metavar=("CSV", "MD", "TEX"))
    parser.add_argument("--equivalence", nargs=3, type=Path, required=True, metavar=("CSV", "MD", "TEX"))
    args = parser.parse_args(argv)
    metrics = pd.read_csv(args.metrics)
    metrics = metrics[metrics["dataset"].isin(args.datasets)]
    benchmark = read_yaml(args.study_file).get("benchmark")
    selection = published = pd.DataFrame(columns=TABLE_COLUMNS)
    costs = method_costs(metrics, block_keys(benchmark) if benchmark is not None else REPLICATES)  # tuning included
    if benchmark is not None:
        metrics, selection = validation_choice(metrics, benchmark["select_by"], block_keys(benchmark))
        published = published_comparison(metrics, published_values(benchmark.get("published", [])))
    save_table(selection, *args.selection)
    save_table(published, *args.published)
    save_table(study_summary(task_metrics(metrics, args.task)), *args.table)
    rankings = study_rankings(ranked(metrics, benchmark), args.task)
    unranked = tuple(m for m in unranked_methods(benchmark) if m in set(metrics["method"]))
    replicate = replicate_name(benchmark) if benchmark is not None else "split"
    save_table(ranking_table(rankings, bool(metrics["standin"].any()), costs, unranked, replicate), *args.ranking)
    save_table(equivalence_table(rankings, bool(metrics["standin"].any())), *args.equivalence)
    save_figure(metrics_figure(metrics, args.task), *args.metrics_figure)
    save_figure(ranking_figure(rankings), *args.ranking_figure)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

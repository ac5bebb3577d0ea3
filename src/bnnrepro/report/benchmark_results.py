"""The benchmark document's results per dataset (docs/benchmark.md, `bnnrepro.report.benchmark_document`): each
ranked metric's table, a regression benchmark's calibration, the tests within each dataset, and the published
numbers beside ours under the cell rule."""

from __future__ import annotations

import pandas as pd

from bnnrepro.artifacts.render import standard_error, verdict_counts
from bnnrepro.artifacts.verdict_rules import CELL_VERDICTS, LEVEL, UNDETERMINED
from bnnrepro.report.own_study import COVERAGE_LEVELS
from bnnrepro.report.per_dataset_tests import compare_within_datasets, split_verdict
from bnnrepro.report.practical_equivalence import DECIDED
from bnnrepro.report.ranking import RANKED_METRICS, SIGNIFICANCE
from bnnrepro.report.study_summary import TEST_PREFIX

KIND_SHOWN = {"standard_error": "s.e.", "standard_deviation": "s.d.", "unstated": "kind unstated",
              "per split": "s.d., per split"}  # fmt: skip
SHOWN_METRICS = {"rmse_original": "test RMSE", "nll_original": "test NLL"}
TABLE_UNITS = {"regression": "original units; "}
"""What a task's per-dataset tables say of their units (a classifier's accuracy, NLL and ECE have none to restore)."""


def _mean_error(values: pd.Series) -> str:
    error = standard_error(values)
    return f"{values.mean():.3g}" + ("" if pd.isna(error) else f" ± {error:.2g}") + f" ({len(values)})"


def metric_table(selected: pd.DataFrame, metric: str) -> list[str]:
    """Mean ± standard error (n replicates) of a test metric, a row per method, a column per dataset."""
    test = selected[selected["metric"] == TEST_PREFIX + metric]
    datasets = sorted(set(test["dataset"]))
    lines = [f"| method | {' | '.join(datasets)} |", "|---|" + "---|" * len(datasets)]
    for method, rows in test.groupby("method", sort=False):
        cells = [_mean_error(rows[rows["dataset"] == d]["value"]) if (rows["dataset"] == d).any() else "–"
                 for d in datasets]  # fmt: skip
        lines.append(f"| {method} | {' | '.join(cells)} |")
    return lines


def metric_tables(selected: pd.DataFrame, task: str, replicate: str) -> list[str]:
    """A `metric_table` per ranked metric of the task, each under its heading."""
    lines = []
    for metric in RANKED_METRICS[task]:
        name = SHOWN_METRICS.get(metric, f"test {metric}")
        heading = f"### {name} per dataset ({TABLE_UNITS.get(task, '')}mean ± s.e. over {replicate}s)"
        lines += [heading, "", *metric_table(selected, metric), ""]
    return lines


CALIBRATION_METRICS = {"crps_original": "CRPS", **{m: f"{level:.0%}" for m, level in COVERAGE_LEVELS.items()},
                       "quantile_calibration_error": "QCE"}  # fmt: skip
"""A regression run's calibration metrics (bnnrepro.metrics), by the column that shows them."""


def calibration_section(selected: pd.DataFrame) -> list[str]:
    """A regression benchmark's calibration: per dataset and method, the mean over splits of the test CRPS (original
    units), the coverage of the central 50/90/95% predictive intervals and the quantile calibration error; or why
    there is none (runs made before these metrics were recorded)."""
    test = selected[selected["metric"].isin([TEST_PREFIX + m for m in CALIBRATION_METRICS])]
    if test.empty:
        return [
            "The kept runs were made before the runs recorded interval coverage, the quantile calibration error and "
            "the CRPS (bnnrepro.metrics): a rerun of the batch shows them here.",
        ]
    means = test.pivot_table(index=["dataset", "method"], columns="metric", values="value", aggfunc="mean", sort=False)
    names = [TEST_PREFIX + m for m in CALIBRATION_METRICS]
    lines = [
        "Test CRPS (original units, lower is better), the share of test targets inside the central 50/90/95% "
        "interval of their predictive (the moment-matched Gaussian whose NLL is ranked; a calibrated method covers "
        "the level) and the quantile calibration error (QCE: mean |p - observed share below the p-quantile| over p = "
        "0.01..0.99; 0 is calibrated), each the mean over the splits.",
        "",
        f"| dataset | method | {' | '.join(CALIBRATION_METRICS.values())} |",
        "|---|---|" + "---|" * len(names),
    ]
    for (dataset, method), row in means.reindex(columns=names).iterrows():
        cells = ["–" if pd.isna(row[name]) else f"{row[name]:.3g}" for name in names]
        lines.append(f"| {dataset} | {method} | {' | '.join(cells)} |")
    return lines


def per_dataset_section(selected: pd.DataFrame, task: str, holdout: float, replicate: str = "split") -> list[str]:
    """Per dataset and ranked metric: its best method over the replicates (each holding out the share `holdout`; 0:
    independent draws), and the others by `split_verdict`."""
    test = (
        f"corrected resampled t-test (Nadeau & Bengio 2003; a split holds out {holdout:.3g} of the data, so the "
        "variance of the mean is scaled by 1/n + n_test/n_train, as the splits' training sets overlap)"
        if holdout
        else f"paired t-test (each {replicate} draws its data afresh: no training set overlaps another)"
    )
    bayesian = (
        "Bayesian correlated t-test (Corani & Benavoli 2015)"
        if holdout
        else "Bayesian paired t-test (Corani & Benavoli 2015's correlated test at correlation 0)"
    )
    lines = [
        f"Within each dataset, each method against the dataset's best mean over its {replicate}s, paired by "
        f"{replicate}: the {test}, *worse* "
        f"at {SIGNIFICANCE} after Holm's correction over every comparison of the metric; *equivalent* where the "
        f"{bayesian} puts at least {DECIDED} within the ROPE above. These "
        "speak of one dataset each; which method to use over datasets is the analysis above's answer.",
        "",
    ]
    for metric in RANKED_METRICS[task]:
        name = SHOWN_METRICS.get(metric, metric)
        comparisons = compare_within_datasets(selected, metric, holdout)
        for dataset in dict.fromkeys(c.dataset for c in comparisons):
            own = [c for c in comparisons if c.dataset == dataset]
            grouped = {v: [c.method for c in own if split_verdict(c) == v] for v in ("equivalent", "worse")}
            undecided = [c.method for c in own if split_verdict(c) == "not told apart"]
            lines.append(
                f"- {dataset}, {name} ({own[0].splits} {replicate}s): best {own[0].best}; equivalent: "
                f"{', '.join(grouped['equivalent']) or 'none'}; worse: {', '.join(grouped['worse']) or 'none'}; not "
                f"told apart: {', '.join(undecided) or 'none'}."
            )
    return lines


def published_section(compared: pd.DataFrame) -> list[str]:
    """The benchmark's published numbers beside ours, each with its cell verdict."""
    counts = verdict_counts(compared)
    reference = int(compared["ours"].isna().sum())
    lines = [
        "Counts: "
        + ", ".join(f"{counts[label]} {label}" for label in CELL_VERDICTS)
        + f"; {reference} for reference (a published method we do not run).",
        "",
        "| method (source) | dataset and metric | ours (n) | published | verdict |",
        "|---|---|---|---|---|",
    ]
    judged = int(compared["p_holm"].notna().sum())
    for row in compared.itertuples():
        ours = "–" if pd.isna(row.ours) else f"{row.ours:.3g} ± {row.ours_error:.2g} ({row.n_runs})"
        tests = [f"p = {row.p_value:.2g}"] if not pd.isna(row.p_value) else []
        tests += (
            [f"TOST p = {row.p_equivalence:.2g} within ± {row.margin:.3g}"] if not pd.isna(row.p_equivalence) else []
        )
        fell = row.verdict == UNDETERMINED and row.p_value < LEVEL <= row.p_holm  # a differs that Holm's took
        tests += [f"Holm over {judged}: p = {row.p_holm:.2g}"] if fell else []
        shown = row.verdict + f" ({'; '.join(tests) or row.reason})"
        verdict = "for reference" if pd.isna(row.ours) else shown
        published = f"{row.published:.3g} ± {row.published_error:.2g} ({KIND_SHOWN[row.published_kind]})"
        lines.append(f"| {row.row} | {row.column} | {ours} | {published} | {verdict} |")
    return lines

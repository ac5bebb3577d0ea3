"""A sensitivity grid's runs as a tidy CSV, and their summary beside the published numbers:
`python scripts/grid_sensitivity.py TREE STUDY GRID KEY --out CSV [--scale paper] [--artifact ID] [--summary CSV]`.

TREE is a project folder whose runs of grid GRID of config/studies/STUDY.yaml (e.g. `sensitivity_epochs` of
`thesis_bedl`) finished at `--scale`; KEY is the Hydra key the grid varies (e.g. `train.epochs`). The CSV has one row
per finished run: method, dataset, split, seed, KEY's short name, the test log-likelihood and RMSE (in the targets'
original units, at the reported epoch), the same on the training set, the best test log-likelihood of the run's
history and its epoch (a diagnostic of how training length acts, not a protocol: it selects on the test set), the
training seconds and the run's health. The summary (`--summary`, and printed) gives per (method, dataset, KEY value)
the mean ± standard error over splits, and a paired t-test over the splits (scipy.stats.ttest_rel) of each KEY value
against the smallest; with `--artifact`, the published mean ± error of the catalog's cell whose row names the method
(case, '-' and '_' ignored) and whose column is the dataset without its prefix (uci_energy -> energy).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
from scipy.stats import ttest_rel

from bnnrepro import layout
from bnnrepro.artifacts.registry import catalog_entry
from bnnrepro.pipeline.studies import load_study

SPLIT_KEY = "dataset.split"


def run_rows(tree: Path, study_name: str, grid: str, key: str, scale: str = "paper") -> pd.DataFrame:
    """One row per finished run of the study's `grid` at `scale` in `tree` (runs without metrics.json are left out)."""
    study = load_study(study_name)
    if grid not in study.grids:
        raise SystemExit(f"{study_name} has no grid {grid!r}; its grids: {', '.join(study.grids)}")
    short = key.rsplit(".", 1)[-1]
    rows = []
    for run in replace(study, grids={grid: study.grids[grid]}).runs(scale):
        path = tree / run.file(layout.RUN_METRICS)
        if not path.is_file():
            continue
        result = json.loads(path.read_text())
        metrics, hparams = result["metrics"], dict(run.hparams)
        history = [entry for entry in result.get("history", []) if "test_nll_original" in entry]
        best = min(history, key=lambda entry: entry["test_nll_original"]) if history else None
        rows.append({
            "method": run.method, "dataset": run.dataset, "split": hparams.get(SPLIT_KEY), "seed": run.seed,
            short: hparams[key],
            "test_log_likelihood": -metrics["test_nll_original"], "test_rmse": metrics["test_rmse_original"],
            "train_log_likelihood": -metrics.get("train_nll_original", math.nan),
            "train_rmse": metrics.get("train_rmse_original", math.nan),  # where train.evaluate_training_split
            "best_test_log_likelihood": -best["test_nll_original"] if best else math.nan,
            "best_epoch": best["epoch"] if best else None,
            "train_seconds": result["train_seconds"], "health": result.get("health", {}).get("status", "ok"),
            "run": run.id,
        })  # fmt: skip
    if not rows:
        raise SystemExit(f"{tree}: no finished run of grid {grid} of {study_name} at {scale}")
    return pd.DataFrame(rows)


def _normalised(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def published_cells(artifact_id: str) -> dict[tuple[str, str], tuple[float, float | None]]:
    """{(normalised row, column): (value, error)} of the artifact's published numbers in the catalog."""
    values = catalog_entry(artifact_id)["published"]["values"]
    return {(_normalised(v["row"]), str(v["column"])): (v["value"], v.get("error")) for v in values}


def summary(rows: pd.DataFrame, key: str, artifact_id: str | None = None) -> pd.DataFrame:
    """Per (method, dataset, KEY value): mean ± standard error over splits of the test log-likelihood and RMSE, and
    the paired t-test over the splits both hold against the smallest KEY value (its difference of means, t and p)."""
    short = key.rsplit(".", 1)[-1]
    published = published_cells(artifact_id) if artifact_id else {}
    out = []
    for (method, dataset), group in rows.groupby(["method", "dataset"], sort=False):
        by_value = {value: part.set_index("split") for value, part in group.groupby(short)}
        base_value = min(by_value)
        base = by_value[base_value]
        cell = published.get((_normalised(method.partition("@")[0]), dataset.partition("_")[2] or dataset))
        for value, part in sorted(by_value.items()):
            log_lik, rmse = part["test_log_likelihood"], part["test_rmse"]
            paired = base.index.intersection(part.index)
            compared = value != base_value and len(paired) > 1
            after, before = part.loc[paired, "test_log_likelihood"], base.loc[paired, "test_log_likelihood"]
            t, p = ttest_rel(after, before) if compared else (math.nan, math.nan)
            out.append({
                "method": method, "dataset": dataset, short: value, "n_splits": len(part),
                "test_log_likelihood": log_lik.mean(), "test_log_likelihood_se": _standard_error(log_lik),
                "test_rmse": rmse.mean(), "test_rmse_se": _standard_error(rmse),
                "best_test_log_likelihood": part["best_test_log_likelihood"].mean(),
                f"paired_vs_{short}": base_value, "n_paired": len(paired), "paired_difference": (after - before).mean(),
                "paired_t": t, "paired_p": p,
                "published": cell[0] if cell else math.nan, "published_error": cell[1] if cell else math.nan,
            })  # fmt: skip
    return pd.DataFrame(out)


def _standard_error(values: pd.Series) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("study")
    parser.add_argument("grid")
    parser.add_argument("key", help="the Hydra key the grid varies, e.g. train.epochs")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--out", type=Path, required=True, help="the tidy CSV of the runs")
    parser.add_argument("--summary", type=Path, help="also write the summary here")
    parser.add_argument("--artifact", help="the catalog artifact whose published cells to set beside the means")
    args = parser.parse_args()
    rows = run_rows(args.tree.resolve(), args.study, args.grid, args.key, args.scale)
    rows.to_csv(args.out, index=False, float_format="%.6g")
    table = summary(rows, args.key, args.artifact)
    if args.summary:
        table.to_csv(args.summary, index=False, float_format="%.6g")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False, float_format="{:.4g}".format))  # 4 significant digits: b_0 = 1e-4 too


if __name__ == "__main__":
    main()

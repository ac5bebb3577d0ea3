"""How far the repulsion moves the UCI benchmark's repulsive ensemble: per set, its validation-chosen test RMSE and NLL
(kde-fWGD: the kept runs of the batch trained at `--batch`) beside those of the same 100 particles without repulsion
(eq. (2)'s independent MAP ascent of D'Angelo & Fortuin 2021, which the benchmark ran under the same name until commit
5539970: its runs kept at `--before`), paired by split:

    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 \\
    python scripts/repulsion_effect.py --before 5539970 --batch 8ba9ab6 --tree /path/to/batch \\
        --out docs/benchmark/paper/uci_benchmark/repulsion_effect.csv

Per dataset: the splits both have; each rule's mean test RMSE and NLL (targets' units); the largest relative RMSE change
and the largest absolute NLL change over the splits; the splits on which validation chose the same likelihood std; the
p-values of a paired Wilcoxon signed-rank test over the splits (scipy.stats.wilcoxon) of each metric; each rule's mean
training seconds per run (over every run, each std of the grid). With `--tree`, a project folder holding the kde-fWGD
runs' folders, also why the two are close: on split 0's chosen run, after training, the median over particles of |grad_f
log p(f | D)| / |grad log rho(f)| on the first training batch of 32 rows, the posterior's drive against the repulsion in
eq. (20) before both are pushed back to the weights, computed in the runs' own arithmetic (their `cpu_arithmetic`,
whose variables must be set before Python starts, as above; without them the script stops and names them, and their
threads and subnormal flushing, as an evaluation job of the workflow does).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
from pathlib import Path

import pandas as pd
import torch
from scipy.stats import wilcoxon

from bnnrepro import cpu_arithmetic
from bnnrepro.evaluations.inputs import load_run
from bnnrepro.fidelity.kept_files import METRICS_FILE
from bnnrepro.fidelity.staleness import kept_batch_runs
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.benchmark import block_keys, validation_choice

FOLDER = Path("docs/benchmark/paper/uci_benchmark")
METHOD = "repulsive_ensemble"
METRICS = {"rmse": "test_rmse_original", "nll": "test_nll_original"}


def chosen(metrics: pd.DataFrame) -> pd.DataFrame:
    """The repulsive ensemble's validation-chosen run per split: a row per (dataset, split), its test metrics and the
    chosen likelihood std."""
    benchmark = load_study("uci_benchmark").benchmark
    selected, _ = validation_choice(metrics[metrics["method"] == METHOD], benchmark["select_by"], block_keys(benchmark))
    selected = selected[selected["metric"].isin(METRICS.values())]
    table = selected.pivot_table(index=["dataset", "hparams"], columns="metric", values="value")
    return table.join(selected.groupby(["dataset", "hparams"])["likelihood_std"].first())


def seconds(metrics: pd.DataFrame) -> pd.Series:
    """The repulsive ensemble's mean training seconds per run, per dataset."""
    rows = metrics[(metrics["method"] == METHOD) & (metrics["metric"] == "train_seconds")]
    return rows.groupby("dataset")["value"].mean()


def comparison(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """A row per dataset of the two rules' chosen runs, paired by split (module docstring)."""
    paired = pd.merge(chosen(before), chosen(after), left_index=True, right_index=True, suffixes=("_map", "_fwgd"))
    seconds_map, seconds_fwgd = seconds(before), seconds(after)
    rows = []
    for dataset, runs in paired.groupby(level="dataset"):
        row = {
            "dataset": dataset,
            "splits": len(runs),
            "same_choice": int((runs["likelihood_std_map"] == runs["likelihood_std_fwgd"]).sum()),
        }
        for short, metric in METRICS.items():
            old, new = runs[f"{metric}_map"], runs[f"{metric}_fwgd"]
            row[f"{short}_map"], row[f"{short}_fwgd"] = old.mean(), new.mean()
            change = (new - old) / old if short == "rmse" else new - old
            row[f"{short}_largest_change"] = change.abs().max()
            row[f"{short}_wilcoxon_p"] = (
                wilcoxon(new, old, zero_method="zsplit").pvalue if len(runs) > 1 else float("nan")
            )
        row["seconds_map"], row["seconds_fwgd"] = seconds_map[dataset], seconds_fwgd[dataset]
        rows.append(row)
    return pd.DataFrame(rows).set_index("dataset")


def drive_to_repulsion(run_dir: Path, batch: int = 32) -> float:
    """The median over particles of |grad_f log p(f | D)| / |grad log rho(f)| on the first `batch` training rows of
    the trained kde-fWGD run in `run_dir` (module docstring)."""
    cfg, splits, method, _ = load_run(run_dir)
    cpu_arithmetic.check(cfg.cpu_arithmetic)
    cpu_arithmetic.set_up_process(cfg.threads)
    x, y = (torch.as_tensor(splits.arrays[key][:batch], dtype=torch.float32) for key in ("x_train", "y_train"))
    with torch.no_grad():
        outputs, drive, _, _ = method.target.function_scores(method.particles, x, y, len(splits.arrays["x_train"]))
    repulsion = method.estimator(outputs.flatten(1))
    return float((drive.flatten(1).norm(dim=1) / repulsion.norm(dim=1)).median())


def kept_at(commit: str) -> pd.DataFrame:
    """The kept runs' tidy metrics as committed at `commit`."""
    text = subprocess.run(["git", "show", f"{commit}:{FOLDER / METRICS_FILE}"], cwd=project_root(), check=True,
                          capture_output=True, text=True).stdout  # fmt: skip
    return pd.read_csv(io.StringIO(text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True, help="a commit whose kept runs hold the MAP ensemble's")
    parser.add_argument("--batch", required=True, help="the commit of the kept batch of kde-fWGD runs")
    parser.add_argument("--tree", type=Path, help="a project folder holding the kde-fWGD runs' folders")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    folder = project_root() / FOLDER
    kept = pd.read_csv(folder / METRICS_FILE)
    kept = kept[kept["run"].isin(kept_batch_runs(folder, args.batch)) & (kept["method"] == METHOD)]
    if kept.empty:
        raise SystemExit(f"the batch kept at {args.batch} has no {METHOD} runs: name the batch that trained them")
    table = comparison(kept_at(args.before), kept)
    if args.tree:
        split_zero = chosen(kept).xs("split=0", level="hparams")["likelihood_std"]
        runs = Path("results") / "paper" / "runs"
        with contextlib.chdir(args.tree):  # a run's config names its data relative to its project
            table["drive_to_repulsion"] = [
                drive_to_repulsion(next(runs.glob(f"{METHOD}~*/{dataset}/split=0+likelihood_std={std}/seed=0")))
                for dataset, std in split_zero[table.index].items()
            ]
    table.to_csv(args.out, float_format="%.6g")
    print(table.to_string(float_format=lambda value: f"{value:.4g}"))


if __name__ == "__main__":
    main()

"""Whether a tree's runs give, bit for bit, the numbers a kept batch gave for the same runs: the check that this
machine reproduces the committed results (`python -m bnnrepro.fidelity reproduce TREE --study S`).

Train some kept runs again (`python -m bnnrepro.fidelity targets S --batch COMMIT` names them), then compare: every
metric of every run both hold, except what describes a run rather than measures it (`bnnrepro.aggregate.RUN_FACTS`:
its training seconds differ on every machine). Under `cpu_arithmetic: portable` at the same `threads_per_job` and the
same code (the batch's code digests), the numbers are the same whatever the CPU's widest kernels
(`bnnrepro.cpu_arithmetic`), but not across CPU vendors (an Intel Xeon's and an AMD EPYC's differ in the last float32
digits). A difference names the first differing metric of each differing run and where each side ran, and the
largest relative difference of each metric tells how far the machines' numbers are apart. `--record` keeps the
outcome in the study's provenance.json (`reproductions`), which the documents state beside the batches' machine; a
later `collect` of the study starts its record afresh (its runs are then other numbers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from bnnrepro import layout
from bnnrepro.aggregate import RUN_FACTS, tidy_metrics
from bnnrepro.fidelity.collect import commit_of, finished_runs
from bnnrepro.fidelity.kept_files import METRICS_FILE, PROVENANCE_FILE, REPRODUCTION_FILE, provenance_batches
from bnnrepro.pipeline.studies import load_study


@dataclass(frozen=True)
class Reproduction:
    """The outcome of comparing a tree's runs with the kept ones: the runs compared, those whose every metric is
    bit-identical, the first difference of each other run ({run, metric, kept, rerun}), the machines the kept batches
    ran on, the CPUs and arithmetic settings the tree's runs ran on, and per test metric the median and largest
    relative difference over the runs (`relative_differences`); and the rerun's values of the metrics a study's
    verdicts are made from (`verdict_metrics`), which `--record` keeps beside the kept ones."""

    runs: int
    identical: int
    differences: list[dict]
    kept_machines: list[str]
    rerun_on: list[str]
    spread: dict[str, dict]
    rerun_metrics: pd.DataFrame

    def summary(self) -> str:
        lines = [
            f"{self.identical} of {self.runs} runs bit-identical to the kept ones",
            f"kept runs from: {'; '.join(self.kept_machines)}",
            f"rerun on: {'; '.join(self.rerun_on)}",
        ]
        lines += [f"{metric}: relative difference median {v['median']:.2g}, largest {v['max']:.2g}, "
                  f"above 1% in {v['above_1_percent']:.0%} of the runs"
                  for metric, v in self.spread.items()]  # fmt: skip
        lines += [
            f"differs: {d['run']} {d['metric']}: kept {d['kept']!r}, rerun {d['rerun']!r}" for d in self.differences
        ]
        return "\n".join(lines)

    def record(self, commit: str, metrics_file: str) -> dict:
        """What `record_reproduction` keeps: where and at which commit the runs were trained again, the outcome, and
        the file of the rerun's verdict metrics."""
        return {"rerun_on": self.rerun_on, "commit": commit, "date": datetime.now(UTC).strftime("%Y-%m-%d"),
                "runs": self.runs, "identical": self.identical, "differences": self.differences[:3],
                "relative_differences": self.spread, "metrics_file": metrics_file}  # fmt: skip


def reproduce(tree: Path, study_name: str, scale: str, folder: Path) -> Reproduction:
    """Compare the finished runs of `study_name` at `scale` in `tree` that the kept `folder` also holds with the kept
    metrics (exact float equality; a metric only one side has counts as a difference)."""
    kept = pd.read_csv(folder / METRICS_FILE)
    kept_ids = set(kept["run"])
    runs = [run for run in finished_runs(tree, study_name, scale) if run.id in kept_ids]
    if not runs:
        raise SystemExit(f"{tree}: none of the runs kept in {folder} has finished there; train some first "
                         f"(python -m bnnrepro.fidelity targets {study_name} --batch COMMIT names them)")  # fmt: skip
    ids = {run.id for run in runs}
    kept_values = _measured(kept[kept["run"].isin(ids)])
    rerun = tidy_metrics(study_name, scale, tree, runs)
    rerun_values = _measured(rerun)
    differences: dict[str, dict] = {}
    for run, metric in sorted(kept_values.keys() | rerun_values.keys()):
        a, b = kept_values.get((run, metric)), rerun_values.get((run, metric))
        if run not in differences and not _same(a, b):
            differences[run] = {"run": run, "metric": metric, "kept": a, "rerun": b}
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    machines = sorted({f"{b['machine']} (commit {b['commit']})" for b in provenance_batches(provenance)})
    return Reproduction(len(runs), len(runs) - len(differences), list(differences.values()), machines,
                        sorted({_ran_on(tree / run.file(layout.RUN_METRICS)) for run in runs}),
                        relative_differences(kept_values, rerun_values),
                        rerun[rerun["metric"].isin(verdict_metrics(study_name, set(rerun["metric"])))])  # fmt: skip


def verdict_metrics(study_name: str, recorded: set[str]) -> list[str]:
    """Of the `recorded` metrics, those a study's verdicts are made from: every final test metric (`test_*`), and a
    benchmark's validation metric (its `select_by`) or, for another study, every final validation metric (`val_*`)."""
    benchmark = load_study(study_name).benchmark
    chosen_by = (benchmark["select_by"],) if benchmark else ("val_",)
    return sorted(metric for metric in recorded if metric.startswith(("test_", *chosen_by)))


def relative_differences(kept: dict[tuple[str, str], float], rerun: dict[tuple[str, str], float]) -> dict[str, dict]:
    """Per test metric (`test_*`) both sides hold: the median and largest |rerun - kept| / |kept| over the runs (a
    kept 0 counts by the absolute difference), to two significant digits, the run of the largest, and the share of
    runs where it is above 1%."""
    by_metric: dict[str, dict[str, float]] = {}
    for (run, metric), value in kept.items():
        other = rerun.get((run, metric))
        if metric.startswith("test_") and other is not None and np.isfinite(value) and np.isfinite(other):
            by_metric.setdefault(metric, {})[run] = abs(other - value) / (abs(value) or 1.0)
    spread = {}
    for metric, by_run in sorted(by_metric.items()):
        values = np.array(list(by_run.values()))
        spread[metric] = {"median": float(f"{np.median(values):.2g}"), "max": float(f"{values.max():.2g}"),
                          "largest_run": max(by_run, key=by_run.get),
                          "above_1_percent": float(f"{np.mean(values > 0.01):.2g}")}  # fmt: skip
    return spread


def _measured(table: pd.DataFrame) -> dict[tuple[str, str], float]:
    """{(run, metric): value} of a tidy table, without the values that describe a run (`RUN_FACTS`)."""
    measured = table[~table["metric"].isin(RUN_FACTS)]
    return dict(zip(zip(measured["run"], measured["metric"], strict=True), measured["value"], strict=True))


def _same(kept: object, rerun: object) -> bool:
    """Bit-identical values (a NaN equals a NaN: a metric a run cannot have, e.g. an undefined calibration bin)."""
    if kept is None or rerun is None:
        return False
    return float(kept) == float(rerun) or (pd.isna(kept) and pd.isna(rerun))


def _ran_on(metrics_file: Path) -> str:
    """The CPU, kernels and arithmetic setting a run's metrics.json records, in words."""
    ran = json.loads(metrics_file.read_text()).get("ran_on", {})
    kernels, setting = ran.get("cpu_capability", "?"), ran.get("cpu_arithmetic", "?")
    return f"{ran.get('cpu', 'unknown CPU')} ({kernels} kernels, cpu_arithmetic={setting})"


def record_reproduction(folder: Path, reproduction: Reproduction, tree: Path) -> None:
    """Add `reproduction` (trained again in `tree`) to the kept study's provenance.json, under `reproductions`, and
    keep the rerun's verdict metrics beside (reproduction-<k>.csv)."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    done = provenance.get("reproductions", [])
    metrics_file = REPRODUCTION_FILE.format(len(done) + 1)
    reproduction.rerun_metrics[["run", "metric", "value"]].to_csv(folder / metrics_file, index=False)
    provenance["reproductions"] = [*done, reproduction.record(commit_of(tree), metrics_file)]
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")


def reproduction_sentences(provenance: dict) -> list[str]:
    """A sentence per recorded reproduction of a kept study, for the documents beside its batches' machine."""
    sentences = []
    for done in provenance.get("reproductions", []):
        outcome = "bit for bit" if done["identical"] == done["runs"] else f"{done['identical']} of them bit for bit"
        spread = done.get("relative_differences", {})
        sentences.append(
            f"Trained again on {'; '.join(done['rerun_on'])} at commit `{done['commit']}`, {done['date']}: "
            f"{done['runs']} of its runs, reproduced {outcome}"
            + (_spread_clause(spread) if spread and done["identical"] < done["runs"] else "")
            + " (`python -m bnnrepro.fidelity reproduce`)."
        )
    return sentences


def _spread_clause(spread: dict[str, dict]) -> str:
    """How far apart the reproduction's test metrics are (`relative_differences`), as a clause."""
    typical = float(np.median([values["median"] for values in spread.values()]))
    largest = max(spread, key=lambda metric: spread[metric]["max"])
    widest = max(spread, key=lambda metric: spread[metric]["above_1_percent"])
    return (
        f"; the test metrics' relative differences: typically {typical:.2g} (the median metric's median over the "
        f"runs), at most {spread[largest]['max']:.2g} ({largest}), above 1% in at most "
        f"{spread[widest]['above_1_percent']:.0%} of the runs ({widest})"
    )

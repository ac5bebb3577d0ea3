"""Where a built tree's wall time went: its jobs by rule and, for training, by study, with the seconds each study's
runs spent training (the `train_seconds` of their metrics.json) against their jobs' wall time. A run that several
studies plan (one run folder) counts for the first of them in name order.

Reads the start and end time Snakemake records for every output (.snakemake/metadata/); a job with several outputs
(the same `job_hash`) counts once, from its earliest start to its latest end. The DAG's wall time is from the first
job's start to the last job's end.
Usage: python -m benchmarks.job_times [PROJECT]     (default: the current folder)
"""

from __future__ import annotations

import argparse
import base64
import json
from collections import defaultdict
from pathlib import Path

from bnnrepro.layout import RUN_METRICS, parse_run_path
from bnnrepro.pipeline.studies import available_studies, load_study
from bnnrepro.train_configs import SCALES


def recorded_jobs(project: Path) -> list[dict]:
    """One record per job: rule, start, end and its outputs (paths relative to the project)."""
    jobs: dict[tuple, dict] = {}
    metadata = project / ".snakemake" / "metadata"
    if not metadata.is_dir():
        raise SystemExit(f"{project}: no Snakemake records in {metadata}; build the tree first (snakemake --cores N)")
    for record in (path for path in metadata.rglob("*") if path.is_file()):
        meta = json.loads(record.read_text())
        if meta.get("starttime") is None or meta.get("endtime") is None:
            continue
        # Snakemake names the record by the output's urlsafe base64, cut into '@'-prefixed folders when long
        encoded = "".join(part.removeprefix("@") for part in record.relative_to(metadata).parts)
        output = base64.urlsafe_b64decode(encoded).decode()
        job = jobs.setdefault((meta["rule"], meta["job_hash"]), {
            "rule": meta["rule"], "start": meta["starttime"], "end": meta["endtime"], "outputs": []
        })  # fmt: skip
        job["start"], job["end"] = min(job["start"], meta["starttime"]), max(job["end"], meta["endtime"])
        job["outputs"].append(output)
    return list(jobs.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("project", nargs="?", type=Path, default=Path("."))
    project = parser.parse_args(argv).project
    jobs = recorded_jobs(project)
    wall = max(job["end"] for job in jobs) - min(job["start"] for job in jobs)
    print(
        f"{len(jobs)} jobs, DAG wall {wall:.0f} s, jobs' wall in total {sum(j['end'] - j['start'] for j in jobs):.0f} s"
    )
    by_rule = defaultdict(list)
    for job in jobs:
        by_rule[job["rule"]].append(job["end"] - job["start"])
    print(f"\n{'rule':22s} {'jobs':>5s} {'wall s':>8s} {'mean s':>7s} {'max s':>7s}")
    for rule, seconds in sorted(by_rule.items(), key=lambda item: -sum(item[1])):
        print(
            f"{rule:22s} {len(seconds):5d} {sum(seconds):8.1f} {sum(seconds) / len(seconds):7.2f} {max(seconds):7.1f}"
        )
    studies = defaultdict(lambda: {"runs": 0, "wall": 0.0, "train": 0.0, "longest": (0.0, "")})
    planned_by = {}
    for name in reversed(available_studies()):
        planned_by.update({run.folder: name for scale in SCALES for run in load_study(name).runs(scale)})
    for job in (j for j in jobs if j["rule"] == "train"):
        metrics = next(o for o in job["outputs"] if o.endswith(RUN_METRICS))
        run = parse_run_path(metrics)
        study = studies[planned_by.get(str(run.folder), "(no study plans it now)")]
        seconds = job["end"] - job["start"]
        study["runs"] += 1
        study["wall"] += seconds
        study["train"] += json.loads((project / metrics).read_text())["train_seconds"]
        study["longest"] = max(study["longest"], (seconds, run.run))
    print(f"\n{'study':18s} {'runs':>5s} {'job wall s':>10s} {'training s':>10s} {'share':>6s}  longest run")
    for name, study in sorted(studies.items(), key=lambda item: -item[1]["wall"]):
        longest, run = study["longest"]
        print(f"{name:18s} {study['runs']:5d} {study['wall']:10.1f} {study['train']:10.1f} "
              f"{100 * study['train'] / study['wall']:5.0f}%  {longest:.0f} s {run}")  # fmt: skip


if __name__ == "__main__":
    main()

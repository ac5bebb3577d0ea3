"""Keep what a tree's finished runs of a study at one scale show, as small files: their tidy metrics, the study's
tables (ours beside the published numbers, by the same functions the workflow draws them with), the check of each
caption claim (`bnnrepro.artifacts.claims`) and where and how long they ran. No checkpoint or array is kept: the
fidelity document is generated from these files alone.

The runs may be a part of the study's grid (those that finished, e.g. the ones a CPU reaches at `paper`); the
provenance says which part.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from bnnrepro import layout
from bnnrepro.aggregate import tidy_metrics
from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.artifacts.registry import implementations
from bnnrepro.artifacts.render import compare_with_published
from bnnrepro.studies import Run, load_study

CLAIMS_FILE, PROVENANCE_FILE, METRICS_FILE, TABLES = "claims.csv", "provenance.json", "metrics.csv", "tables"


def _commit(tree: Path) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown (not a git checkout)"


def finished_runs(tree: Path, study_name: str, scale: str) -> list[Run]:
    return [run for run in load_study(study_name).runs(scale) if (tree / run.file(layout.RUN_METRICS)).is_file()]


def grid_part(runs: list[Run], all_runs: list[Run]) -> str:
    """Which part of the grid `runs` are: 'the whole grid', or the values each varied key takes."""
    if len(runs) == len(all_runs):
        return f"the whole grid, {len(runs)} runs"
    values: dict[str, set] = {}
    for run in runs:
        for key, value in [("method", run.method), ("dataset", run.dataset), *run.hparams, ("seed", run.seed)]:
            values.setdefault(key.rsplit(".", 1)[-1], set()).add(value)
    listed = "; ".join(f"{key} in {{{', '.join(map(str, sorted(v, key=_value_order)))}}}" for key, v in values.items())
    return f"{len(runs)} of the grid's {len(all_runs)} runs: {listed}"


def _value_order(value: object) -> tuple:
    """Numbers in numeric order, then the other values by their text."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return (not number, value if number else str(value))


def artifact_context(tree: Path, runs: list[Run], scale: str, artifact_id: str, metrics: Path) -> ArtifactContext:
    """The context the workflow gives the artifact's draw function, over those of `runs` whose file it draws has been
    made, with the tidy metrics `metrics` always set (claims about a figure drawn from runs may rest on the metrics
    too)."""
    declaration = declarations(scale)[artifact_id]
    candidates = [tree / run.file(declaration.run_file) for run in runs if declaration.reads(run)]
    run_files = [path for path in candidates if path.is_file()]
    study = runs[0].study
    return ArtifactContext(study, scale, metrics, [tree / f for f in declaration.data_files], run_files)


def collect(tree: Path, study_name: str, scale: str, out: Path, wall_seconds: float | None = None) -> Path:
    """Write out/<scale>/<study>/ from the study's finished runs in `tree`: metrics.csv, tables/<stem>.csv,
    claims.csv, provenance.json. `wall_seconds`: the batch's wall time, where measured."""
    study = load_study(study_name)
    runs = finished_runs(tree, study_name, scale)
    if not runs:
        raise FileNotFoundError(f"{tree}: no finished run of {study_name} at {scale}; train some first")
    folder = out / scale / study_name
    shutil.rmtree(folder / TABLES, ignore_errors=True)  # the other files are overwritten; findings.yaml is kept
    (folder / TABLES).mkdir(parents=True)
    tidy = tidy_metrics(study_name, scale, tree, runs)
    tidy.to_csv(folder / METRICS_FILE, index=False)

    drawn, rows = implementations(), []
    for artifact_id in study.artifacts:
        context = artifact_context(tree, runs, scale, artifact_id, folder / METRICS_FILE)
        if drawn[artifact_id].output == "table":
            table = compare_with_published(artifact_id, drawn[artifact_id].draw(context), context.uses_standin())
            table.to_csv(folder / TABLES / f"{drawn[artifact_id].stem}.csv", index=False)
        for claim in claims_of(artifact_id):
            outcome = check(claim, context)
            rows.append({"artifact": artifact_id, "claim": claim.text, "holds": outcome.holds,
                         "evidence": outcome.evidence})  # fmt: skip
    pd.DataFrame(rows, columns=["artifact", "claim", "holds", "evidence"]).to_csv(folder / CLAIMS_FILE, index=False)

    train_seconds = tidy[tidy["metric"] == "train_seconds"]["value"]
    provenance = {
        "study": study_name, "scale": scale, "commit": _commit(tree),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "collected": datetime.now(UTC).strftime("%Y-%m-%d"), "runs": len(runs),
        "grid": grid_part(runs, study.runs(scale)), "standin": bool(tidy["standin"].any()),
        "train_seconds": round(float(train_seconds.sum()), 1),
        "longest_run_seconds": round(float(train_seconds.max()), 1), "wall_seconds": wall_seconds,
    }  # fmt: skip
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")
    return folder

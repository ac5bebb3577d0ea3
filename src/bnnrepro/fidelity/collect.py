"""Keep what a built tree shows about a study at one scale as small files: its tidy metrics, its tables (ours
beside the published numbers), the check of each caption claim (`bnnrepro.fidelity.claims`) and where and how long
it ran. No checkpoint or array is kept: the fidelity document is generated from these files alone.
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
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.fidelity.claims import claims_of
from bnnrepro.studies import load_study

CLAIMS_FILE, PROVENANCE_FILE, METRICS_FILE, TABLES = "claims.csv", "provenance.json", "metrics.csv", "tables"


def _commit(tree: Path) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown (not a git checkout)"


def artifact_context(tree: Path, study_name: str, scale: str, artifact_id: str) -> ArtifactContext:
    """The context the workflow gives the artifact's draw function at `scale` in `tree`, with the study's tidy
    metrics always set (claims about a figure drawn from runs may rest on the metrics too)."""
    declaration = declarations(scale)[artifact_id]
    runs = [
        tree / run.file(declaration.run_file)
        for run in load_study(study_name).runs(scale)
        if declaration.run_file is not None
        and run.method in declaration.methods
        and (not declaration.datasets or run.dataset in declaration.datasets)
    ]
    metrics = tree / layout.study_metrics_file(scale, study_name)
    return ArtifactContext(study_name, scale, metrics, [tree / f for f in declaration.data_files], runs)


def collect(
    tree: Path, study_name: str, scale: str, out: Path, wall_seconds: float | None = None, grid: str | None = None
) -> Path:
    """Write out/<scale>/<study>/: metrics.csv, tables/<stem>.csv, claims.csv, provenance.json. `wall_seconds`: the
    batch's wall time, where measured; `grid`: which part of the study's grid ran, where a subset did."""
    study = load_study(study_name)
    folder = out / scale / study_name
    if folder.exists():
        shutil.rmtree(folder)
    (folder / TABLES).mkdir(parents=True)
    metrics = tree / layout.study_metrics_file(scale, study_name)
    if not metrics.is_file():
        raise FileNotFoundError(f"{metrics}: no tidy metrics of {study_name} at {scale} in {tree}; build it first")
    shutil.copy2(metrics, folder / METRICS_FILE)

    manifest = json.loads((tree / layout.report_manifest_file(_manifest_scale(tree))).read_text())
    base = manifest["provenance"]["scale"]
    drawn_at = {a["id"]: a.get("scale", base) for a in manifest["artifacts"] if a["status"] == "reproduced"}
    rows = []
    for artifact_id in study.artifacts:
        declaration = declarations(scale)[artifact_id]
        if declaration.output == "table":
            if (drawn := drawn_at.get(artifact_id)) != scale:
                raise ValueError(f"{artifact_id}: the tree's report drew it at {drawn}, not {scale}")
            source = tree / layout.artifact_file("table", "csv", declaration.stem)
            shutil.copy2(source, folder / TABLES / source.name)
        context = artifact_context(tree, study_name, scale, artifact_id)
        for claim in claims_of(artifact_id):
            outcome = claim.check(context)
            rows.append({"artifact": artifact_id, "claim": claim.text, "holds": outcome.holds,
                         "evidence": outcome.evidence})  # fmt: skip
    pd.DataFrame(rows, columns=["artifact", "claim", "holds", "evidence"]).to_csv(folder / CLAIMS_FILE, index=False)

    tidy = pd.read_csv(metrics)
    train_seconds = tidy[tidy["metric"] == "train_seconds"]["value"]
    provenance = {
        "study": study_name, "scale": scale, "commit": _commit(tree),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "collected": datetime.now(UTC).strftime("%Y-%m-%d"), "runs": int(tidy["run"].nunique()),
        "standin": bool(tidy["standin"].any()), "train_seconds": round(float(train_seconds.sum()), 1),
        "longest_run_seconds": round(float(train_seconds.max()), 1) if len(train_seconds) else None,
        "wall_seconds": wall_seconds, "grid": grid,
    }  # fmt: skip
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")
    return folder


def _manifest_scale(tree: Path) -> str:
    """The base scale of the tree's last report (its manifest is results/<scale>/report_manifest.json)."""
    manifests = sorted((tree / layout.RESULTS).glob("*/report_manifest.json"), key=lambda p: p.stat().st_mtime)
    if not manifests:
        raise FileNotFoundError(f"{tree}: no report manifest; build the report first")
    return manifests[-1].parent.name

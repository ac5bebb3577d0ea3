"""The report's manifest: every catalog artifact with its status, files, notes and provenance.

`python -m bnnrepro.report.manifest --config JSON --out results/<scale>/report_manifest.json`
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.registry import catalog, implementations
from bnnrepro.files import write_atomic
from bnnrepro.paths import project_root
from bnnrepro.studies import load_study

PACKAGES = ("torch", "torchsde", "snakemake", "dvc", "hydra-core", "numpy", "pandas", "seaborn", "typst")


def git_provenance(root: Path) -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        return {"git_commit": git("rev-parse", "HEAD"), "git_dirty": bool(git("status", "--porcelain", "-uno"))}
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"git_commit": "unknown (not a git checkout)", "git_dirty": False}


def artifact_files(stem: str, output: str) -> dict[str, str]:
    if output == "figure":
        return {ext: f"reports/figures/{stem}.{ext}" for ext in ("png", "pdf")}
    return {ext: f"reports/tables/{stem}.{ext}" for ext in ("csv", "md", "tex")}


def uses_standin(metrics_file: Path) -> bool:
    return metrics_file.exists() and bool(pd.read_csv(metrics_file, usecols=["standin"])["standin"].any())


def build_manifest(config: dict) -> dict:
    scale, root = config["scale"], project_root()
    drawn = implementations()
    reproduced = {}
    for name in config["studies"]:
        study = load_study(name)
        standin = uses_standin(root / f"results/{scale}/{name}/metrics.csv")
        for artifact_id in study.artifacts:
            reproduced[artifact_id] = (study, drawn[artifact_id], standin)
    artifacts = []
    for entry in catalog()["artifacts"]:
        item = {key: entry.get(key) for key in ("id", "paper", "title", "kind", "caption", "shows")}
        if entry["kind"] == "diagram":
            item.update(status="diagram", diagram_reason=entry["diagram_reason"], files={})
        elif entry["id"] in reproduced:
            study, implementation, standin = reproduced[entry["id"]]
            item.update(
                status="reproduced", study=study.name, standin=standin, note=implementation.note(scale),
                files=artifact_files(implementation.stem, implementation.output),
            )  # fmt: skip
        else:
            item.update(status="not yet reproduced", files={})
        artifacts.append(item)
    provenance = {
        **git_provenance(root),
        "scale": scale,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": f"snakemake --config scale={scale}",
        "config": config,
        "versions": {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}},
    }
    return {
        "root": str(root), "title": "bnnrepro: reproduction report", "provenance": provenance,
        "papers": catalog()["papers"], "artifacts": artifacts,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report.manifest")
    parser.add_argument("--config", required=True, help="the workflow config as JSON")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    manifest = build_manifest(json.loads(args.config))
    write_atomic(args.out, lambda tmp: tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False)))


if __name__ == "__main__":
    main()

"""The report's manifest: every catalog artifact with its status, files, notes and provenance, and the results
table of each study of your own (`paper: own`).

`python -m bnnrepro.report.manifest --config JSON --out results/<scale>/report_manifest.json`

Each reproduced artifact names the function that drew it, as module, file and line at the checkout's commit;
the workflow makes the files of those functions inputs of the manifest job, so a moved line rebuilds it. Each
carries its verdict against the paper (`bnnrepro.report.verdicts`), made from the checks its job wrote, and every
artifact with committed paper-scale results their verdict (`bnnrepro.report.paper_verdicts`), whatever the scale built.

The provenance records the command that ran the workflow (the environment variable INVOCATION_VARIABLE, which
the Snakefile sets; a command of thousands of targets with its middle ones left out, `invocation_record`) and its
whole configuration. The command is not part of the job's rerun decision on purpose:
it says which command built this manifest, and a later command that finds it up to date did not.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from bnnrepro import layout
from bnnrepro.artifacts.registry import catalog, implementations
from bnnrepro.files import read_json, write_atomic
from bnnrepro.paths import project_root
from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.pipeline.sources import PACKAGE_DIR
from bnnrepro.pipeline.studies import configured_scale, load_study
from bnnrepro.report import INVOCATION_VARIABLE
from bnnrepro.report import files as report_files
from bnnrepro.report.paper_verdicts import paper_verdicts
from bnnrepro.report.run_checks import study_run_checks
from bnnrepro.report.verdicts import artifact_verdict

PACKAGES = ("torch", "torchsde", "snakemake", "dvc", "hydra-core", "numpy", "pandas", "seaborn", "typst")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def git_provenance(root: Path) -> dict:
    try:
        return {
            "git_commit": _git(root, "rev-parse", "HEAD"),
            "git_dirty": bool(_git(root, "status", "--porcelain", "-uno")),
        }
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"git_commit": "unknown (not a git checkout)", "git_dirty": False}


def code_commit(root: Path) -> dict:
    """The checkout's short commit, and whether tracked files under src/ differ from it (`commit` is None when
    `root` is not a git checkout)."""
    try:
        commit = _git(root, "rev-parse", "--short", "HEAD")
        local_changes = bool(_git(root, "status", "--porcelain", "--untracked-files=no", "--", "src"))
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"commit": None, "local_changes": False}
    return {"commit": commit, "local_changes": local_changes}


def drawn_by(draw: Callable, root: Path, commit: dict) -> dict:
    """Where a draw function is: its qualified name, its file (relative to `root`, or to the installed package's
    folder) and the line its definition starts on (its first decorator), at `commit` (`code_commit`)."""
    file = Path(inspect.getsourcefile(draw)).resolve()
    base = root if file.is_relative_to(root) else PACKAGE_DIR.parent
    return {
        "function": f"{draw.__module__}.{draw.__qualname__}", "file": file.relative_to(base).as_posix(),
        "line": inspect.getsourcelines(draw)[1], **commit,
    }  # fmt: skip


def uses_standin(metrics_file: Path) -> bool:
    return metrics_file.exists() and bool(pd.read_csv(metrics_file, usecols=["standin"])["standin"].any())


def invocation() -> str:
    """The command that ran the workflow, as the Snakefile recorded it."""
    return os.environ.get(INVOCATION_VARIABLE, "python -m bnnrepro.report.manifest (not run by snakemake)")


def verdict_fields(root: Path, stem: str, scale: str, uses: str, standin: bool) -> dict:
    """The artifact's checks (reports/checks/<stem>.json: caption claims, table cells) and its verdict; an empty
    verdict where the checks file is missing (the report then stops with its name)."""
    checks_file = root / report_files.artifact_checks_file(stem)
    if not checks_file.is_file():
        return {"verdict": None, "checks_file": report_files.artifact_checks_file(stem)}
    checks = read_json(checks_file, "artifact checks file")
    verdict = artifact_verdict(scale, uses, standin, checks)
    return {"verdict": verdict.label, "verdict_reason": verdict.reason, **checks}


def build_manifest(config: dict) -> dict:
    """The manifest of a workflow run with `config`; each study's artifacts are those of its scale (config
    'study_scales', else 'scale')."""
    scale, root = config["scale"], project_root()
    drawn, commit, paper = implementations(), code_commit(root), paper_verdicts(root)
    reproduced, own_studies = {}, []
    for name in config["studies"]:
        study, study_scale = load_study(name), configured_scale(config, name)
        metrics_file = root / layout.study_metrics_file(study_scale, name)
        standin = uses_standin(metrics_file)
        checks = study_run_checks(study, study_scale, metrics_file)
        if study.is_own:
            sections = [{"task": task, "datasets": names, "files": report_files.own_study_files(name, task)}
                        for task, names in study.datasets_by_task(study_scale).items()]  # fmt: skip
            own_studies.append(
                {"study": name, "description": study.description, "scale": study_scale, "standin": standin,
                 "sections": sections}
            )  # fmt: skip
        for artifact_id in study.artifacts:
            reproduced[artifact_id] = (study, study_scale, drawn[artifact_id], standin, checks)
    artifacts = []
    for entry in catalog()["artifacts"]:
        item = {key: entry.get(key) for key in ("id", "paper", "title", "kind", "caption", "shows")}
        item["published_points"] = entry.get("published_points", {}).get("note")
        item["paper_verdict"] = paper.get(entry["id"])  # the committed paper-scale verdict, at any scale
        if entry["kind"] == "diagram":
            item.update(status="diagram", diagram_reason=entry["diagram_reason"], files={})
        elif entry["id"] in reproduced:
            study, study_scale, implementation, standin, checks = reproduced[entry["id"]]
            missing = "missing" in checks
            item.update(
                status="not yet reproduced" if missing else "reproduced", **checks,
                study=study.name, scale=study_scale, standin=standin,
                note=implementation.note(study_scale),
                files=report_files.artifact_files(implementation.output, implementation.stem),
                drawn_by=drawn_by(implementation.draw, root, commit),
            )  # fmt: skip
            if not missing:
                item.update(verdict_fields(root, implementation.stem, study_scale, implementation.uses, standin))
        else:
            item.update(status="not yet reproduced", files={})
        artifacts.append(item)
    provenance = {
        **git_provenance(root),
        "scale": scale,
        "study_scales": config.get("study_scales", {}),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": invocation(),
        "config": config,
        "versions": {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}},
    }
    return {
        "root": str(root), "title": "bnnrepro: reproduction report", "provenance": provenance,
        "papers": catalog()["papers"], "artifacts": artifacts, "own_studies": own_studies,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report.manifest")
    parser.add_argument("--config", required=True, help="the workflow config as JSON")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    manifest = build_manifest(json.loads(args.config))
    write_atomic(args.out, lambda tmp: tmp.write_text(json.dumps(manifest, indent=1, ensure_ascii=False)))


if __name__ == "__main__":
    freeze_imported_objects()
    main()

"""Shared helpers: a copy of the project in a temporary folder, and commands run inside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_FILES = [
    "Snakefile",
    "workflow",
    "config",
    "profiles",
    "src",
    "dvc.yaml",
    "data/dvc.yaml",
    ".dvcignore",
    "environment.yml",
]


def environment(root: Path) -> dict[str, str]:
    """The environment of a workflow command: this interpreter's bin first, the project root set."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["BNNREPRO_ROOT"] = str(root)
    return env


def run(args: list[str], cwd: Path, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a command in `cwd`; on failure show its output."""
    result = subprocess.run(args, cwd=cwd, env=environment(cwd), capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def copy_project(destination: Path) -> Path:
    """The workflow's files (no results, no environment) in `destination`."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    destination.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def _offline_prefix() -> list[str]:
    """`unshare -rn`: run a command in a network namespace with no route anywhere, where available."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True) if shutil.which("unshare") else None
    return ["unshare", "-rn"] if probe is not None and probe.returncode == 0 else []


OFFLINE = _offline_prefix()
needs_offline = pytest.mark.skipif(not OFFLINE, reason="`unshare -rn` (a network namespace) is not available here")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)

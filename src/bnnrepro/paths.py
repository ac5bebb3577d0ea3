"""Where the project's configuration lives; what the workflow writes is named in bnnrepro.layout."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path


def project_root() -> Path:
    """The folder holding `config/` (the Snakemake working directory); BNNREPRO_ROOT overrides."""
    return _resolved(os.environ.get("BNNREPRO_ROOT", "."), os.getcwd())


@cache
def _resolved(root: str, cwd: str) -> Path:
    return (Path(cwd) / root).resolve()


def config_dir() -> Path:
    return project_root() / "config"


def train_config_dir() -> Path:
    return config_dir() / "train"


def studies_dir() -> Path:
    return config_dir() / "studies"

"""Where the project's configuration lives; what the workflow writes is named in bnnrepro.layout."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The folder holding `config/` (the Snakemake working directory); BNNREPRO_ROOT overrides."""
    return Path(os.environ.get("BNNREPRO_ROOT", ".")).resolve()


def train_config_dir() -> Path:
    return project_root() / "config" / "train"


def studies_dir() -> Path:
    return project_root() / "config" / "studies"

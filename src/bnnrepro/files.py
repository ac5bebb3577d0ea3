"""Reading and writing the project's files: atomic writes (a reader, or a later job, never sees a half-written
file) and YAML read with libyaml's parser where PyYAML has it (the workflow reads the catalog, the studies and the
registry on every `snakemake` call; the pure-Python parser takes tenths of a second for them)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it over `path`.

    The temporary file keeps the suffix, so writers that pick the format from it (savefig, savez) work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    write(tmp)
    os.replace(tmp, path)


def read_yaml(path: Path) -> Any:
    """The parsed YAML file (as `yaml.safe_load` parses it)."""
    return yaml.load(Path(path).read_text(), Loader=SafeLoader)

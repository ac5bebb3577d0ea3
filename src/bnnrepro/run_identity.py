"""Whose a run's result is: the identity each metrics.json carries, and the check of a result against its run.

The workflow plans each run from its code, its config/train files and its overrides; it passes the job two digests
(config `identity`): `code`, of the source files the job runs, and `inputs`, of those files, the config files, the
overrides and the CPU arithmetic (`bnnrepro.pipeline.run_results`). The job records them in its metrics.json with
its run folder and the digest of the resolved config it wrote beside it (`identity_record`). A result is its run's
own when it names that run folder, its config digest is that of the config.yaml beside it, and it has every key a
reader takes, each metric a number (`result_problem`): so a metrics.json copied from another run, one left beside
another config by a checkout, or one with NaN where a number is due, is told apart, by content, not by file times.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

RESULT_KEYS = ("identity", "metrics", "history", "train_seconds", "standin")
"""The keys of a run's metrics.json that its readers take (aggregation, the report, the figures)."""


def identity_record(cfg: Mapping, config_digest: str) -> dict:
    """What a finished run of config `cfg` records of itself: its folder, its resolved config's digest, and the
    workflow's digests of its code and inputs (config `identity`; None for a job run by hand)."""
    return {"run": cfg["run_dir"], "config_digest": config_digest, **cfg["identity"]}


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, computed once per process for each (path, size, modification time)."""
    stat = path.stat()
    return _file_digest(path, stat.st_size, stat.st_mtime_ns)


@cache
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest_of(files: Iterable[str], *values: str, root: Path = Path()) -> str:
    """SHA-256 over each file's project path and content digest (`files`: paths relative to `root`), then `values`."""
    digest = hashlib.sha256()
    for name in sorted(set(files)):
        digest.update(f"{name}\0{file_digest(root / name)}\0".encode())
    for value in values:
        digest.update(f"{value}\0".encode())
    return digest.hexdigest()


def result_problem(result: object, run_dir: str, config_file: Path) -> str | None:
    """Why `result` (a parsed metrics.json) is not the result of the run in `run_dir`, whose resolved config is
    `config_file`, or None when it is: a key a reader takes is missing, a metric is not a finite number, it names
    another run, or its config digest is not that of the config beside it."""
    if not isinstance(result, dict):
        return "it holds no JSON object"
    missing = [key for key in RESULT_KEYS if key not in result]
    if missing:
        return f"it lacks {', '.join(map(repr, missing))} (written by another version of the code, or edited)"
    not_numbers = [name for name, value in {**result["metrics"], "train_seconds": result["train_seconds"]}.items()
                   if not isinstance(value, int | float) or not math.isfinite(value)]  # fmt: skip
    if not_numbers:
        return f"{', '.join(map(repr, not_numbers))} {'is' if len(not_numbers) == 1 else 'are'} not a finite number"
    recorded = result["identity"]
    if recorded.get("run") != run_dir:
        return f"it is the result of another run ({recorded.get('run')})"
    if not config_file.is_file() or file_digest(config_file) != recorded.get("config_digest"):
        return f"it was not made with the {config_file.name} beside it"
    return None

"""Whose a run's result is: the identity each metrics.json carries, and the check of a result against its run.

The workflow plans each run from its code, its config/train files and its overrides; it passes the job two digests
(config `identity`): `code`, of the source files the job runs, and `inputs`, of those files, the config files, the
overrides and the CPU arithmetic (`bnnrepro.pipeline.run_results`). The job records them in its metrics.json with
its run folder, the digest of the resolved config it wrote beside it and a seal, the digest of every other value it
wrote (`identity_record`). A result is its run's own when it names that run folder, its config digest is that of the
config.yaml beside it, it has every key a reader takes and its values are those its job wrote (`result_problem`):
so a metrics.json copied from another run, one left beside another config by a checkout, or one edited after its
run (a NaN put where the job wrote a number, a key taken out) is told apart by content, not by file times. A NaN
the job itself wrote (the NLL of a predictor without variance, `bnnrepro.metrics.gaussian_predictive_nll`) is its
result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

RESULT_KEYS = ("identity", "metrics", "history", "train_seconds", "standin")
"""The keys of a run's metrics.json that its readers take (aggregation, the report, the figures)."""


def identity_record(cfg: Mapping, config_digest: str, result: Mapping) -> dict:
    """What a finished run of config `cfg` records of itself beside its `result` (the other values of its
    metrics.json): its folder, its resolved config's digest, the workflow's digests of its code and inputs (config
    `identity`; None for a job run by hand) and the seal of `result` (`result_seal`)."""
    return {"run": cfg["run_dir"], "config_digest": config_digest, **cfg["identity"], "seal": result_seal(result)}


def result_seal(result: Mapping) -> str:
    """SHA-256 of a result's values but its identity, as JSON with sorted keys (a read result gives the same text)."""
    values = {key: value for key, value in result.items() if key != "identity"}
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, computed once per process for each (path, size, times)."""
    stat = path.stat()
    return _file_digest(path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@cache
def _file_digest(path: Path, size: int, mtime_ns: int, ctime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest_of(files: Iterable[str], *values: str, root: Path = Path()) -> str:
    """SHA-256 of a line '<sha256 of the file>  <path>' per file (`files`: paths relative to `root`) in path order,
    the format of `sha256sum`, then a line per value: the committed batches' code digests
    (`bnnrepro.fidelity.code_digest`) are this digest of their code and config files."""
    lines = [f"{file_digest(root / name)}  {name}\n" for name in sorted(set(files))]
    return hashlib.sha256("".join([*lines, *(f"{value}\n" for value in values)]).encode()).hexdigest()


def result_problem(result: object, run_dir: str, config_file: Path) -> str | None:
    """Why `result` (a parsed metrics.json) is not the result of the run in `run_dir`, whose resolved config is
    `config_file`, or None when it is: a key a reader takes is missing, it names another run, its config digest is
    not that of the config beside it, or its values are not those its job wrote."""
    if not isinstance(result, dict):
        return "it holds no JSON object"
    missing = [key for key in RESULT_KEYS if key not in result]
    if missing:
        return f"it lacks {', '.join(map(repr, missing))} (written by another version of the code, or edited)"
    recorded = result["identity"]
    if recorded.get("run") != run_dir:
        return f"it is the result of another run ({recorded.get('run')})"
    if not config_file.is_file() or file_digest(config_file) != recorded.get("config_digest"):
        return f"it was not made with the {config_file.name} beside it"
    if recorded.get("seal") != result_seal(result):
        return "its values are not those its job wrote (edited since)"
    return None

"""Results of slow work done while Snakemake builds the DAG, kept between `snakemake` calls.

A result is recorded under a key with a digest of everything the work read (files, versions); a later call that
computes the same digest reads the result back instead of doing the work again, and any edit to one of those
files changes the digest, so a stale result is never used. The record is one JSON file
(`bnnrepro.layout.DAG_CACHE`), rewritten atomically.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from bnnrepro.files import write_atomic
from bnnrepro.paths import project_root

T = TypeVar("T")


def files_digest(files: Iterable[Path], *salt: str) -> str:
    """SHA-256 of the salt strings and of each file's path and bytes (a missing file counts by its path alone). A
    file of the project counts by its path in the project, so that a copy of the project (or the project moved)
    keeps its record."""
    root = project_root()
    digest = hashlib.sha256("\0".join(salt).encode())
    for file in files:
        digest.update(str(file.relative_to(root) if file.is_relative_to(root) else file).encode() + b"\0")
        if file.is_file():
            digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def cached(record: Path | None, key: str, digest: str, compute: Callable[[], T]) -> T:
    """`compute()`'s JSON-serialisable result, read from `record` when it holds `key` with this `digest`; otherwise
    computed and recorded. With `record` None, always computed."""
    entries = _read(record) if record is not None else {}
    entry = entries.get(key)
    if isinstance(entry, dict) and entry.get("digest") == digest:
        return entry["value"]
    value = compute()
    if record is not None:
        entries = _read(record)  # another process may have recorded other keys meanwhile
        entries[key] = {"digest": digest, "value": value}
        write_atomic(record, lambda tmp: tmp.write_text(json.dumps(entries, indent=1, sort_keys=True)))
    return value


def cached_each(
    record: Path | None, key: str, signatures: Mapping[str, object], compute: Callable[[str], T]
) -> dict[str, T]:
    """{name: compute(name)} for each name of `signatures`, read from `record` where a name's signature (what JSON
    holds, such as the sizes and times of the files `compute` reads) is the one recorded with it under `key`: only the
    names whose signature changed are computed again, and the record keeps only the names given."""
    entry = _read(record).get(key) if record is not None else None
    known = entry.get("value") if isinstance(entry, dict) and isinstance(entry.get("value"), dict) else {}
    fresh = {
        name: known[name]
        if isinstance(known.get(name), dict) and known[name].get("signature") == signature
        else {"signature": signature, "value": compute(name)}
        for name, signature in signatures.items()
    }
    if record is not None and fresh != known:
        entries = _read(record)  # another process may have recorded other keys meanwhile
        entries[key] = {"digest": None, "value": fresh}
        write_atomic(record, lambda tmp: tmp.write_text(json.dumps(entries, indent=1, sort_keys=True)))
    return {name: item["value"] for name, item in fresh.items()}


def _read(record: Path) -> dict:
    try:
        entries = json.loads(record.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return entries if isinstance(entries, dict) else {}

"""Checks that a result file can be read, so that a truncated or overwritten one is caught with its path and fix
(`files.UnreadableFileError`) rather than by the job that reads it.

The workflow checks the prepared data files before any job starts (`verify_files`): a corrupt data file is newer
than the runs that read it, so Snakemake would start retraining them, deleting their good results first, only for
each job to fail on the data. `result_timestamps.record` checks every result it records (`verify_result`), so that
a corrupt file never gets an md5 in the record that DVC caches and pushes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from bnnrepro.files import read_json, verify_archive
from bnnrepro.pipeline.dag_cache import cached

ARCHIVE_KINDS = {".npz": "prepared dataset or evaluation (.npz)", ".pt": "checkpoint"}


def verify_result(path: Path) -> None:
    """Check a result by its kind: a zip archive (.npz, .pt) member by member against its CRC, JSON parsed; other
    files (figures, tables, logs) are not checked."""
    path = Path(path)
    if path.suffix in ARCHIVE_KINDS:
        verify_archive(path, ARCHIVE_KINDS[path.suffix])
    elif path.suffix == ".json":
        read_json(path)


def verify_files(paths: Iterable[str], record: Path | None = None) -> None:
    """`verify_result` each of `paths` that exists. With `record` (`bnnrepro.pipeline.dag_cache`), files whose sizes and
    modification times are those of the last check are not read again."""
    existing = sorted(p for p in set(paths) if Path(p).is_file())
    stats = [(p, stat.st_size, stat.st_mtime_ns) for p in existing for stat in [Path(p).stat()]]

    def verify_all() -> int:
        for path in existing:
            verify_result(Path(path))
        return len(existing)

    cached(record, "verified_files", json.dumps(stats), verify_all)

"""Timestamps of the workflow's results, recorded after a run and restored after a DVC checkout.

Snakemake decides what to rerun by modification times: an input newer than an output reruns the job.
`dvc pull` / `dvc checkout` write the cached results in an arbitrary order with new modification times,
so a tree restored from a DVC remote would look out of date. The last rule of the workflow records every
result file (size, modification time, md5) in `results/<scale>/timestamps.json`, which DVC caches with
the results. When the workflow starts and finds the recorded files with their recorded content but in a
different time order, it puts their modification times back in the recorded order (`restore`). Files
whose content differs from the record, or a tree with recorded files missing, are left as they are:
Snakemake then reruns what they affect, as for any other change.

Times alone cannot tell results made from other code or configuration: a checkout or pull writes results newer
than a config edited before it. So the record also holds the md5 of every source file of the workflow (its code,
configs and committed paper results, `SOURCE_FOLDERS`) as it was when the results were recorded, all of them up to
date then. Content, not times, decides: at the start, results with their recorded content are put after every source
whose content is the recorded one (a `touch`, a fresh clone: nothing reruns), and a source file whose content is
not the recorded one and that is not newer than the record gets the current time (`outdate_changed_sources`):
Snakemake then reruns exactly the jobs that read it. One newer than the record was edited since, and its time
already reruns them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from bnnrepro.files import write_atomic
from bnnrepro.pipeline.result_checks import verify_result

RESTORED_SPACING_NS = 1000  # restored files are 1 microsecond apart, in recorded order

SOURCE_FOLDERS = ("Snakefile", "workflow", "config", "profiles", "src/bnnrepro", "docs/fidelity/paper")
"""What the workflow's jobs read that no job makes (the stage's deps in dvc.yaml)."""


@dataclass(frozen=True)
class RecordedFile:
    path: str
    size: int
    mtime_ns: int
    md5: str


def file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def workflow_source_files(root: Path = Path()) -> list[str]:
    """The files under `SOURCE_FOLDERS`, relative to `root` (no caches)."""
    files = []
    for name in SOURCE_FOLDERS:
        path = root / name
        found = path.rglob("*") if path.is_dir() else [path] if path.is_file() else []
        files += [str(f.relative_to(root)) for f in found if f.is_file() and "__pycache__" not in f.parts]
    return sorted(files)


def _entries(files: list[str], previous: dict[str, RecordedFile], root: Path, check=None) -> list[RecordedFile]:
    """Size, time and md5 of `files`; the md5 of a file whose size and time equal its `previous` entry is reused,
    any other file is passed to `check` first."""
    entries = []
    for name in sorted(set(files)):
        stat = (root / name).stat()
        known = previous.get(name)
        unchanged = known is not None and (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
        if not unchanged and check is not None:
            check(root / name)
        md5 = known.md5 if unchanged else file_md5(root / name)
        entries.append(RecordedFile(name, stat.st_size, stat.st_mtime_ns, md5))
    return entries


def record(files: list[str], manifest: Path, root: Path = Path(), sources: list[str] = ()) -> int:
    """Write the size, modification time and md5 of `files` (paths relative to `root`), oldest first, and of the
    workflow's `sources`; return the number of `files`. Each result whose size or time changed since the previous
    record is checked first (`verify_result`), so that a corrupt result is never recorded."""
    manifest = root / manifest
    previous = {f.path: f for f in [*load(manifest), *load_sources(manifest)]} if manifest.exists() else {}
    entries = sorted(_entries(files, previous, root, verify_result), key=lambda f: (f.mtime_ns, f.path))
    recorded = {"files": [vars(f) for f in entries], "sources": [vars(f) for f in _entries(sources, previous, root)]}
    text = json.dumps(recorded, indent=1) + "\n"
    write_atomic(manifest, lambda tmp: tmp.write_text(text))
    return len(entries)


def load(manifest: Path) -> list[RecordedFile]:
    return [RecordedFile(**entry) for entry in json.loads(manifest.read_text())["files"]]


def load_sources(manifest: Path) -> list[RecordedFile]:
    """The recorded source files (none in a record written before they were recorded)."""
    return [RecordedFile(**entry) for entry in json.loads(manifest.read_text()).get("sources", [])]


def recorded_content(known: RecordedFile | None, path: Path) -> bool:
    """Whether the file at `path` has the `known` entry's content (its recorded size and time, or else its md5)."""
    if known is None or not path.is_file():
        return False
    stat = path.stat()
    if (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
        return True
    return known.size == stat.st_size and file_md5(path) == known.md5


def changed_sources(
    manifest: Path, sources: list[str], root: Path = Path(), record_time: int | None = None
) -> list[str]:
    """The `sources` not in the record, or whose content is not the recorded one, and that are not newer than the
    record (`record_time`, by default its file's; one newer was edited since: its time reruns what reads it). None
    without a record, or with one that recorded no sources."""
    if not (root / manifest).exists():
        return []
    recorded = {f.path: f for f in load_sources(root / manifest)}
    if not recorded:
        return []
    record_time = (root / manifest).stat().st_mtime_ns if record_time is None else record_time
    return [
        name
        for name in sources
        if (root / name).stat().st_mtime_ns <= record_time and not recorded_content(recorded.get(name), root / name)
    ]


def outdating_time(record_time: int) -> int:
    """The time changed sources get: now, and after the record."""
    return max(time.time_ns(), record_time + 1)


def set_times(times: dict[str, int], root: Path = Path()) -> None:
    """Give each file of `times` its modification time (ns), keeping its access time."""
    for name, mtime_ns in times.items():
        os.utime(root / name, ns=((root / name).stat().st_atime_ns, mtime_ns))


def outdate_changed_sources(manifest: Path, sources: list[str], root: Path = Path()) -> list[str]:
    """Give the current time to the `changed_sources`; return their paths."""
    outdated = changed_sources(manifest, sources, root)
    if outdated:
        set_times(dict.fromkeys(outdated, outdating_time((root / manifest).stat().st_mtime_ns)), root)
    return outdated


def restored_times(manifest: Path, root: Path = Path(), sources: list[str] = ()) -> dict[str, int]:
    """{path: modification time (ns)} that put back the recorded time order of the results after a DVC checkout or
    a clone, or after one of `sources` was touched since the record with its recorded content, later than every
    source whose content is the recorded one; the manifest's own time last. {} when nothing needs it, or the tree is
    not the recorded one.

    Restored times start at the oldest current time among the files (or just after the newest such source), so that
    results checked out after a git clone stay newer than the clone's code and configuration."""
    if not (root / manifest).exists():
        return {}
    recorded = load(root / manifest)
    try:
        stats = [(root / f.path).stat() for f in recorded]
    except FileNotFoundError:
        return {}  # a partial tree: Snakemake reruns what is missing
    if any(s.st_size != f.size for s, f in zip(stats, recorded, strict=True)):
        return {}
    current = [s.st_mtime_ns for s in stats]
    known = {f.path: f for f in load_sources(root / manifest)}
    record_time = (root / manifest).stat().st_mtime_ns
    touched = [
        n for n in sources if (root / n).stat().st_mtime_ns > record_time and recorded_content(known.get(n), root / n)
    ]
    if all(a <= b for a, b in zip(current, current[1:], strict=False)) and not touched:
        return {}  # in recorded order, no source touched since (the usual case: nothing was checked out or touched)
    moved = [f for f, s in zip(recorded, stats, strict=True) if s.st_mtime_ns != f.mtime_ns]
    if any(file_md5(root / f.path) != f.md5 for f in reversed(moved)):
        return {}  # changed content: not a checkout of the recorded run
    current_sources = [name for name in sources if recorded_content(known.get(name), root / name)]
    newest_source = max(((root / name).stat().st_mtime_ns for name in current_sources), default=0)
    base, rank, previous_time, times = max(min(current), newest_source + 1), 0, None, {}
    for entry in recorded:
        if previous_time is not None and entry.mtime_ns != previous_time:
            rank += 1
        previous_time = entry.mtime_ns
        times[entry.path] = base + rank * RESTORED_SPACING_NS
    times[str(manifest)] = base + (rank + 1) * RESTORED_SPACING_NS
    return times


def restore(manifest: Path, root: Path = Path(), sources: list[str] = ()) -> int:
    """Set the `restored_times`; return the number of result files whose times were set (0 when none needed it)."""
    times = restored_times(manifest, root, sources)
    set_times(times, root)
    return max(len(times) - 1, 0)

"""A download's raw files checked by content wherever they are used, not only when fetched.

- `folder_content`: what a raw folder holds, by content (each registry file's md5, None where it is missing; for a
  folder a registry package filled, the content digests it was accepted by when fetched);
- `changed_message` and `missing_message`: what is wrong with it, naming each file, both digests and the fix;
- `raw_record_file`: beside a prepared file (results/data/<name>.raw.json), the content of the raw folder it was
  prepared from, which the prepare step writes, so that data prepared from other raw files is told apart.

The prepare step checks its raw folder (`changed_files`) before it reads it; the workflow checks the raw folders
and the records of the data its runs read before any job (bnnrepro.pipeline.data_checks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from bnnrepro.data.fetch import md5sum
from bnnrepro.data.packages import PACKAGE_ARRAYS
from bnnrepro.data.registry import Download
from bnnrepro.files import write_atomic

RAW_RECORD_SUFFIX = ".raw.json"


def is_package_folder(folder: Path) -> bool:
    """Whether a registry package filled the raw folder (its decoded arrays, checked by content when fetched)."""
    return (Path(folder) / PACKAGE_ARRAYS).is_file()


def registry_content(entry: Download, package: bool = False) -> dict:
    """What the registry says a raw folder of `entry` holds: {"files": {name: md5}}, or for a folder a registry
    package filled, {"content_sha256": {array: digest}}."""
    if package:
        return {"content_sha256": dict(entry.content_sha256)}
    return {"files": {file.name: file.md5 for file in entry.files}}


def folder_content(entry: Download, folder: Path) -> dict:
    """What the raw folder holds, in `registry_content`'s form: each registry file's md5 as found (None where it is
    missing), or a package's content digests."""
    folder = Path(folder)
    if is_package_folder(folder):
        return registry_content(entry, package=True)
    return {"files": {f.name: md5sum(folder / f.name) if (folder / f.name).is_file() else None for f in entry.files}}


def changed_names(entry: Download, found: Mapping[str, str | None]) -> list[str]:
    """The registry files that are there with another md5 (`found`: {name: md5 or None})."""
    return [file.name for file in entry.files if found.get(file.name) not in (None, file.md5)]


def missing_names(entry: Download, found: Mapping[str, str | None]) -> list[str]:
    """The registry files that are not there."""
    return [file.name for file in entry.files if found.get(file.name) is None]


def changed_message(entry: Download, folder: Path, found: Mapping[str, str | None], names: Iterable[str]) -> str:
    """The files `names` of the raw folder whose md5 is not the registry's: each with both digests and sizes, and the
    fix (the fetched file from DVC's cache, or fetched again), none of which accepts the changed file."""
    files, names = {file.name: file for file in entry.files}, list(names)
    described = []
    for name in names:
        path, expected = Path(folder) / name, files[name]
        size = f" ({expected.size} bytes)" if expected.size is not None else ""
        described.append(
            f"{path} has md5 {found[name]} ({path.stat().st_size} bytes), config/datasets.yaml says md5 "
            f"{expected.md5}{size}"
        )
    paths = " ".join(str(Path(folder) / name) for name in names)
    return (
        f"dataset {entry.name}: {'; '.join(described)}: not the file that was fetched (truncated, edited or "
        f"corrupted since). Put the fetched file back from DVC's cache with `dvc checkout --force "
        f"data/dvc.yaml:fetch@{entry.name}`, or delete it (`rm {paths}`) and rerun the workflow, which fetches it "
        "again before it prepares the data again"
    )


def missing_message(entry: Download, folder: Path, names: Iterable[str]) -> str:
    """The registry files the raw folder lacks, and the fix."""
    return (
        f"dataset {entry.name}: {folder} lacks {', '.join(names)}. Put the download back from DVC's cache with "
        f"`dvc checkout data/dvc.yaml:fetch@{entry.name}`, or rerun the workflow, which fetches the missing files again"
    )


def changed_files(entry: Download, folder: Path, content: Mapping | None = None) -> str | None:
    """Why the raw folder's files are not the entry's (a file changed or missing), with the fix; None where each is
    (or a registry package filled the folder). `content`: its `folder_content`, where already computed."""
    found = (content or folder_content(entry, folder)).get("files")
    if found is None:
        return None
    if changed := changed_names(entry, found):
        return changed_message(entry, folder, found, changed)
    if missing := missing_names(entry, found):
        return missing_message(entry, folder, missing)
    return None


def raw_record_file(prepared: Path) -> Path:
    """The record of the raw folder that `prepared` (results/data/<name>.npz) was made from, beside it."""
    prepared = Path(prepared)
    return prepared.with_name(prepared.stem + RAW_RECORD_SUFFIX)


def write_raw_record(prepared: Path, content: Mapping) -> None:
    """Record `content` (`folder_content` of the raw folder) as what `prepared` was made from."""
    write_atomic(raw_record_file(prepared), lambda tmp: tmp.write_text(json.dumps(content, sort_keys=True) + "\n"))


def record_mismatch(entry: Download, prepared: Path) -> str | None:
    """Why `prepared` was made from raw files other than those the registry names (its record says other digests),
    with the fix; None where it was made from them, or where it has no record (prepared before records were kept)."""
    record_file = raw_record_file(prepared)
    try:
        recorded = json.loads(record_file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if recorded in (registry_content(entry), registry_content(entry, package=True)):
        return None
    found = recorded.get("files") if isinstance(recorded, dict) else None
    differing = [
        f"{name} md5 {found.get(name)}, config/datasets.yaml says {file_md5}"
        for name, file_md5 in registry_content(entry)["files"].items()
        if found and found.get(name) != file_md5
    ]
    return (
        f"dataset {entry.name}: {prepared} was prepared from other raw files than config/datasets.yaml names "
        f"({record_file}: {'; '.join(differing) or recorded}). Delete it (`rm {prepared}`) and rerun the workflow, "
        "which prepares it again from the verified download and retrains the runs that read it"
    )

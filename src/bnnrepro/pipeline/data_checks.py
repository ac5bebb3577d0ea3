"""The downloads the runs read, checked by content before any job (`bnnrepro.pipeline.plan.Plan` calls these):

- each raw folder against the registry (`check_raw_folder`): a file whose md5 is not the registry's stops the run,
  naming it, both digests and the fix (unless the registry changed since the fetch, which fetches it again anyway); a
  folder that lacks a file is an `IncompleteDownload`: before a run it goes back into its fetch's staging folder,
  from which the fetch completes it before the data is prepared again (DVC restores it from its cache, or only the
  missing files are downloaded); a dry run plans that fetch and moves nothing;
- the record of the raw files each prepared file was made from (`bnnrepro.data.raw_content.raw_record_file`): data
  prepared from other files stops the run with the fix, unless it is to be prepared again anyway;
- the header of a table download already fetched (`check_local_tables`), where its file is the registry's.

A raw folder's md5s are kept in the DAG record by each file's size and times (`bnnrepro.pipeline.dag_cache`), so a
no-op `snakemake -n` reads no data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from bnnrepro import layout
from bnnrepro.data.fetch import staging_folder
from bnnrepro.data.raw_content import (
    changed_message,
    changed_names,
    folder_content,
    is_package_folder,
    missing_names,
    record_mismatch,
)
from bnnrepro.data.registry import CSV_PREPARE, Download, dataset, downloads
from bnnrepro.files import read_yaml
from bnnrepro.paths import project_root
from bnnrepro.pipeline.dag_cache import cached
from bnnrepro.pipeline.data_jobs import DataJobInputs

DVC_LOCK = "data/dvc.lock"
"""DVC's record of each fetch: the registry entry it fetched with (its params) and the folder's checksum."""


class DataCheckError(ValueError):
    """Data the runs would read that is not what the registry names; the message names the files and the fix."""


def raw_folder(entry: Download) -> Path:
    return project_root() / layout.raw_download_folder(entry.name)


def raw_md5s(entry: Download, record: Path | None) -> dict[str, str | None]:
    """{name: md5, None where missing} of the registry files in the entry's raw folder, read again only where a file's
    size or times differ from those of the last reading (`record`)."""
    folder = raw_folder(entry)
    stats = [
        (file.name, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        for file in entry.files
        if (folder / file.name).is_file()
        for stat in [(folder / file.name).stat()]
    ]
    key = json.dumps([layout.raw_download_folder(entry.name), [file.name for file in entry.files], stats])
    return cached(record, f"raw_md5:{entry.name}", key, lambda: folder_content(entry, folder)["files"])


def fetched_md5s(entry: Download) -> dict[str, str]:
    """{name: md5} of the registry entry the download was last fetched with, as DVC recorded it (the params of its
    stage in data/dvc.lock); {} where none is recorded."""
    try:
        stages = read_yaml(project_root() / DVC_LOCK).get("stages") or {}
    except FileNotFoundError:
        return {}
    params = stages.get(f"fetch@{entry.name}", {}).get("params", {}).get("config/datasets.yaml", {})
    return {file["name"]: file["md5"] for file in params.get(f"downloads.{entry.name}", {}).get("files", [])}


@dataclass(frozen=True)
class IncompleteDownload:
    """A download folder that lacks registry files: the workflow fetches it again."""

    name: str
    folder: Path
    missing: tuple[str, ...]

    def send_back(self) -> str:
        """Move the folder's files into its fetch's staging folder (the files there are verified again before they
        are kept), so that the workflow fetches it: the message saying so."""
        staging = staging_folder(self.folder)
        staging.mkdir(exist_ok=True)
        for path in self.folder.iterdir():
            os.replace(path, staging / path.name)
        self.folder.rmdir()
        return (
            f"dataset {self.name}: {self.folder} lacks {', '.join(self.missing)}; its files are moved to {staging}/, "
            "from which the fetch completes it before the data is prepared again (from DVC's cache, or downloading "
            "only the missing files)"
        )

    def planned(self) -> str:
        """What a dry run says of it (it moves nothing, and plans the fetch)."""
        return (
            f"dataset {self.name}: {self.folder} lacks {', '.join(self.missing)}; a run moves its files to "
            f"{staging_folder(self.folder)}/ and fetches it (this dry run moves nothing)"
        )


def check_raw_folder(entry: Download, record: Path | None) -> IncompleteDownload | None:
    """Check the entry's raw folder by content (see the module's docstring): DataCheckError for a changed file; the
    folder as an `IncompleteDownload` where it lacks one. Reads and changes nothing else."""
    folder = raw_folder(entry)
    if not folder.is_dir() or is_package_folder(folder):
        return None
    found = raw_md5s(entry, record)
    if changed := changed_names(entry, found):
        fetched = fetched_md5s(entry)
        files = {file.name: file.md5 for file in entry.files}
        in_place = [name for name in changed if fetched.get(name, files[name]) == files[name]]
        if in_place:
            raise DataCheckError(changed_message(entry, folder, found, in_place))
    if missing := missing_names(entry, found):
        return IncompleteDownload(entry.name, folder, tuple(missing))
    return None


def check_prepared_record(entry: Download) -> None:
    """DataCheckError where the entry's prepared data records other raw files than the registry names and its
    declaration is current (a changed entry prepares it again anyway: rule declare_download)."""
    prepared = project_root() / entry.prepared_file(standin=False)
    if not prepared.is_file() or not declaration_current(entry):
        return
    if mismatch := record_mismatch(entry, prepared):
        raise DataCheckError(mismatch)


def declaration_current(entry: Download) -> bool:
    """Whether the entry's declaration file (what its prepare job read) holds the registry entry as it is now."""
    declared = project_root() / layout.download_declaration_file(entry.name)
    try:
        text = declared.read_text()
    except FileNotFoundError:
        return False
    return text.strip() == DataJobInputs.registry_entry(SimpleNamespace(download=entry.name))


def check_downloads(prepared_files: Iterable[str], record: Path | None) -> list[IncompleteDownload]:
    """Check the raw folder and the prepared data's record of each download whose real data is among
    `prepared_files`; DataCheckError names a problem and its fix; returned, the folders that the workflow fetches
    again."""
    wanted = set(prepared_files)
    incomplete = []
    for entry in downloads():
        if entry.prepared_file(standin=False) in wanted:
            if folder := check_raw_folder(entry, record):
                incomplete.append(folder)
            check_prepared_record(entry)
    return incomplete


def check_local_tables(names: Iterable[str], record: Path | None) -> None:
    """DataCheckError where the header of a table download (prepare_csv) among datasets `names`, fetched already and
    the registry's file (a changed one is `check_raw_folder`'s to report), lacks the declared target or feature
    columns or repeats a name (`csv_tables.check_local_header`)."""
    entries = [dataset(name) for name in sorted(set(names))]
    tables = [entry for entry in entries if isinstance(entry, Download) and entry.prepare == CSV_PREPARE]
    if not tables:
        return
    from bnnrepro.data.csv_tables import check_local_header  # pandas: imported only where there is a table
    from bnnrepro.data.table_checks import TableError

    for entry in tables:
        folder, file = raw_folder(entry), entry.options["file"]
        expected = {f.name: f.md5 for f in entry.files}.get(file)
        if not (folder / file).is_file() or raw_md5s(entry, record).get(file) != expected:
            continue
        try:
            check_local_header(entry, folder)
        except TableError as err:
            raise DataCheckError(str(err)) from None

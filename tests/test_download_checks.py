"""A download checked by content wherever it is used (bnnrepro.pipeline.data_checks, bnnrepro.data.raw_content), not
only when fetched. Before, each case below passed in silence: a raw file changed in place (same size, its
modification time put back) or truncated after the fetch was never looked at again (or, where the prepare step ran,
refused with the fix "correct the md5 in the registry", which accepts it); a folder that lacked a file was never
fetched again; prepared data recorded nothing of the raw files it came from."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.data.fetch import fetch, staging_folder
from bnnrepro.data.raw_content import raw_record_file
from bnnrepro.pipeline import data_checks
from bnnrepro.pipeline.data_checks import DataCheckError, check_downloads, check_local_tables
from bnnrepro.pipeline.data_jobs import DataJobInputs
from tests.conftest import environment, served_download

TABLE = b"size,year,price\n" + b"".join(f"{40 + i},{2000 + i % 7},{100 + 3 * i}\n".encode() for i in range(60))
NOTES = b"a table of homes\n"
PREPARED = layout.prepared_download_file("homes")


@pytest.fixture
def homes(registry_root, mirror) -> Path:
    """A project whose registry holds a CSV download `homes` of two files (the table and a note), served by the
    mirror and fetched into its raw folder; returns the project."""
    entry = served_download(mirror[1], "homes", {"homes.csv": TABLE, "notes.txt": NOTES}, "m:f", "m:f")
    entry |= {"prepare": "bnnrepro.data.csv_tables:prepare_csv", "options": {"file": "homes.csv", "target": "price"}}
    project = registry_root({"homes": entry | {"standin_shape": [60, 2]}})
    fetch("homes", project / layout.raw_download_folder("homes"), mirror[0])
    return project


def raw(project: Path, name: str = "homes.csv") -> Path:
    return project / layout.raw_download_folder("homes") / name


def md5(body: bytes) -> str:
    return hashlib.md5(body).hexdigest()


def test_a_file_changed_in_place_stops_the_run_naming_it_both_digests_and_the_fix(homes: Path, tmp_path: Path) -> None:
    record = tmp_path / "dag_cache.json"
    assert check_downloads([PREPARED], record) == []  # the control: the fetched files pass, and are recorded
    path = raw(homes)
    stat = path.stat()
    changed = TABLE.replace(b"2000,100", b"2000,900")  # same size; its modification time put back
    path.write_bytes(changed)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(DataCheckError) as error:
        check_downloads([PREPARED], record)
    message = str(error.value)
    assert f"{path} has md5 {md5(changed)} ({len(TABLE)} bytes)" in message
    assert f"config/datasets.yaml says md5 {md5(TABLE)} ({len(TABLE)} bytes)" in message
    assert "dvc checkout --force data/dvc.yaml:fetch@homes" in message and f"rm {path}" in message
    assert "correct the md5" not in message and path.read_bytes() == changed  # nothing is changed for the user


def test_a_truncated_file_is_a_changed_download_not_a_wrong_standin_shape(homes: Path) -> None:
    path = raw(homes)
    path.write_bytes(TABLE[:9])  # the header cut: `price` is gone
    check_local_tables(["homes"], None)  # not a header error whose fix would accept the file
    with pytest.raises(DataCheckError, match=rf"has md5 {md5(TABLE[:9])} \(9 bytes\).*\({len(TABLE)} bytes\)") as error:
        check_downloads([PREPARED], None)
    assert "standin_shape" not in str(error.value) and "truncated" in str(error.value)


def test_the_prepare_step_refuses_a_changed_file_and_records_the_files_it_prepared(homes: Path) -> None:
    out = homes / PREPARED
    command = [sys.executable, "-m", "bnnrepro.data", "prepare", "homes", str(raw(homes).parent), str(out)]
    subprocess.run(command, cwd=homes, env=environment(homes), check=True)
    assert json.loads(raw_record_file(out).read_text()) == {"files": {"homes.csv": md5(TABLE), "notes.txt": md5(NOTES)}}
    raw(homes).write_bytes(TABLE[: len(TABLE) // 2])
    refused = subprocess.run(command, cwd=homes, env=environment(homes), capture_output=True, text=True)
    assert refused.returncode != 0 and "dvc checkout --force" in refused.stderr
    assert "standin_shape" not in refused.stderr and "correct the md5" not in refused.stderr


def test_a_folder_that_lacks_a_file_is_sent_back_and_only_that_file_fetched_again(homes: Path, mirror) -> None:
    base, _, server = mirror
    folder = raw(homes).parent
    raw(homes, "notes.txt").unlink()
    (incomplete,) = check_downloads([PREPARED], None)
    assert incomplete.missing == ("notes.txt",) and raw(homes).is_file()  # checking moves nothing
    assert "lacks notes.txt; a run moves its files to" in incomplete.planned()
    message = incomplete.send_back()  # what a run does before it builds its plan
    assert "lacks notes.txt" in message and str(staging_folder(folder)) in message
    assert not folder.exists() and (staging_folder(folder) / "homes.csv").read_bytes() == TABLE  # nothing is lost
    server.requests.clear()
    fetch("homes", folder, base)  # what the fetch job runs where DVC's cache lacks the files
    assert server.requests == ["/homes/notes.txt"] and raw(homes, "notes.txt").read_bytes() == NOTES
    assert check_downloads([PREPARED], None) == [] and not staging_folder(folder).exists()


def test_a_file_the_registry_changed_since_the_fetch_is_left_to_the_fetch(homes: Path) -> None:
    """A new md5 in the registry fetches the folder again in the same call (the fetch rule's params): the old file is
    no error. DVC's record of the fetch (data/dvc.lock) tells the two apart."""
    raw(homes).write_bytes(TABLE.replace(b"2000,100", b"2000,900"))
    lock = {"stages": {"fetch@homes": {"params": {"config/datasets.yaml": {"downloads.homes": {"files": [
        {"name": "homes.csv", "md5": md5(TABLE.replace(b"2000,100", b"2000,900"))}]}}}}}}  # fmt: skip
    (homes / data_checks.DVC_LOCK).parent.mkdir(exist_ok=True)
    (homes / data_checks.DVC_LOCK).write_text(yaml.safe_dump(lock))
    assert check_downloads([PREPARED], None) == []


def test_data_prepared_from_other_raw_files_stops_the_run_unless_it_is_prepared_again(homes: Path) -> None:
    out = homes / PREPARED
    out.parent.mkdir(parents=True)
    out.write_bytes(b"arrays")
    raw_record_file(out).write_text(json.dumps({"files": {"homes.csv": md5(b"other"), "notes.txt": md5(NOTES)}}))
    declared = homes / layout.download_declaration_file("homes")
    check_downloads([PREPARED], None)  # no declaration: its prepare job runs anyway
    declared.write_text(DataJobInputs.registry_entry(SimpleNamespace(download="homes")) + "\n")
    with pytest.raises(DataCheckError) as error:
        check_downloads([PREPARED], None)
    message = str(error.value)
    assert f"{out} was prepared from other raw files" in message and f"homes.csv md5 {md5(b'other')}" in message
    assert f"config/datasets.yaml says {md5(TABLE)}" in message and f"rm {out}" in message
    raw_record_file(out).write_text(json.dumps({"files": {"homes.csv": md5(TABLE), "notes.txt": md5(NOTES)}}))
    check_downloads([PREPARED], None)  # the control: the registry's files

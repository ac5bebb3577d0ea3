"""A download's registry entry changed, through the workflow: a new checksum fetches the new file, prepares it and
retrains the runs made from the old data in one `snakemake` call (before, the old file was prepared and trained on,
and `snakemake -n` then said nothing was to be done); a new mirror alone fetches but retrains nothing; a raw file
that no longer matches its checksum stops the prepare job naming both digests and the fix. Raw files are also
checked by content before every call's jobs, not only when fetched (the second test)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bnnrepro import layout
from bnnrepro.data.raw_content import raw_record_file
from tests.conftest import ROOT, copy_project, csv_download_entry, run
from tests.test_pipeline import scheduled_jobs

STUDY = "paper: own\ngrids:\n  main: {method: [mc_dropout], dataset: [homes], dataset.split: [0], seed: [0]}\n"
RUN = "results/smoke/runs/mc_dropout~*/homes/split=0/seed=0/metrics.json"  # its one run (a glob: the variant's digest)
CALL = ["snakemake", "--cores", "2", "--config", "studies=[homes]", "scale=smoke"]


def homes_csv(shift: float) -> bytes:
    rows = [f"{size},{2000 + i % 7},{3 * size + shift + (i * 37) % 11}" for i, size in enumerate(range(40, 100))]
    return ("size,year,price\n" + "\n".join(rows) + "\n").encode()


def serve(folder: Path, body: bytes, project: Path, notes: bytes | None = None) -> None:
    """Put `body` (and `notes`, a second file of the download, where given) on the mirror and the project's registry
    entry with its md5 (the project's registry otherwise the repository's)."""
    (folder / "homes").mkdir(exist_ok=True)
    (folder / "homes/homes.csv").write_bytes(body)
    entry = csv_download_entry("homes", "price", body)
    if notes is not None:
        (folder / "homes/notes.txt").write_bytes(notes)
        entry += f"      - {{name: notes.txt, md5: {hashlib.md5(notes).hexdigest()}}}\n"
    registry = (ROOT / "config/datasets.yaml").read_text().replace("downloads:\n", "downloads:\n" + entry, 1)
    (project / "config/datasets.yaml").write_text(registry)


def jobs_run(call: subprocess.CompletedProcess) -> list[str]:
    """The rules of the jobs a `snakemake` call ran (its log goes to stderr)."""
    return sorted(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", call.stdout + call.stderr))


def homes_project(tmp_path: Path, url: str) -> Path:
    """A copy of the project, under git and DVC, with the study `homes` and the mirror at `url`."""
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    settings = project / "config/config.yaml"
    settings.write_text(settings.read_text().replace("data_mirror: null", f"data_mirror: {url}"))
    (project / "config/train/dataset/homes.yaml").write_text("defaults: [tabular, _self_]\nname: homes\n")
    (project / "config/studies/homes.yaml").write_text(STUDY)
    return project


@pytest.mark.slow
def test_a_new_checksum_refetches_prepares_and_retrains_in_one_call(tmp_path: Path, mirror) -> None:
    url, folder, _ = mirror
    project = homes_project(tmp_path, url)
    settings = project / "config/config.yaml"
    serve(folder, homes_csv(0.0), project)
    run(CALL, project)
    first = json.loads(next(project.glob(RUN)).read_text())["metrics"]["test_rmse_original"]

    new = homes_csv(500.0)  # the source publishes a corrected file; the user updates its md5
    serve(folder, new, project)
    ran = jobs_run(run(CALL, project))
    assert {"fetch", "prepare_download", "train"} <= set(ran), ran
    raw = project / layout.raw_download_folder("homes") / "homes.csv"
    assert raw.read_bytes() == new
    assert json.loads(next(project.glob(RUN)).read_text())["metrics"]["test_rmse_original"] != first
    assert "Nothing to be done" in run([*CALL[:1], "-n", *CALL[3:]], project).stdout

    # a new mirror alone (the same files): fetched again, nothing prepared or trained again
    settings.write_text(settings.read_text().replace(f"data_mirror: {url}", f"data_mirror: {url}?again"))
    again = jobs_run(run(CALL, project))
    assert "fetch" in again and "prepare_download" not in again and "train" not in again, again

    # a raw file changed in place: the prepare job refuses it, naming both digests and the fix
    raw.write_bytes(new.replace(b"price", b"prize"))
    command = [sys.executable, "-m", "bnnrepro.data", "prepare", "homes", str(raw.parent), str(tmp_path / "out.npz")]
    refused = subprocess.run(command, cwd=project, capture_output=True, text=True)
    assert refused.returncode != 0 and hashlib.md5(new).hexdigest() in refused.stderr
    assert "dvc checkout --force" in refused.stderr and not (tmp_path / "out.npz").exists()


@pytest.mark.slow
def test_raw_files_are_checked_by_content_before_every_call_s_jobs(tmp_path: Path, mirror) -> None:
    """Each step's control is the old behaviour: a file changed in place (same size, its modification time put back)
    or truncated went unnoticed ("Nothing to be done"); a folder that lacked a file was never fetched again, and its
    prepare job failed; a new mirror that was down lost the verified folder (Snakemake removed the fetch's output
    first) while the message said "verified files are kept"; prepared data recorded nothing of its raw files."""
    url, folder, server = mirror
    project = homes_project(tmp_path, url)
    body, notes = homes_csv(0.0), b"sizes in square metres\n"
    serve(folder, body, project, notes)
    run(CALL, project)
    md5s = {"homes.csv": hashlib.md5(body).hexdigest(), "notes.txt": hashlib.md5(notes).hexdigest()}
    prepared = project / layout.prepared_download_file("homes")
    assert json.loads(raw_record_file(prepared).read_text()) == {"files": md5s}
    dry = [*CALL[:1], "-n", *CALL[3:]]
    assert "Nothing to be done" in run(dry, project).stdout  # the raw files' md5s are now kept in the DAG record
    raw = project / layout.raw_download_folder("homes") / "homes.csv"

    for changed in (body.replace(b"40,2000,", b"41,2000,"), body[: len(body) // 2]):  # the same size; truncated
        stat = raw.stat()
        raw.write_bytes(changed)
        os.utime(raw, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        stopped = run(dry, project, check=False)
        output = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0 and f"{raw} has md5 {hashlib.md5(changed).hexdigest()}" in output, output
        assert f"says md5 {md5s['homes.csv']}" in output and "dvc checkout --force" in output
        assert "standin_shape" not in output and "Finished jobid" not in output

    # the fix the message gives: the folder then lacks a file, which is fetched again (here from DVC's cache) before
    # the data is prepared again
    raw.unlink()
    planned = run(dry, project)
    assert "lacks homes.csv; a run moves its files to" in planned.stdout + planned.stderr  # in the workflow's log
    assert scheduled_jobs(planned.stdout) == {"fetch": 1}  # the folder is `ancient` to the prepared data
    assert sorted(p.name for p in raw.parent.parent.iterdir()) == ["homes"]  # the dry run moved nothing
    prepared.unlink()
    data = [*CALL[:3], str(prepared.relative_to(project)), *CALL[3:]]
    made = run(data, project)
    assert "lacks homes.csv; its files are moved to" in made.stdout + made.stderr
    assert {"fetch", "prepare_download"} <= set(jobs_run(made))
    assert raw.read_bytes() == body and server.requests.count("/homes/homes.csv") == 1
    assert sorted(p.name for p in raw.parent.parent.iterdir()) == ["homes"]  # DVC's cache completed it: no staging

    # a new mirror that is down, the files not in DVC's cache: the verified folder stays, and Snakemake says so
    shutil.rmtree(project / ".dvc/cache")
    settings = project / "config/config.yaml"
    settings.write_text(settings.read_text().replace(f"data_mirror: {url}", "data_mirror: http://127.0.0.1:9/"))
    failed = run(data, project, check=False)
    assert failed.returncode != 0 and "Restored previous version of data/raw/homes" in failed.stdout + failed.stderr
    assert raw.read_bytes() == body and (raw.parent / "notes.txt").read_bytes() == notes
    assert "could not download http://127.0.0.1:9/homes/" in (project / "logs/data/fetch_homes.log").read_text()

    # the mirror back, a file missing and DVC's cache empty: only that file is downloaded
    settings.write_text(settings.read_text().replace("data_mirror: http://127.0.0.1:9/", f"data_mirror: {url}"))
    (raw.parent / "notes.txt").unlink()
    prepared.unlink()
    server.requests.clear()
    run(data, project)
    assert server.requests == ["/homes/notes.txt"] and (raw.parent / "notes.txt").read_bytes() == notes

    # prepared data whose record names other raw files than the registry's: no run trains on it
    raw_record_file(prepared).write_text(json.dumps({"files": {**md5s, "homes.csv": hashlib.md5(b"x").hexdigest()}}))
    stopped = run(dry, project, check=False)
    output = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0 and f"{prepared} was prepared from other raw files" in output, output

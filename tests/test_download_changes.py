"""A download's registry entry changed, through the workflow: a new checksum fetches the new file, prepares it and
retrains the runs made from the old data in one `snakemake` call (before, the old file was prepared and trained on,
and `snakemake -n` then said nothing was to be done); a new mirror alone fetches but retrains nothing; a raw file
that no longer matches its checksum stops the prepare job naming both digests and the fix."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bnnrepro import layout
from tests.conftest import ROOT, copy_project, csv_download_entry, run

STUDY = "paper: own\ngrids:\n  main: {method: [mc_dropout], dataset: [homes], dataset.split: [0], seed: [0]}\n"
RUN = "results/smoke/homes/runs/mc_dropout/homes/split=0/seed=0/metrics.json"
CALL = ["snakemake", "--cores", "2", "--config", "studies=[homes]", "scale=smoke"]


def homes_csv(shift: float) -> bytes:
    rows = [f"{size},{2000 + i % 7},{3 * size + shift + (i * 37) % 11}" for i, size in enumerate(range(40, 100))]
    return ("size,year,price\n" + "\n".join(rows) + "\n").encode()


def serve(folder: Path, body: bytes, project: Path) -> None:
    """Put `body` on the mirror and the project's registry entry with its md5 (the project's registry otherwise the
    repository's)."""
    (folder / "homes").mkdir(exist_ok=True)
    (folder / "homes/homes.csv").write_bytes(body)
    entry = csv_download_entry("homes", "price", body)
    registry = (ROOT / "config/datasets.yaml").read_text().replace("downloads:\n", "downloads:\n" + entry, 1)
    (project / "config/datasets.yaml").write_text(registry)


def jobs_run(call: subprocess.CompletedProcess) -> list[str]:
    """The rules of the jobs a `snakemake` call ran (its log goes to stderr)."""
    return sorted(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", call.stdout + call.stderr))


@pytest.mark.slow
def test_a_new_checksum_refetches_prepares_and_retrains_in_one_call(tmp_path: Path, mirror) -> None:
    url, folder, _ = mirror
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    settings = project / "config/config.yaml"
    settings.write_text(settings.read_text().replace("data_mirror: null", f"data_mirror: {url}"))
    (project / "config/train/dataset/homes.yaml").write_text("defaults: [tabular, _self_]\nname: homes\n")
    (project / "config/studies/homes.yaml").write_text(STUDY)
    serve(folder, homes_csv(0.0), project)
    run(CALL, project)
    first = json.loads((project / RUN).read_text())["metrics"]["test_rmse_original"]

    new = homes_csv(500.0)  # the source publishes a corrected file; the user updates its md5
    serve(folder, new, project)
    ran = jobs_run(run(CALL, project))
    assert {"fetch", "prepare_download", "train"} <= set(ran), ran
    raw = project / layout.raw_download_folder("homes") / "homes.csv"
    assert raw.read_bytes() == new
    assert json.loads((project / RUN).read_text())["metrics"]["test_rmse_original"] != first
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
    assert "Fetch it again" in refused.stderr and not (tmp_path / "out.npz").exists()

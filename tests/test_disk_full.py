"""A disk that fills while the workflow writes: an error that names the file and the space, and nothing lost.

The disk is a 1 MiB tmpfs mounted in a user and mount namespace (`unshare -rm`), where a checkpoint of 4 MB cannot
fit; torch.save's own error there says only `unexpected pos` (the control)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _mount_namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _mount_namespaces(), reason="`unshare -rm` (a mount namespace) is not available")

SCRIPT = """
import torch
from pathlib import Path
from bnnrepro.runs import RunFolder

run = RunFolder(Path("{disk}/run"))
run.save("resume.pt", {{"epoch": 1, "w": torch.zeros(10)}})
try:
    {save}
except Exception as error:
    print(type(error).__name__, error)
print("left:", sorted(p.name for p in run.path.iterdir()))
print("resume epoch:", torch.load(run.file("resume.pt"), weights_only=True)["epoch"])
"""


def write_on_a_full_disk(tmp_path: Path, save: str) -> str:
    disk = tmp_path / "disk"
    disk.mkdir()
    script = SCRIPT.format(disk=disk, save=save)
    mounted = f"mount -t tmpfs -o size=1m tmpfs {disk} && exec {sys.executable} -c '{script}'"
    result = subprocess.run(["unshare", "-rm", "sh", "-c", mounted], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_checkpoint_that_fills_the_disk_names_its_path_and_the_space_and_keeps_the_last_one(tmp_path: Path) -> None:
    output = write_on_a_full_disk(tmp_path, 'run.save("resume.pt", {"epoch": 2, "w": torch.zeros(1_000_000)})')
    assert "DiskFullError [Errno 28] no space left on the device while writing" in output
    assert f"{tmp_path}/disk/run/resume.pt" in output and "needs more than 1.0 MiB" in output
    assert "left: ['resume.pt']" in output  # no half-written temporary file takes the space
    assert "resume epoch: 1" in output  # the last checkpoint is intact


def test_control_torch_alone_says_neither_the_path_nor_the_space(tmp_path: Path) -> None:
    output = write_on_a_full_disk(tmp_path, 'torch.save({"w": torch.zeros(1_000_000)}, run.file("x.pt"))')
    assert "unexpected pos" in output and "no space" not in output and "x.pt" not in output.split("left:")[0]

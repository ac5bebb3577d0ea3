"""The CPU arithmetic setting (bnnrepro.cpu_arithmetic): a pinned run gives the same bits whatever kernels the CPU
would pick, records what it ran on, and a job whose kernels are not the setting's stops with the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bnnrepro import cpu_arithmetic
from bnnrepro.data.registry import generate_instance
from tests.conftest import ROOT, environment

pytestmark = pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"), reason="the portable setting needs an AVX2 CPU"
)


@pytest.fixture(scope="module")
def spiral_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "omega=6+seed=0.npz"
    generate_instance("spirals", "omega=6+seed=0", path)
    return path


def run_job(data: Path, run_dir: Path, setting: str, widest: str | None) -> subprocess.CompletedProcess:
    """A UDN spirals training job at `setting`, its environment the workflow's (`cpu_arithmetic.environment`) on
    top of a machine whose ATen dispatch would pick `widest` kernels (`ATEN_CPU_CAPABILITY`; None: the CPU's own)."""
    env = {k: v for k, v in environment(ROOT).items() if k not in cpu_arithmetic.VARIABLES}
    if widest is not None:
        env["ATEN_CPU_CAPABILITY"] = widest
    env.update(cpu_arithmetic.environment(setting))
    command = [
        sys.executable, "-m", "bnnrepro.train", "method=udn", "dataset.omega=6", f"dataset.path='{data}'",
        f"run_dir='{run_dir}'", "scale=smoke", "train.epochs=150", f"cpu_arithmetic={setting}",
    ]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True)


def metrics(data: Path, run_dir: Path, setting: str, widest: str | None) -> dict:
    result = run_job(data, run_dir, setting, widest)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.mark.slow
def test_a_pinned_run_gives_the_same_bits_whatever_kernels_the_cpu_would_pick(spiral_file: Path, tmp_path: Path):
    """The same run on a machine whose dispatch would pick the scalar kernels and on one that picks its widest (this
    CPU's: AVX2 or AVX-512): bit-identical metrics under portable, different under native (the negative control: the
    kernels do change the numbers)."""
    narrow = metrics(spiral_file, tmp_path / "pinned-narrow", "portable", "default")
    wide = metrics(spiral_file, tmp_path / "pinned-wide", "portable", None)
    assert narrow["metrics"] == wide["metrics"] and narrow["history"] == wide["history"]
    native_narrow = metrics(spiral_file, tmp_path / "native-narrow", "native", "default")
    native_wide = metrics(spiral_file, tmp_path / "native-wide", "native", None)
    assert native_narrow["metrics"] != native_wide["metrics"]
    recorded = wide["ran_on"]
    assert recorded["cpu_arithmetic"] == "portable" and recorded["cpu_capability"] == "AVX2" and recorded["cpu"]
    assert recorded["variables"] == {**dict.fromkeys(cpu_arithmetic.VARIABLES), **cpu_arithmetic.SETTINGS["portable"]}
    assert native_narrow["ran_on"]["cpu_capability"] == "DEFAULT"
    assert recorded["flush_subnormals"] is True and native_narrow["ran_on"]["flush_subnormals"] is True


FLUSHED_IN_EVERY_THREAD = """
import sys, torch
from bnnrepro.cpu_arithmetic import flushes_subnormals, set_up_process
if sys.argv[1] == "set_up":
    set_up_process(2)
else:
    torch.set_num_threads(2)
subnormals = torch.full((4_000_000,), 1e-39)  # split between the two threads
print(int(torch.mul(subnormals, 1.0).count_nonzero()), flushes_subnormals())
"""


@pytest.mark.parametrize(("setup", "expected"), [("set_up", "0 True"), ("torch_only", "4000000 False")])
def test_a_job_s_process_flushes_subnormals_in_every_thread(setup: str, expected: str) -> None:
    """After `set_up_process`, a subnormal times one is zero in both of torch's threads, not only in the one that
    set it up; the control (torch's own set-up) keeps them."""
    command = [sys.executable, "-c", FLUSHED_IN_EVERY_THREAD, setup]
    result = subprocess.run(command, env=environment(ROOT), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == expected.split()


def test_a_job_whose_kernels_are_not_the_setting_s_stops_with_the_fix(spiral_file: Path, tmp_path: Path) -> None:
    env_less = run_job(spiral_file, tmp_path / "run", "native", "default")  # the control: native takes any kernels
    assert env_less.returncode == 0
    command = [sys.executable, "-m", "bnnrepro.train", "method=udn", f"dataset.path='{spiral_file}'",
               f"run_dir='{tmp_path / 'unpinned'}'", "scale=smoke", "cpu_arithmetic=portable"]  # fmt: skip
    env = {**environment(ROOT), "ATEN_CPU_CAPABILITY": "default"}  # set after torch's own choice: not the setting's
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "cpu_arithmetic=portable runs torch's AVX2 kernels, but this job runs DEFAULT" in result.stderr
    assert "ATEN_CPU_CAPABILITY=avx2" in result.stderr and not (tmp_path / "unpinned" / "metrics.json").exists()


def test_an_unknown_setting_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="choose portable or native"):
        cpu_arithmetic.environment("avx512")

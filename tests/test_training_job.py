"""One training job run as users run it: `python -m bnnrepro.train` with Hydra overrides.

Killed midway (SIGKILL) it resumes from its last checkpoint and ends with the metrics of an
uninterrupted run; the same seed gives the same metrics; a diverged run stops with an error naming it, a run
selecting by a metric that its task does not record before its first epoch.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.data.registry import generate_instance
from bnnrepro.device import resolve_device
from bnnrepro.runs import resumed_from
from tests.conftest import ROOT, environment


@pytest.fixture(scope="module")
def spiral_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "omega=6+seed=0.npz"
    generate_instance("spirals", "omega=6+seed=0", path)
    return path


def train_command(data: Path, run_dir: Path, *overrides: str) -> list[str]:
    return [
        sys.executable, "-m", "bnnrepro.train", "method=udn", "dataset.omega=6", f"dataset.path='{data}'",
        f"run_dir='{run_dir}'", "scale=smoke", *overrides,
    ]  # fmt: skip


def train(data: Path, run_dir: Path, *overrides: str) -> dict:
    subprocess.run(train_command(data, run_dir, *overrides), env=environment(ROOT), check=True, capture_output=True)
    return json.loads((run_dir / "metrics.json").read_text())


def resumable_epoch(run_dir: Path) -> int:
    try:
        return torch.load(run_dir / "resume.pt", weights_only=True)["epoch"]
    except (FileNotFoundError, RuntimeError, EOFError):
        return 0


def test_killed_job_resumes_and_ends_with_the_uninterrupted_metrics(spiral_file: Path, tmp_path: Path) -> None:
    settings = ("train.epochs=400", "train.eval_every=20", "train.checkpoint_every=20")
    reference = train(spiral_file, tmp_path / "reference", *settings)

    run_dir = tmp_path / "killed"
    job = subprocess.Popen(train_command(spiral_file, run_dir, *settings), env=environment(ROOT))
    deadline = time.monotonic() + 120
    while resumable_epoch(run_dir) < 60 and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    job.send_signal(signal.SIGKILL)
    assert job.wait() == -signal.SIGKILL, "the job finished before it could be killed; give it more epochs"
    killed_at = resumable_epoch(run_dir)
    assert 60 <= killed_at < 400
    assert not (run_dir / "metrics.json").exists()

    resumed = train(spiral_file, run_dir, *settings)
    log = (run_dir / "train.log").read_text()
    assert re.search(rf"=== attempt 2 .*: resuming from resume.pt saved by attempt 1 .* at epoch {killed_at}\n", log)
    assert f"from epoch {killed_at}" in log
    assert resumed["metrics"] == reference["metrics"]
    assert resumed["history"] == reference["history"]
    assert not (run_dir / "resume.pt").exists()


def test_a_resume_names_the_attempt_that_saved_its_state() -> None:
    saver = {"number": 2, "started": "2026-11-29 08:30:01", "host": "node1"}
    assert resumed_from({"attempt": saver, "epoch": 40}) == (
        "resuming from resume.pt saved by attempt 2 (started 2026-11-29 08:30:01 on node1) at epoch 40"
    )
    # a state saved before attempts were recorded in it
    assert resumed_from({"epoch": 40}) == "resuming from resume.pt saved by an earlier attempt at epoch 40"
    assert resumed_from(None) == "training from the start"


def test_same_seed_same_metrics_and_other_seed_other_metrics(spiral_file: Path, tmp_path: Path) -> None:
    first = train(spiral_file, tmp_path / "a", "seed=3")
    second = train(spiral_file, tmp_path / "b", "seed=3")
    other = train(spiral_file, tmp_path / "c", "seed=4")
    assert first["history"] == second["history"]
    assert first["history"] != other["history"]


def test_the_training_split_is_scored_at_the_end_only_where_asked(spiral_file: Path, tmp_path: Path) -> None:
    plain = train(spiral_file, tmp_path / "plain")
    asked = train(spiral_file, tmp_path / "asked", "train.evaluate_training_split=true")
    assert not [key for record in plain["history"] for key in record if key.startswith("train_acc")]
    assert {"train_accuracy", "train_nll", "train_ece"} <= set(asked["history"][-1])
    assert not [key for record in asked["history"][:-1] for key in record if key.startswith("train_acc")]
    assert "last_train_accuracy" in asked["metrics"] and "last_train_accuracy" not in plain["metrics"]

    def other_splits(result: dict) -> list[dict]:
        return [{k: v for k, v in record.items() if not k.startswith("train_")} for record in result["history"]]

    # UDN's predictive draws nothing; a sampling method's final validation and test numbers would differ, as the
    # training pass draws from the global random stream before them
    assert other_splits(asked) == other_splits(plain)


def test_a_changed_config_does_not_resume_from_a_stale_checkpoint(spiral_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    train(spiral_file, run_dir, "train.epochs=10", "train.checkpoint_every=5")
    stale = {"config_digest": "another configuration", "epoch": 5}
    torch.save(stale, run_dir / "resume.pt")
    train(spiral_file, run_dir, "train.epochs=10", "train.checkpoint_every=5")
    assert "resumed" not in (run_dir / "train.log").read_text()


@pytest.mark.parametrize("method", ["udn", "finite"])
def test_diverged_run_stops_with_an_error_naming_the_run(spiral_file: Path, tmp_path: Path, method: str) -> None:
    run_dir = tmp_path / f"diverging-{method}"
    command = train_command(spiral_file, run_dir, f"method={method}", "optim.lr=1e30", "train.epochs=5")
    result = subprocess.run(command, env=environment(ROOT), capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert f"run {run_dir} diverged" in result.stderr
    assert "Lower optim.lr" in result.stderr
    assert not (run_dir / "metrics.json").exists()


def test_a_selection_by_a_metric_the_task_does_not_record_fails_before_the_first_epoch(
    spiral_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "regression-metric"
    command = train_command(spiral_file, run_dir, "train.select_by=val_rmse", "train.select_mode=min")
    result = subprocess.run(command, env=environment(ROOT), capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "ValueError: train.select_by='val_rmse' is not recorded by the evaluations of a classification run" in (
        result.stderr
    )
    assert "valid: epoch, val_accuracy, val_nll, val_ece, test_accuracy, test_nll, test_ece" in result.stderr
    assert "set train.select_by in config/train/protocol/spirals_smoke.yaml" in result.stderr
    assert "epoch 5" not in (run_dir / "train.log").read_text()  # the first evaluation was not reached
    assert {path.name for path in run_dir.iterdir()} == {"config.yaml", "train.log"}


def test_outputs_are_complete_and_checkpoint_loads_without_pickle(spiral_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = train(spiral_file, run_dir)
    assert {p.name for p in run_dir.iterdir()} == {"config.yaml", "metrics.json", "train.log", "checkpoint.pt"}
    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert any(key.startswith("network.layers.") for key in checkpoint["model"])
    assert OmegaConf.load(run_dir / "config.yaml").method.name == "udn"
    assert result["metrics"]["selected_epoch"] in [record["epoch"] for record in result["history"]]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised when no GPU is present")
def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="device=cuda was requested, but torch sees no CUDA GPU"):
        resolve_device("cuda")
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_training_runs_on_cuda(spiral_file: Path, tmp_path: Path) -> None:
    result = train(spiral_file, tmp_path / "cuda", "device=cuda", "train.epochs=10")
    assert result["metrics"]["test_accuracy"] > 0.5


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_every_method_variant_trains_on_cuda() -> None:
    """scripts/cuda_smoke_runs.py: one smoke run of each study's method variants with device=cuda."""
    sweep = subprocess.run([sys.executable, "scripts/cuda_smoke_runs.py"], cwd=ROOT, env=environment(ROOT),
                           capture_output=True, text=True)  # fmt: skip
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("method", ["udn", "finite"])
def test_a_run_on_the_gpu_ends_with_the_cpu_runs_metrics(spiral_file: Path, tmp_path: Path, method: str) -> None:
    """The device is no rerun trigger of the workflow (rule `train`): a run trained on the GPU ends where the same
    run on the CPU does, up to float32 rounding (kernels sum in another order)."""
    runs = {device: train(spiral_file, tmp_path / device, f"method={method}", f"device={device}", "train.epochs=30")
            for device in ("cpu", "cuda")}  # fmt: skip
    assert [runs[d]["ran_on"]["device"] for d in ("cpu", "cuda")] == ["cpu", "cuda"], runs["cuda"]["ran_on"]
    cpu, cuda = runs["cpu"]["metrics"], runs["cuda"]["metrics"]
    assert abs(cpu["test_accuracy"] - cuda["test_accuracy"]) <= 0.01, (cpu, cuda)
    assert cpu["test_nll"] == pytest.approx(cuda["test_nll"], rel=1e-3), (cpu, cuda)


def test_a_long_run_logs_its_progress_with_the_time_left(
    spiral_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Between evaluations a run logs, at a steady wall-clock cadence, its epoch, loss and estimated time left."""
    from bnnrepro import train as training
    from bnnrepro.runs import RunFolder

    monkeypatch.setattr(training, "PROGRESS_SECONDS", 0.0)
    cfg = training.compose_config(
        ["method=udn", "dataset.omega=6", f"dataset.path={spiral_file}", f"run_dir={tmp_path}", "scale=smoke"]
    )
    with caplog.at_level("INFO", logger="bnnrepro.train"):
        training.train(cfg, RunFolder(tmp_path))
    lines = [r.message for r in caplog.records if "left" in r.message]
    assert len(lines) == cfg.train.epochs
    assert re.fullmatch(r"epoch 1/20  train_loss=\S+  0m \d\ds trained, about \dm \d\ds left", lines[0])
    assert lines[-1].startswith("epoch 20/20") and lines[-1].endswith("about 0m 00s left")
    assert training.duration(3725) == "1h 02m" and training.duration(59.6) == "1m 00s"


def test_a_finite_network_at_a_huge_learning_rate_is_flagged_as_diverged(spiral_file: Path, tmp_path: Path) -> None:
    """Its loss stays finite (1e13) so no step fails, but it grew by orders of magnitude: an error in its metrics; a
    run that trains is ok."""
    diverged = train(spiral_file, tmp_path / "huge", "method=finite", "optim.lr=1e6", "train.epochs=20")
    assert diverged["health"]["status"] == "error"
    assert diverged["health"]["flags"][0].startswith("diverged: the training loss went from 0.")
    assert train(spiral_file, tmp_path / "fine", "method=finite", "train.epochs=20")["health"] == {
        "status": "ok", "flags": []
    }  # fmt: skip


def test_each_attempt_is_marked_in_the_log_and_an_unreadable_resume_state_is_set_aside(
    spiral_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    train(spiral_file, run_dir, "train.epochs=5")
    (run_dir / "resume.pt").write_bytes(b"half a checkpoint")
    train(spiral_file, run_dir, "train.epochs=10")
    log = (run_dir / "train.log").read_text()
    assert "=== attempt 1 started" in log and "=== attempt 2 started" in log
    assert f"{run_dir / 'resume.pt'}: not a readable resumable state" in log
    assert log.index("not a readable resumable state") < log.rindex("training from the start")

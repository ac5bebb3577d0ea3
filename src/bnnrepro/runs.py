"""A training run's own folder: resolved config, metrics, log and checkpoints, written atomically.

The file names are those of bnnrepro.layout. `resume.pt` is the resumable state a killed job restarts from;
it is deliberately not a declared workflow output (Snakemake deletes the outputs of a failed job) and is
removed once the run ends. Neither is `train.log` (Snakemake would restore a failed job's copy from before it): each
attempt appends to it, numbered, and the state it saves names it, so that the attempt that resumes it says from which.
Checkpoints hold tensors and plain containers only and load with `weights_only=True`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro import cpu_arithmetic, layout
from bnnrepro.device import resolve_device
from bnnrepro.files import UnreadableFileError, verify_archive, write_atomic

log = logging.getLogger("bnnrepro.runs")

ATTEMPT_MARK = "=== attempt "
"""How the line that starts an attempt begins in train.log."""


class RunFolder:
    CONFIG, METRICS, LOG = layout.RUN_CONFIG, layout.RUN_METRICS, layout.RUN_LOG
    CHECKPOINT, RESUME = layout.RUN_CHECKPOINT, layout.RUN_RESUME

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.attempt: dict | None = None
        """This job's attempt (`load_resume`): its number in train.log, start time and host."""

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> None:
        write_atomic(self.file(name), lambda tmp: tmp.write_text(text))

    def write_json(self, name: str, data: dict) -> None:
        self.write_text(name, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def save(self, name: str, state: dict) -> None:
        """Write a checkpoint, verified (`verify_archive`) before it replaces the previous one."""

        def write_verified(tmp: Path) -> None:
            torch.save(state, tmp)
            verify_archive(tmp, "checkpoint as written")

        write_atomic(self.file(name), write_verified)

    def load_resume(self, config_digest: str) -> dict | None:
        """The resumable state if one exists for this exact configuration, else None. The log gets a line that marks
        where this attempt starts, numbered after those train.log holds (a rerun appends to the train.log of the
        attempts before it, killed and failed ones included), and that names the attempt whose state it resumes."""
        state = self._resumable_state(config_digest)
        self.attempt = {"number": self._attempts_logged() + 1, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                        "host": platform.node()}  # fmt: skip
        log.info("%s%d started on %s, config %s: %s", ATTEMPT_MARK, self.attempt["number"], self.attempt["host"],
                 config_digest[:12], resumed_from(state))  # fmt: skip
        return state

    def _attempts_logged(self) -> int:
        path = self.file(self.LOG)
        return path.read_text(errors="replace").count(ATTEMPT_MARK) if path.exists() else 0

    def _resumable_state(self, config_digest: str) -> dict | None:
        path = self.file(self.RESUME)
        if not path.exists():
            return None
        try:
            verify_archive(path, "resumable state")
        except UnreadableFileError as err:
            log.warning("%s", err)
            return None
        state = torch.load(path, weights_only=True)
        return state if state.get("config_digest") == config_digest else None

    def save_progress(
        self, config_digest: str, model: torch.nn.Module, optimizer, generators: dict[str, torch.Generator], **progress
    ) -> None:
        """Save the resumable state: the model, the optimiser, torch's and each named generator's state, the
        attempt that saves it, and the job's `progress` (its position, history, ...), for `restore_progress` after a
        kill."""
        self.save(self.RESUME, {
            "config_digest": config_digest, "attempt": self.attempt, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(), **{f"{name}_rng": g.get_state() for name, g in generators.items()},
            **progress,
        })  # fmt: skip

    def finish(self, metrics: dict, checkpoint: dict) -> None:
        self.save(self.CHECKPOINT, checkpoint)
        self.write_json(self.METRICS, metrics)
        self.file(self.RESUME).unlink(missing_ok=True)


def restore_progress(state: dict, model: torch.nn.Module, optimizer, generators: dict[str, torch.Generator]) -> dict:
    """Load a resumable state (`RunFolder.save_progress`) into the model, the optimiser, torch's and the named
    generators; the job's progress, the rest of the state. A model whose architecture grows is first shaped like the
    state (`Method.prepare_resume`) by the caller, before its optimiser is built."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    for name, generator in generators.items():
        generator.set_state(state[f"{name}_rng"])
    restored = {"config_digest", "attempt", "model", "optimizer", "torch_rng", *(f"{name}_rng" for name in generators)}
    return {key: value for key, value in state.items() if key not in restored}


def resumed_from(state: dict | None) -> str:
    """Where an attempt starts: 'resuming from resume.pt saved by attempt 2 (started 2026-11-29 08:30:01 on host) at
    epoch 40', or 'training from the start'. A state saved before attempts were recorded in it names none."""
    if state is None:
        return "training from the start"
    saver = state.get("attempt")
    by = f"attempt {saver['number']} (started {saver['started']} on {saver['host']})" if saver else "an earlier attempt"
    return f"resuming from resume.pt saved by {by}" + (f" at epoch {state['epoch']}" if "epoch" in state else "")


def config_digest(resolved_yaml: str) -> str:
    return hashlib.sha256(resolved_yaml.encode()).hexdigest()


def start_job(cfg: DictConfig, run: RunFolder) -> tuple[str, torch.device]:
    """Write the run's resolved config and set up the job's process (its arithmetic and torch threads:
    `bnnrepro.cpu_arithmetic.set_up_process`, device, seed) after checking its CPU kernels
    (`bnnrepro.cpu_arithmetic.check`); return the config's digest (a resumable state is loaded only under the same
    one) and the device."""
    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    run.write_text(RunFolder.CONFIG, resolved)
    cpu_arithmetic.check(cfg.cpu_arithmetic)
    cpu_arithmetic.set_up_process(cfg.threads)
    torch.manual_seed(cfg.seed)
    return config_digest(resolved), resolve_device(cfg.device)


def ran_on(device: torch.device, arithmetic: str) -> dict:
    """Where a job ran: host, device, SLURM job id (None outside SLURM), and its CPU arithmetic (`arithmetic`: the
    setting, the CPU, torch's kernels and the pinning variables; bnnrepro.cpu_arithmetic.describe)."""
    return {"host": platform.node(), "device": str(device), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            **cpu_arithmetic.describe(arithmetic)}  # fmt: skip

"""The steps of a workflow run besides its jobs, each named once for the Snakefile and the README:

- while the DAG is built (main process): `TreeRepairs` (results checked out by DVC get back their recorded time
  order; sources that differ from those the results were made from look new; download folders that lack files go
  back to their fetch), found by `Plan.verify_data` and the timestamps record, made on disk (in a dry run, only in
  Snakemake's view);
- `onstart`: `check_device` (device=cuda without a GPU stops the run), `RunJobServer.start` and
  `interrupt_jobs_with_the_workflow`;
- `onsuccess`/`onerror`: `RunJobServer.stop`, `drop_superseded_report` or `set_aside_outdated_report`, and
  `stop_rate_limiter_timers`.

Each returns what it has to say (a message, or None) for the workflow's log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import psutil
from snakemake_interface_storage_plugins.io import Mtime

from bnnrepro import layout
from bnnrepro.pipeline.data_checks import IncompleteDownload
from bnnrepro.pipeline.job_server import ADDRESS_VARIABLE, StartedServer, server_environment
from bnnrepro.pipeline.result_timestamps import (
    changed_sources,
    outdating_time,
    restored_times,
    set_times,
    workflow_source_files,
)
from bnnrepro.report import files as report_files

OUTDATED_REPORT = f"{layout.REPORTS}/report-outdated.pdf"


class TreeRepairs:
    """What the workflow changes in the tree before Snakemake decides what runs, found while the Snakefile is read
    (main process) and made when Snakemake first asks the plan for a job's inputs (`make`), the first moment at which
    it says whether this is a dry run:

    - results checked out by DVC (new, shuffled times) get back their recorded time order, and sources whose content
      is not the one the results were made from, but that look older than them (a checkout, pull or copy), get the
      current time, so that Snakemake reruns what reads them (`bnnrepro.pipeline.result_timestamps`);
    - download folders that lack files go back to their fetch (`data_checks.IncompleteDownload`).

    A run makes these changes on disk. A dry run changes nothing: Snakemake's file-time cache gets the times a run
    would set, and the fetches a run would make are forced, so that it plans what the run would."""

    def __init__(self, timestamps: Path, incomplete: list[IncompleteDownload]) -> None:
        sources = workflow_source_files()
        self.timestamps, self.incomplete, self.made = timestamps, incomplete, False
        self.result_times = restored_times(timestamps, sources=sources)
        record_time = self.result_times.get(str(timestamps))  # the record's time once its results are restored
        if record_time is None and timestamps.is_file():
            record_time = timestamps.stat().st_mtime_ns
        self.outdated = changed_sources(timestamps, sources, record_time=record_time)
        self.source_times = dict.fromkeys(self.outdated, outdating_time(record_time)) if self.outdated else {}

    def make(self, dry_run: bool, file_times: dict, forced_files: set) -> list[str]:
        """Make the repairs, once: on disk, or for a `dry_run` in Snakemake's view only: its cache of file times
        (`file_times`, {path: Mtime}, which it reads before the disk) and the files it forces to be made again
        (`forced_files`). Returns what the workflow's log says."""
        if self.made:
            return []
        self.made = True
        times = {**self.result_times, **self.source_times}
        if not dry_run:
            set_times(times)
        file_times.update({name: Mtime(local=_seconds(ns)) for name, ns in times.items()})
        return [*self._time_messages(dry_run), *self._fetch_messages(dry_run, forced_files)]

    def _time_messages(self, dry_run: bool) -> list[str]:
        restoring, messages = len(self.result_times) - 1, []
        unchanged = "; this dry run plans with those times and changes no file" if dry_run else ""
        if restoring > 0:
            restored = "A run restores" if dry_run else "Restored"
            messages.append(f"{restored} the recorded time order of {restoring} cached result files ({self.timestamps})"
                            f"{unchanged}.")  # fmt: skip
        if self.outdated:
            listed = ", ".join(self.outdated[:5]) + (" ..." if len(self.outdated) > 5 else "")
            messages.append(
                f"{len(self.outdated)} source files differ from those the results in {self.timestamps} were made "
                f"from; the jobs that read them run again{unchanged}: {listed}"
            )
        return messages

    def _fetch_messages(self, dry_run: bool, forced_files: set) -> list[str]:
        if dry_run:
            forced_files.update(layout.raw_download_folder(download.name) for download in self.incomplete)
            return [download.planned() for download in self.incomplete]
        return [download.send_back() for download in self.incomplete]


def _seconds(ns: int) -> float:
    """A time in ns as `os.stat` gives it in seconds (st_mtime), which Snakemake compares."""
    seconds, fraction = divmod(ns, 10**9)
    return seconds + fraction * 1e-9


def gpu_visible() -> bool:
    """Whether this machine shows a GPU (nvidia-smi lists one, and CUDA_VISIBLE_DEVICES does not hide it); a cheap
    check that keeps torch out of the DAG build."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1") or shutil.which("nvidia-smi") is None:
        return False
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return listing.returncode == 0 and "GPU" in listing.stdout


def training_gpus(device: str) -> int:
    """GPUs a training job declares (`resources: gpu`): 1 with device=cuda, or device=auto where a GPU shows."""
    return 1 if device == "cuda" or (device == "auto" and gpu_visible()) else 0


def check_device(device: str, local: bool) -> None:
    """device=cuda on a machine without a GPU stops the run before any job starts: a job would fail only after
    Snakemake deleted the outputs it replaces. Not on a cluster (`local` False), whose jobs run on other nodes."""
    if local and device == "cuda" and not gpu_visible():
        raise RuntimeError(
            "config 'device' is cuda, but this machine shows no GPU (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES "
            "hides it); run with --config device=auto (a GPU where there is one, else the CPU) or device=cpu, or on a "
            "machine with a GPU (a cluster profile runs the jobs on its GPU nodes)"
        )


class RunJobServer:
    """The job server of one workflow run (`bnnrepro.pipeline.job_server`, config `job_server`): started by onstart,
    stopped when the run ends; while it runs, this process's environment gives jobs its socket, and each job starts
    as a fork of one process that has imported torch, pandas and matplotlib. A job that starts before the server is
    ready runs as a plain process."""

    def __init__(self, enabled: bool, threads: int) -> None:
        self.enabled, self.threads = enabled, threads
        self.server: StartedServer | None = None

    def start(self) -> str | None:
        if not self.enabled:
            return None
        log = Path(layout.log_file("job_server", "server"))
        try:  # the thread counts of train and evaluate jobs, most of the jobs
            self.server = StartedServer(log, server_environment(self.threads))
        except ValueError as error:
            return f"No job server, every job starts a new Python process: {error}"
        os.environ[ADDRESS_VARIABLE] = self.server.address
        return None

    def stop(self) -> None:
        os.environ.pop(ADDRESS_VARIABLE, None)
        if self.server is not None:
            self.server.stop()
            self.server = None


def interrupt_jobs_with_the_workflow() -> None:
    """A SIGINT sent to this process (the workflow) alone reaches its jobs too, as Ctrl-C in a terminal does (it is
    sent to the whole process group): on SIGINT Snakemake waits for the jobs it runs, so `kill -INT <snakemake>` would
    let them run to their end. Each process that the workflow started in its own process group (a job's shell and
    command; the command passes it on to its job in the job server) gets it first, then Snakemake handles it as
    always. Processes in other groups (the job server; whatever started the workflow) are left alone."""
    if threading.current_thread() is threading.main_thread():  # only there can a signal handler be set
        signal.signal(signal.SIGINT, _interrupt_jobs)


def _interrupt_jobs(number: int, frame) -> None:
    group = os.getpgrp()
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error, OSError):  # a process that ended meanwhile
            if os.getpgid(process.pid) == group:
                process.send_signal(signal.SIGINT)
    signal.default_int_handler(number, frame)


def set_aside_outdated_report(result_files: list[str]) -> str | None:
    """The report never outlives its inputs: when a run fails, Snakemake has deleted the outputs of its failed jobs,
    which reports/report.pdf may still show. If a result the report reads is missing, the report is moved to
    reports/report-outdated.pdf (kept for reference, not lost); the next run that succeeds writes reports/report.pdf
    again."""
    pdf = Path(report_files.REPORT_PDF)
    if not pdf.exists():
        return None
    report = (report_files.REPORT_PDF, report_files.REPORT_TYPST)
    missing = [f for f in result_files if f not in report and not Path(f).exists()]
    if not missing:
        return None
    os.replace(pdf, OUTDATED_REPORT)
    return (
        f"{report_files.REPORT_PDF} showed results that are missing now ({len(missing)}, e.g. {missing[0]}): moved to "
        f"{OUTDATED_REPORT}; the next run that succeeds writes {report_files.REPORT_PDF} again"
    )


def drop_superseded_report() -> None:
    """After a run that succeeds, reports/report.pdf is current: a report set aside as outdated goes."""
    Path(OUTDATED_REPORT).unlink(missing_ok=True)


def stop_rate_limiter_timers() -> None:
    """Cancel the reevaluation timers that Snakemake's job-rate limiter leaves behind (one threading.Timer per
    scheduling pass, `max-jobs-per-timespan`): they are not daemon threads, so with the profiles' long timespans the
    process would otherwise wait up to that long before exiting."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()

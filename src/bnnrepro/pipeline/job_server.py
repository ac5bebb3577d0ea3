"""The job server: one process that has imported the libraries the jobs use and forks a child per job.

A job's process spends most of a smoke-scale job importing torch, pandas, matplotlib and Hydra (2-3 s against a
fraction of a second of work; benchmarks/job_overhead.py). The workflow starts this server when a run begins (the
Snakefile's `onstart`) and stops it when the run ends. Every job's command is

    python -m bnnrepro.pipeline.job_server run <module> <arguments>

which hands the job to the server when there is one it may use: the server forks, the child takes the command's
standard streams (so its log redirections hold), working directory, environment and arguments, and runs
`python -m <module> <arguments>` as the command would have. The command waits for it, passes on the signals it
receives (SIGINT, SIGTERM, SIGHUP) and ends with the job's own exit status or signal. A command whose job server
is gone (the command killed) has its job sent SIGTERM.

What a job computes cannot differ:
- the server imports only third-party libraries (`PRELOADED_MODULES`) and this module; the child forgets every
  `bnnrepro` module before it runs the job, so the job runs the project's code as it is on disk now;
- the child reseeds `random` and NumPy's global generator from the operating system, as a new process would;
- a command the server cannot vouch for runs as a plain process in its own interpreter: no server (a dry run, a
  cluster node), another interpreter or module search path (a conda environment), or another SLURM job (a job
  step that SLURM placed on this machine must stay inside its allocation).

What a failure takes down: only the request it happens in. A request the server cannot read or serve gets no job
(the command then runs it as a plain process, once): a child forked for it runs the job only after the server has
taken charge of it (`_accept`), and ends without running it otherwise. A system without pidfds (`os.pidfd_open`:
Linux 5.3 and later) gets no server. The server removes its socket and folder however it ends, its workflow killed
included.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import random
import runpy
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

ADDRESS_VARIABLE = "BNNREPRO_JOB_SERVER"
"""The environment variable that holds the server's socket path; the workflow sets it when it starts the server."""

PRELOADED_MODULES = (
    "numpy",
    "torch",
    "torchsde",
    "scipy.stats",
    "pandas",
    "matplotlib.pyplot",
    "seaborn",
    "omegaconf",
    "hydra",
    "hydra.compose",
    "jsonschema",
    "yaml",
)
"""What the server imports before it serves: the libraries that the training, evaluation, data and drawing jobs
import at start. A job imports anything else itself, as a plain process would."""

STARTUP_VARIABLES = (
    "PYTHON",
    "OMP_",
    "KMP_",
    "GOTO_",
    "OPENBLAS_",
    "MKL_",
    "VECLIB_",
    "NUMEXPR_",
    "MPL",
    "TORCH",
    "ATEN_",
    "ONEDNN_",
    "DNNL_",
)
"""Prefixes of the environment variables that the interpreter or a preloaded library reads once, at start or
import (thread counts of the BLAS and OpenMP libraries, the kernels of bnnrepro.cpu_arithmetic among them): a job
whose values differ from the server's runs as a plain process."""

THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")  # fmt: skip
"""What Snakemake sets to a job's `threads` in the job's environment."""

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STANDARD_STREAMS = (0, 1, 2)
MAX_ADDRESS_BYTES = 100
"""A Unix socket's path has at most 107 bytes on Linux; some room is kept."""
HEADER = struct.Struct("!I")
PARENT_CHECK_SECONDS = 1.0
REQUEST_SECONDS = 10.0


def run(module: str, arguments: list[str]) -> None:
    """Run `python -m <module> <arguments>` in a child of the job server, or here when there is none to use."""
    connection = _connect(os.environ.get(ADDRESS_VARIABLE))
    if connection is not None:
        with connection:
            request = {"module": module, "arguments": arguments, "cwd": os.getcwd(), "environment": dict(os.environ),
                       "interpreter": _interpreter()}  # fmt: skip
            _send(connection, request, STANDARD_STREAMS)
            reply = _receive(connection)
            if reply is not None and "pid" in reply:
                _wait_for_job(connection, reply["pid"])
    run_module(module, arguments)


def run_module(module: str, arguments: list[str]) -> None:
    """`python -m <module> <arguments>` in this process."""
    sys.argv = [module, *arguments]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def serve(address: str, parent: int) -> None:
    """Serve jobs on the Unix socket `address` until process `parent` (the workflow) ends or SIGTERM arrives."""
    for name in PRELOADED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    gc.freeze()
    server = JobServer(address, parent)
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve()
    finally:
        server.close()


@dataclass
class Job:
    """A child running a job for the command at the other end of `connection`."""

    pid: int
    connection: socket.socket
    ended: int
    """A pidfd of the child: readable once it has ended."""


class JobServer:
    """The server's sockets and jobs; `serve` handles one event at a time, in one thread."""

    def __init__(self, address: str, parent: int) -> None:
        self.address = address
        self.parent = parent
        self.pid = os.getpid()
        self.interpreter = _interpreter()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(address)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.jobs: list[Job] = []
        print(f"job server {self.pid}: serving on {address}", flush=True)

    def serve(self) -> None:
        while os.getppid() == self.parent:
            for key, _ in self.selector.select(PARENT_CHECK_SECONDS):
                try:
                    if key.fileobj is self.listener:
                        self._accept()
                    elif key.data[0] == "ended":
                        self._finish(key.data[1])
                    else:
                        self._command_gone(key.data[1])
                except Exception:  # noqa: BLE001 - one request's failure ends that request, not the server
                    print(f"job server {self.pid}: a request failed:\n{traceback.format_exc()}", flush=True)

    def close(self) -> None:
        """Stop every job still running and remove the socket and its folder, if it holds nothing else (in the server
        only, not in a job's child)."""
        if os.getpid() != self.pid:
            return
        for job in self.jobs:
            _signal(job.pid, signal.SIGTERM)
            os.waitpid(job.pid, 0)
        self.selector.close()
        self.listener.close()
        os.unlink(self.address)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self.address))

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        connection.settimeout(REQUEST_SECONDS)
        try:
            received = _receive(connection, len(STANDARD_STREAMS))
        except (OSError, ValueError):  # the command went away while it sent its request, or sent no JSON
            received = None
        if received is None:
            connection.close()
            return
        connection.settimeout(None)
        request, streams = received
        try:
            refusal = self._refusal(request, streams)
        except (AttributeError, KeyError, TypeError) as error:
            refusal = f"a request the server cannot read ({error!r})"
        if refusal:
            _close_all(streams)
            with contextlib.suppress(OSError):
                _send(connection, {"refused": refusal})
            connection.close()
            print(f"refused a request: {refusal}; it runs as a plain process", flush=True)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        go, ready = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready)
            self._become_job(request, streams, go)
        os.close(go)
        _close_all(streams)
        try:
            job = Job(pid, connection, os.pidfd_open(pid))
        except OSError as error:  # the child, told nothing, ends without running the job: the command runs it
            os.close(ready)
            os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                _send(connection, {"refused": f"no pidfd for the job's process ({error})"})
            connection.close()
            print(f"refused python -m {request['module']}: no pidfd ({error}); it runs as a plain process", flush=True)
            return
        os.write(ready, b"1")
        os.close(ready)
        self.jobs.append(job)
        self.selector.register(job.ended, selectors.EVENT_READ, ("ended", job))
        self.selector.register(connection, selectors.EVENT_READ, ("command", job))
        with contextlib.suppress(OSError):  # a command gone now is seen by the selector
            _send(connection, {"pid": pid})
        print(f"job {pid}: python -m {request['module']} {' '.join(request['arguments'])}", flush=True)

    def _refusal(self, request: dict, streams: list[int]) -> str:
        if len(streams) != len(STANDARD_STREAMS):
            return f"{len(streams)} standard streams received, not {len(STANDARD_STREAMS)}"
        if request["interpreter"] != self.interpreter:
            return f"another interpreter or module path: {request['interpreter']}"
        if request["environment"].get("SLURM_JOB_ID") != os.environ.get("SLURM_JOB_ID"):
            return "another SLURM job"
        ours, theirs = _startup_environment(os.environ), _startup_environment(request["environment"])
        if theirs != ours:
            differing = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))
            return f"start-up variables differ from the server's: {', '.join(differing)}"
        return ""

    def _become_job(self, request: dict, streams: list[int], go: int) -> NoReturn:
        """In the forked child: once the server has taken charge of the job (a byte on `go`; none: end at once), take
        the command's streams, place and environment, forget the project's modules, run the job, and end as
        `python -m` would have (exit status, traceback, exit functions)."""
        if os.read(go, 1) != b"1":
            os._exit(0)
        os.close(go)
        status = 1
        try:
            self._leave_server(streams)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["environment"])
            for name in [name for name in sys.modules if name == "bnnrepro" or name.startswith("bnnrepro.")]:
                del sys.modules[name]
            tempfile.tempdir = None  # found again from the job's TMPDIR
            random.seed()
            if "numpy" in sys.modules:
                sys.modules["numpy"].random.seed()
            run_module(request["module"], request["arguments"])
            status = 0
        except SystemExit as stop:
            status = _exit_status(stop.code)
        except BaseException:
            sys.excepthook(*sys.exc_info())
        _end_process(status)

    def _leave_server(self, streams: list[int]) -> None:
        """Close the server's sockets in a job's child, restore the default signal handlers, take the streams."""
        for job in self.jobs:
            job.connection.close()
            os.close(job.ended)
        self.selector.close()
        self.listener.close()
        for number in FORWARDED_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, stream in zip(STANDARD_STREAMS, streams, strict=True):
            os.dup2(stream, target)
        _close_all(streams)

    def _finish(self, job: Job) -> None:
        _, status = os.waitpid(job.pid, 0)
        self.jobs.remove(job)
        self.selector.unregister(job.ended)
        os.close(job.ended)
        if job.connection in {key.fileobj for key in self.selector.get_map().values()}:
            self.selector.unregister(job.connection)
            with contextlib.suppress(OSError):
                _send(job.connection, {"status": status})
        job.connection.close()
        print(f"job {job.pid}: exit status {os.waitstatus_to_exitcode(status)}", flush=True)

    def _command_gone(self, job: Job) -> None:
        """The command ended (killed) before its job: stop the job, as a plain job's process would be stopped."""
        self.selector.unregister(job.connection)
        _signal(job.pid, signal.SIGTERM)


def _wait_for_job(connection: socket.socket, pid: int) -> NoReturn:
    """Pass this command's signals on to the job, then end with the job's exit status or signal."""
    for number in FORWARDED_SIGNALS:
        signal.signal(number, lambda received, _frame: _signal(pid, received))
    ended = _receive(connection)
    if ended is None:
        sys.exit(f"bnnrepro.pipeline.job_server: the job server ended while job {pid} ran; rerun the workflow")
    code = os.waitstatus_to_exitcode(ended["status"])
    if code < 0:
        if -code in FORWARDED_SIGNALS:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


def _exit_status(code: object) -> int:
    """The exit status of `SystemExit(code)`, as the interpreter gives it (a message is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _end_process(status: int) -> NoReturn:
    """End a job's child as the interpreter ends a process, without tearing down the server's imported modules
    (0.5 s with torch and pandas loaded): wait for the job's non-daemon threads, run its exit functions, flush."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def server_environment(threads: int = 1) -> dict[str, str]:
    """The environment to start the server in: this one, with the thread counts that Snakemake gives a job of
    `threads` threads (the jobs with other counts run as plain processes)."""
    return dict(os.environ) | {name: str(threads) for name in THREAD_VARIABLES}


class StartedServer:
    """A job server that this process (the workflow, a benchmark, a test) starts for the jobs it runs; it ends with
    `stop` or with this process. Its socket lies in a new folder under the system's temporary folder."""

    def __init__(self, log: Path, environment: dict[str, str], cwd: Path | None = None) -> None:
        if not pidfds_work():
            raise ValueError("this system has no pidfds (os.pidfd_open, Linux 5.3 and later) for the server")
        self.folder = tempfile.mkdtemp(prefix="bnnrepro-jobs-")
        self.address = os.path.join(self.folder, "server.sock")
        if len(self.address.encode()) > MAX_ADDRESS_BYTES:
            shutil.rmtree(self.folder)
            raise ValueError(f"the job server's socket path {self.address} is longer than a Unix socket allows "
                             f"({MAX_ADDRESS_BYTES} bytes): set TMPDIR to a shorter folder")  # fmt: skip
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "bnnrepro.pipeline.job_server", "serve", self.address, str(os.getpid())]
        with log.open("w") as output:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                            env=environment, cwd=cwd, start_new_session=True)  # fmt: skip

    def wait_until_ready(self, seconds: float = 120.0) -> None:
        """Wait until the server accepts jobs (its imports take a few seconds)."""
        deadline = time.monotonic() + seconds
        while not os.path.exists(self.address):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the job server did not start (exit status {self.process.poll()})")
            time.sleep(0.05)

    def stop(self) -> int:
        """Stop the server (SIGTERM; SIGKILL after a minute) and remove its folder; its exit status."""
        self.process.terminate()
        try:
            status = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        return status


def pidfds_work() -> bool:
    """Whether this system gives a process's pidfd (`os.pidfd_open`: Python 3.9 on Linux 5.3 and later)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def _startup_environment(environment: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in environment.items() if name.startswith(STARTUP_VARIABLES)}


def _interpreter() -> dict:
    """What decides which files an import loads: the environment's prefix and the module search path."""
    return {"prefix": sys.prefix, "path": sys.path}


def _connect(address: str | None) -> socket.socket | None:
    if not address:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
    except OSError:
        connection.close()
        return None
    return connection


def _send(connection: socket.socket, message: dict, streams: tuple[int, ...] = ()) -> None:
    body = json.dumps(message).encode()
    socket.send_fds(connection, [HEADER.pack(len(body))], list(streams))
    connection.sendall(body)


def _receive(connection: socket.socket, streams: int = 0) -> dict | tuple[dict, list[int]] | None:
    """The next message (with `streams` file descriptors when asked for), or None when the other end has closed."""
    header, fds, _, _ = socket.recv_fds(connection, HEADER.size, streams)
    header += _receive_exactly(connection, HEADER.size - len(header)) if header else b""
    if len(header) < HEADER.size:
        _close_all(fds)
        return None
    body = _receive_exactly(connection, HEADER.unpack(header)[0])
    message = json.loads(body)
    return (message, fds) if streams else message


def _receive_exactly(connection: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = connection.recv(size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _stop(_number, _frame) -> NoReturn:
    raise SystemExit(0)


def main(argv: list[str]) -> None:
    if argv[:1] == ["run"] and len(argv) >= 2:
        run(argv[1], argv[2:])
    elif argv[:1] == ["serve"] and len(argv) == 3:
        serve(argv[1], int(argv[2]))
    else:
        sys.exit("usage: python -m bnnrepro.pipeline.job_server run MODULE [ARGUMENT ...] | serve SOCKET PARENT_PID")


if __name__ == "__main__":
    main(sys.argv[1:])

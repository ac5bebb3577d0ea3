"""The job server (bnnrepro.pipeline.job_server): a job run through it behaves as `python -m <module>` would, and a
job the server cannot vouch for runs as a plain process.

A real server (`python -m bnnrepro.pipeline.job_server serve`) serves real commands (`python -m
bnnrepro.pipeline.job_server run`); each case runs the same probe module both ways and compares what the probe saw and
how it ended.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bnnrepro.pipeline.job_server import (
    ADDRESS_VARIABLE,
    HEADER,
    STANDARD_STREAMS,
    StartedServer,
    _receive,
    _send,
    server_environment,
)

PROBE = """
import json, os, signal, sys, time
seen = {
    "arguments": sys.argv[1:], "cwd": os.getcwd(), "variable": os.environ.get("PROBE_VARIABLE"),
    "stdin": sys.stdin.read(), "served": "torch" in sys.modules,
    "project_modules": sorted(name for name in sys.modules if name.split(".")[0] == "bnnrepro"),
}
print(json.dumps(seen))
print("to stderr", file=sys.stderr)
action = sys.argv[1] if len(sys.argv) > 1 else ""
if action == "exit":
    sys.exit(int(sys.argv[2]))
if action == "message":
    sys.exit("a message")
if action == "raise":
    raise RuntimeError("the probe failed")
if action == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if action == "count":
    open(sys.argv[2], "a").write("ran\\n")
if action == "wait":
    def terminated(number, frame):
        open(sys.argv[2], "w").write("terminated")
        sys.exit(7)
    signal.signal(signal.SIGTERM, terminated)
    open(sys.argv[3], "w").write(str(os.getpid()))
    time.sleep(60)
"""


def wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("modules")
    (folder / "probe.py").write_text(PROBE)
    return folder


@pytest.fixture(scope="module")
def environment(modules: Path) -> dict[str, str]:
    """What the server and its commands run with: the probe's folder on the module path, one BLAS thread."""
    path = os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")]))
    return server_environment() | {"PYTHONPATH": path}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the server and the commands run, as the workflow's jobs run where its server runs: `python -m` puts
    the working directory on the module path, and a command with another module path runs as a plain process."""
    return tmp_path_factory.mktemp("workdir")


@pytest.fixture(scope="module")
def server(environment: dict[str, str], workdir: Path) -> Iterator[str]:
    """A running job server; its socket's path."""
    server = StartedServer(workdir.parent / "server.log", environment, cwd=workdir)
    server.wait_until_ready()
    yield server.address
    assert server.stop() == 0
    assert not os.path.exists(server.folder)


def run_both(arguments: list[str], environment: dict[str, str], server: str, cwd: Path, **changes: str):
    """The probe run plain and through the server: (plain, served) completed processes."""
    plain = subprocess.run([sys.executable, "-m", "probe", *arguments], env=environment | changes, cwd=cwd,
                           input="from stdin", capture_output=True, text=True)  # fmt: skip
    served = subprocess.run([sys.executable, "-m", "bnnrepro.pipeline.job_server", "run", "probe", *arguments],
                            env=environment | changes | {ADDRESS_VARIABLE: server}, cwd=cwd, input="from stdin",
                            capture_output=True, text=True)  # fmt: skip
    return plain, served


def seen(process: subprocess.CompletedProcess) -> dict:
    return json.loads(process.stdout.splitlines()[0])


def test_a_served_job_sees_and_ends_as_python_m_would(server: str, environment: dict, workdir: Path) -> None:
    plain, served = run_both(["exit", "3"], environment, server, workdir, PROBE_VARIABLE="set")
    assert seen(served) | {"served": False} == seen(plain)
    assert seen(served)["served"] and not seen(plain)["served"]
    assert seen(served) == {"arguments": ["exit", "3"], "cwd": str(workdir), "variable": "set",
                            "stdin": "from stdin", "served": True, "project_modules": []}  # fmt: skip
    assert served.returncode == plain.returncode == 3
    assert served.stderr == plain.stderr == "to stderr\n"


@pytest.mark.parametrize(
    ("arguments", "status", "stderr_ends"),
    [([], 0, "to stderr\n"), (["message"], 1, "a message\n"), (["raise"], 1, "RuntimeError: the probe failed\n"),
     (["kill"], -signal.SIGKILL, "to stderr\n")],
)  # fmt: skip
def test_a_served_job_ends_with_the_status_of_its_plain_run(
    server: str, environment: dict, workdir: Path, arguments: list[str], status: int, stderr_ends: str
) -> None:
    plain, served = run_both(arguments, environment, server, workdir)
    assert seen(served)["served"]
    assert served.returncode == plain.returncode == status
    assert served.stderr.endswith(stderr_ends) and plain.stderr.endswith(stderr_ends)


def waiting_job(server: str, environment: dict, workdir: Path, folder: Path) -> tuple[subprocess.Popen, Path]:
    """A served probe that waits for SIGTERM (then writes `terminated` and exits 7); started, with that file."""
    marker, started = folder / "terminated", folder / "pid"
    command = [sys.executable, "-m", "bnnrepro.pipeline.job_server", "run", "probe", "wait", str(marker), str(started)]
    process = subprocess.Popen(command, env=environment | {ADDRESS_VARIABLE: server}, cwd=workdir)
    wait_for(lambda: started.exists() and started.read_text())
    assert int(started.read_text()) != process.pid  # the job runs in the server's child, not in the command
    return process, marker


def test_a_signal_to_the_command_reaches_its_job(server: str, environment: dict, workdir: Path, tmp_path: Path) -> None:
    process, marker = waiting_job(server, environment, workdir, tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 7
    assert marker.read_text() == "terminated"


def test_a_killed_command_has_its_job_terminated(server: str, environment: dict, workdir: Path, tmp_path: Path) -> None:
    process, marker = waiting_job(server, environment, workdir, tmp_path)
    process.kill()
    process.wait(30)
    wait_for(lambda: marker.exists() and marker.read_text() == "terminated", 30)


@pytest.mark.parametrize(
    "changes",
    [{"PYTHONPATH": os.pathsep.join(["/nonexistent"] + sys.path[1:])}, {"OMP_NUM_THREADS": "2"},
     {"OPENBLAS_NUM_THREADS": "4"}, {"SLURM_JOB_ID": "17"}, {ADDRESS_VARIABLE: "/nonexistent/server.sock"}],
    ids=["module path", "OpenMP threads", "BLAS threads", "SLURM job", "no server"],
)  # fmt: skip
def test_a_job_the_server_cannot_vouch_for_runs_as_a_plain_process(
    server: str, environment: dict, workdir: Path, modules: Path, changes: dict[str, str]
) -> None:
    if "PYTHONPATH" in changes:
        changes = {"PYTHONPATH": os.pathsep.join([str(modules), "/nonexistent"])}
    served = subprocess.run([sys.executable, "-m", "bnnrepro.pipeline.job_server", "run", "probe", "exit", "5"],
                            env=environment | {ADDRESS_VARIABLE: server} | changes, cwd=workdir,
                            input="from stdin", capture_output=True, text=True)  # fmt: skip
    assert served.returncode == 5
    assert seen(served)["arguments"] == ["exit", "5"] and seen(served)["stdin"] == "from stdin"
    assert not seen(served)["served"]


def test_the_server_ends_with_the_workflow_that_started_it(environment: dict) -> None:
    folder = tempfile.mkdtemp(prefix="jobs-")
    address = os.path.join(folder, "server.sock")
    starter = (
        "import os, subprocess, sys; "
        f"print(subprocess.Popen([sys.executable, '-m', 'bnnrepro.pipeline.job_server', 'serve', {address!r}, "
        "str(os.getpid())], stdout=subprocess.DEVNULL).pid)"
    )
    server = int(subprocess.run([sys.executable, "-c", starter], env=environment, capture_output=True,
                                text=True, check=True).stdout)  # fmt: skip

    def ended() -> bool:
        try:
            os.kill(server, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{server}/stat").read_text().split()[2] == "Z"

    wait_for(ended, 60)
    assert not os.path.exists(folder)  # the socket and its folder: a killed workflow leaves nothing in /tmp


def test_a_request_the_server_cannot_read_fails_alone(server: str, environment: dict, workdir: Path) -> None:
    """Bytes that are no request, and a request without its fields: each is refused or dropped, the server serves on."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as garbage:
        garbage.connect(server)
        garbage.sendall(HEADER.pack(5) + b"{not ")
        assert garbage.recv(64) == b""  # dropped: the command would run its job itself
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as partial:
        partial.connect(server)
        _send(partial, {"module": "probe"}, STANDARD_STREAMS)
        assert "a request the server cannot read" in _receive(partial)["refused"]
    plain, served = run_both(["exit", "4"], environment, server, workdir)
    assert seen(served)["served"] and served.returncode == plain.returncode == 4


def test_a_job_whose_process_the_server_cannot_watch_runs_once_as_a_plain_process(
    environment: dict, workdir: Path, modules: Path, tmp_path: Path
) -> None:
    """A failure after the fork (here: no pidfd for the child) fails that request only: the child never runs the
    job, the command runs it once itself, and the server serves the next request the same way."""
    folder = Path(tempfile.mkdtemp(prefix="jobs-"))
    address = str(folder / "server.sock")
    failing_server = (
        "import os, sys\n"
        "from bnnrepro.pipeline import job_server\n"
        "def no_pidfd(pid, flags=0):\n"
        "    raise OSError(38, 'Function not implemented')\n"
        "os.pidfd_open = no_pidfd\n"
        f"job_server.main(['serve', {address!r}, '{os.getpid()}'])\n"
    )
    (modules / "failing_server.py").write_text(failing_server)  # run with -m, as the server is: the same module path
    process = subprocess.Popen([sys.executable, "-m", "failing_server"], env=environment, cwd=workdir,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    wait_for(lambda: os.path.exists(address))
    counts = tmp_path / "runs"
    for _ in range(2):
        command = [sys.executable, "-m", "bnnrepro.pipeline.job_server", "run", "probe", "count", str(counts)]
        served = subprocess.run(command,
                                env=environment | {ADDRESS_VARIABLE: address}, cwd=workdir, input="",
                                capture_output=True, text=True)  # fmt: skip
        assert served.returncode == 0 and not seen(served)["served"]
    assert counts.read_text() == "ran\n" * 2  # once per command
    process.terminate()
    log = process.communicate(timeout=60)[0]
    assert log.count("no pidfd") == 2 and "Traceback" not in log
    assert not folder.exists()


def test_without_pidfds_there_is_no_server(environment: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow then runs every job as a plain process (common.smk: start_job_server)."""
    monkeypatch.delattr(os, "pidfd_open")
    with pytest.raises(ValueError, match=r"no pidfds \(os.pidfd_open, Linux 5.3 and later\)"):
        StartedServer(tmp_path / "server.log", environment)

"""Shared helpers: a copy of the project in a temporary folder, and commands run inside it."""

from __future__ import annotations

import atexit
import hashlib
import http.server
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from filelock import FileLock
from xdist.scheduler import LoadScopeScheduling

from bnnrepro import layout

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "datasets"
"""The real UCI and mocap files beside the project, where CI and the sessions have them (users do not)."""
PROJECT_FILES = [
    "Snakefile",
    "workflow",
    "config",
    "profiles",
    "src",
    "dvc.yaml",
    "data/dvc.yaml",
    "data/dvc.lock",
    "docs/fidelity/paper",  # the committed paper-scale results: every report shows their verdicts
    ".dvcignore",
    ".gitignore",
    "environment.yml",
]


def environment(root: Path) -> dict[str, str]:
    """The environment of a workflow command: this interpreter's bin first, the project root set."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["BNNREPRO_ROOT"] = str(root)
    return env


def run(args: list[str], cwd: Path, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a command in `cwd`; on failure show its output."""
    result = subprocess.run(args, cwd=cwd, env=environment(cwd), capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def copy_project(destination: Path, dag_record: bool = True) -> Path:
    """The workflow's files (no results, no environment) in `destination`; with `dag_record`, also the record of
    work done while a DAG is built (`session_dag_record`), as a project has it after its first `snakemake` call."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    destination.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    if dag_record:
        add_session_dag_record(destination)
    return destination


def add_session_dag_record(project: Path) -> None:
    """Give `project` the session's DAG-time record (`session_dag_record`), in place of any it has."""
    (project / layout.DAG_CACHE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(session_dag_record(), project / layout.DAG_CACHE)


@cache
def session_dag_record() -> Path:
    """The DAG-time record (`bnnrepro.pipeline.dag_cache`: the studies' composed overrides, the artifacts'
    declarations, the import graph) of an unchanged copy of the project after a dry run at `smoke` and at `default`,
    made once per test session, by whichever pytest-xdist worker asks first (the others wait for it). Each entry is
    keyed by a digest of the files it read, so a test that edits one of them makes the workflow redo that entry; the
    others it would only redo identically (a Hydra composition per study's run pair, seconds per study)."""
    folder = _session_folder("dag-record")
    record = folder / "project" / layout.DAG_CACHE
    with FileLock(folder / "lock"):
        if not record.exists():
            building = Path(tempfile.mkdtemp(dir=folder))
            project = copy_project(building / "project", dag_record=False)
            for scale in ("smoke", "default"):
                run(["snakemake", "-n", "--config", f"scale={scale}"], project)
            project.rename(folder / "project")
    return record


SESSION_FOLDER = "BNNREPRO_TEST_SESSION_FOLDER"
"""The environment variable naming a folder that the processes of one test session share (pytest-xdist workers)."""


def _session_folder(name: str) -> Path:
    """`name` in the folder that the processes of this test session share, made by the first that asks (the main
    pytest process, before its xdist workers start: they inherit the variable) and removed when that one exits."""
    if SESSION_FOLDER not in os.environ:
        os.environ[SESSION_FOLDER] = tempfile.mkdtemp(prefix="bnnrepro-session-")
        atexit.register(shutil.rmtree, os.environ[SESSION_FOLDER], ignore_errors=True)
    folder = Path(os.environ[SESSION_FOLDER]) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


ONE_WORKER_MODULES = {
    "tests/test_pipeline.py",  # the smoke DAG that its tests share (some edit it in place, then put it back)
    "tests/test_continuous_depth_runs.py",  # the toy runs that its tests share
    "tests/test_reliability.py",  # the one-study project that its tests copy
    "tests/test_attempts.py",  # the same, built for it
}
"""Modules whose tests run on one pytest-xdist worker, one after another: they share a session fixture."""

SHARED_UNITS = {
    "tests/test_pipeline_reruns.py": "tests/test_pipeline.py",  # the smoke DAG (`built`), edited in place
}
"""Modules whose tests join the unit of work of a module of ONE_WORKER_MODULES: they share its session fixture, which
another worker would build again."""


class ModuleGroupScheduling(LoadScopeScheduling):
    """pytest-xdist's `load` distribution, test by test, except for the tests of ONE_WORKER_MODULES: each of those
    modules, with the modules of SHARED_UNITS that join it, is one unit of work, dealt out first (units go out by
    their number of tests). xdist's own `loadgroup` cannot group here: it renames the tests' `_nodeid`, which pytest 9
    no longer reads."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        module = SHARED_UNITS.get(module, module)
        return module if module in ONE_WORKER_MODULES else nodeid


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest -p no:xdist runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> ModuleGroupScheduling | None:
    return ModuleGroupScheduling(config, log) if config.getvalue("dist") == "load" else None


def pytest_configure(config: pytest.Config) -> None:
    """The main pytest process makes the session's shared folder before its workers start; workers share the cores,
    so each runs torch on one thread, as the workflow's jobs do."""
    if hasattr(config, "workerinput"):
        torch.set_num_threads(1)
    else:
        _session_folder("")


def _offline_prefix() -> list[str]:
    """`unshare -rn`: run a command in a network namespace with no route anywhere, where available."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True) if shutil.which("unshare") else None
    return ["unshare", "-rn"] if probe is not None and probe.returncode == 0 else []


OFFLINE = _offline_prefix()
needs_offline = pytest.mark.skipif(not OFFLINE, reason="`unshare -rn` (a network namespace) is not available here")


@pytest.fixture(autouse=True)
def seeded_global_generators() -> None:
    """Every test starts from the same global random state, whichever tests its worker ran before (pytest-xdist
    deals the tests out anew on each run)."""
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


# The smoke DAG that tests/test_pipeline.py and tests/test_pipeline_reruns.py share (SHARED_UNITS: one worker
# builds it). Here, not imported into them: each module's import of a fixture would be a fixture of its own, built
# again.
JOB_SERVER_LOG = layout.log_file("job_server", "server")


@pytest.fixture(scope="session")  # not "module": an xdist worker runs other modules' tests between these
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The smoke DAG builds its own record of DAG-time work (a cold start, ~30 s) rather than wait for the session's
    # (dry runs at two scales, made meanwhile by the other worker's first test); it gets the session's after the run,
    # for the later tests that plan the default scale.
    project = copy_project(tmp_path_factory.mktemp("project"), dag_record=False)
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    (project / "config/config.yaml").write_text(yaml.safe_dump({**config, "scale": "smoke"}))
    run(["git", "init", "-q"], project)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", "--allow-empty"], project)
    run(["dvc", "init", "-q"], project)
    run(["dvc", "config", "core.analytics", "false"], project)
    # offline where a network namespace can be made; 251 jobs beside the other tests on two cores take 6 to 8 minutes
    run([*OFFLINE, "dvc", "repro"], project, timeout=1800)
    shutil.copy(project / JOB_SERVER_LOG, project.parent / "first_run_job_server.log")  # later tests rerun jobs
    add_session_dag_record(project)
    return project


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves `directory`; files named in `server.truncate` are cut in half, and those in `server.drop`
    announce their full length but the connection closes halfway."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        name = self.path.rsplit("/", 1)[-1]
        if name in self.server.drop or name in self.server.truncate:
            body = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body) if name in self.server.drop else len(body) // 2))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path, http.server.ThreadingHTTPServer]]:
    """A loopback HTTP server over a fresh folder: (base URL, folder, server)."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: MirrorHandler(*a, directory=str(folder)))
    server.requests, server.truncate, server.drop = [], set(), set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", folder, server
    server.shutdown()
    server.server_close()


def csv_download_entry(name: str, target: str, body: bytes) -> str:
    """The registry entry (YAML, to go under `downloads:`) of a CSV table `name`.csv served by a mirror at `name/`,
    of `target` and md5 of `body`, read at every scale (`real_data: true`)."""
    return f"""  {name}:
    title: {name}
    url: http://127.0.0.1:9/never/
    mirror_path: {name}/
    licence: test
    format: test
    prepare: bnnrepro.data.csv_tables:prepare_csv
    options: {{file: {name}.csv, target: {target}}}
    loader: bnnrepro.data.tabular:load
    real_data: true
    files:
      - {{name: {name}.csv, md5: {hashlib.md5(body).hexdigest()}}}
"""


def served_download(folder: Path, name: str, files: dict[str, bytes], prepare: str, loader: str) -> dict:
    """Write `files` under folder/<name>/ (the mirror) and return their registry entry."""
    (folder / name).mkdir(parents=True, exist_ok=True)
    for file, body in files.items():
        (folder / name / file).write_bytes(body)
    return {
        "title": name, "url": "http://127.0.0.1:9/never/", "mirror_path": f"{name}/", "licence": "test",
        "format": "test", "prepare": prepare, "loader": loader, "standin": "none:none",
        "files": [{"name": f, "md5": hashlib.md5(b).hexdigest(), "size": len(b)} for f, b in files.items()],
    }  # fmt: skip


@pytest.fixture
def registry_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """`write(downloads)` makes a project whose config/datasets.yaml holds these downloads the registry's."""
    from bnnrepro.data import registry

    def write(downloads: dict) -> Path:
        project = tmp_path / "project"
        (project / "config").mkdir(parents=True, exist_ok=True)
        (project / "config/datasets.yaml").write_text(yaml.safe_dump({"downloads": downloads}))
        monkeypatch.setenv("BNNREPRO_ROOT", str(project))
        registry._registry.cache_clear()
        return project

    yield write
    registry._registry.cache_clear()


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One torch thread, as the workflow's jobs run (threads_per_job): small tensor ops only lose from more
    threads, tenfold on two busy cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

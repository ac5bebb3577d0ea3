"""The source files a job declares as inputs are every project file its code imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bnnrepro.artifacts.registry import drawing_modules
from bnnrepro.methods import METHOD_MODULES
from bnnrepro.pipeline.sources import import_graph, module_closure

ENTRY_POINTS = {
    "training job": ["bnnrepro.train", *sorted(set(METHOD_MODULES.values()))],
    "evaluation job": ["bnnrepro.evaluations.__main__"],
    "artifact declarations": drawing_modules(),
}


@pytest.mark.parametrize("job", ENTRY_POINTS)
def test_the_closure_holds_every_project_module_python_imports(job: str) -> None:
    """A module Python loads that the closure misses (a package's __init__.py, an import inside a function that runs
    at import time) would be an input no job declares: editing it would rerun nothing."""
    modules = ENTRY_POINTS[job]
    script = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print('\\n'.join(m.__file__ for n, m in sys.modules.items() if n.startswith('bnnrepro') and m.__file__))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    closure = {str(path) for module in modules for path in module_closure(module)}
    assert loaded and set(loaded) <= closure


def test_the_recorded_import_graph_is_the_parsed_one(tmp_path) -> None:
    """The workflow reads the import graph back from its DAG-time record: what it reads is what parsing gives."""
    record = tmp_path / "dag_cache.json"
    parsed = import_graph.__wrapped__(None)
    assert import_graph.__wrapped__(record) == parsed  # computed and recorded
    assert "import_graph" in json.loads(record.read_text())
    assert import_graph.__wrapped__(record) == parsed  # read back
    assert set(parsed["bnnrepro.train"]) >= {"bnnrepro.methods", "bnnrepro.data.registry"}

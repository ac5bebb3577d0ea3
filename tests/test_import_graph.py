"""The import graph of src/bnnrepro has no cycle, and the code a training job runs imports no evaluation code.

The graph is read from the source with `ast`, as `bnnrepro.pipeline.sources` reads it: every import statement counts, at
module level (also under `if TYPE_CHECKING:`) or inside a function; `from bnnrepro.x import y` is an edge to module
bnnrepro.x.y where that is a module, else to bnnrepro.x (a module, or a package's __init__.py).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bnnrepro
from bnnrepro.methods import METHOD_MODULES
from tests.conftest import ROOT

PACKAGE_DIR = Path(bnnrepro.__file__).parent
EVALUATION_PACKAGE = "bnnrepro.evaluations"
TRAINING_PACKAGES = ("bnnrepro.methods", "bnnrepro.models", "bnnrepro.inference", "bnnrepro.data")
"""What a training job runs besides bnnrepro.train: none of it may import evaluation code."""


def module_files(package_dir: Path) -> dict[str, Path]:
    """{dotted module name: file} of every module of the package in `package_dir` (a package by its __init__)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """{module: the package's modules it imports} of every module of the package in `package_dir`."""
    modules = module_files(package_dir)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, base]) if base else ".".join(parent)
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowlink[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                lowlink[module] = min(lowlink[module], lowlink[target])
            elif target in stack:
                lowlink[module] = min(lowlink[module], index[target])
        if lowlink[module] == index[module]:
            component = []
            while (member := stack.pop()) != module:
                component.append(member)
            if component:
                found.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def describe(component: list[str], graph: dict[str, set[str]]) -> str:
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
    return f"{', '.join(component)} ({'; '.join(edges)})"


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE_DIR)
    found = cycles(graph)
    assert not found, "modules that import each other, directly or through others: " + " | ".join(
        describe(component, graph) for component in found
    )


MACHINERY_PACKAGE = "bnnrepro.pipeline"
"""The workflow's machinery: a folder of modules at several layers (a job's process start, below every entry point;
the plan, above every part it plans), so each of its modules is a part of its own, as a top-level module is."""


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to the package's first level (bnnrepro.methods.hmc -> bnnrepro.methods; a
    top-level module and a module of the machinery package stay themselves): which parts of the package import
    which."""

    def part(module: str) -> str:
        if module.startswith(MACHINERY_PACKAGE + "."):
            return module
        return ".".join(module.split(".")[:2])

    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        parts.setdefault(part(module), set()).update(part(t) for t in targets if part(t) != part(module))
    return parts


def test_the_parts_of_the_package_have_no_import_cycle() -> None:
    """models, inference, methods, evaluations, data, artifacts, report and the top-level modules layer: no two
    import each other, even through function-level imports."""
    graph = package_graph(import_graph(PACKAGE_DIR))
    found = cycles(graph)
    assert not found, "parts of the package that import each other: " + " | ".join(
        describe(component, graph) for component in found
    )


def test_training_code_imports_no_evaluation_code() -> None:
    """Methods, models, inference and data never import bnnrepro.evaluations, so evaluation code is never a
    training job's code input (workflow rule `train`: `bnnrepro.pipeline.sources.source_files`)."""
    graph = import_graph(PACKAGE_DIR)
    offending = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if module.startswith(TRAINING_PACKAGES)
        for target in sorted(targets)
        if target == EVALUATION_PACKAGE or target.startswith(EVALUATION_PACKAGE + ".")
    ]
    assert not offending, f"training code imports evaluation code: {offending}"


@pytest.mark.parametrize("method", sorted(set(METHOD_MODULES.values())))
def test_no_training_job_reads_evaluation_code(method: str) -> None:
    from bnnrepro.pipeline.sources import source_files

    files = source_files("bnnrepro.train", method)
    assert files and not [f for f in files if "/evaluations/" in f], files


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_cycles_through_function_level_and_package_imports_are_found(tmp_path: Path) -> None:
    """The graph sees a function-level import, `from package import name` (the package's __init__), a relative
    import and a TYPE_CHECKING import, and the cycle check reports each cycle with its modules."""
    package = write_package(
        tmp_path,
        {
            "__init__.py": "from pkg.a import f\n",
            "a.py": "def f():\n    from pkg.sub import helper\n",
            "sub/__init__.py": "from .b import helper\n",
            "sub/b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg import c\n",
            "c.py": "import pkg.d\n",
            "d.py": "",
        },
    )
    graph = import_graph(package)
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.sub"},
        "pkg.sub": {"pkg.sub.b"},
        "pkg.sub.b": {"pkg.c"},
        "pkg.c": {"pkg.d"},
        "pkg.d": set(),
    }
    assert cycles(graph) == []
    (package / "d.py").write_text("from pkg.a import f\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.c", "pkg.d", "pkg.sub", "pkg.sub.b"]]
    assert cycles(package_graph(import_graph(package))) == [["pkg.a", "pkg.c", "pkg.d", "pkg.sub"]]


def test_building_the_dag_loads_no_torch() -> None:
    """What the workflow imports to build its DAG (the `bnnrepro` imports of workflow/rules/common.smk) loads no
    torch: seconds of every `snakemake` call, a dry run's included (control: an import of training code loads it)."""
    imports = re.findall(r"^from bnnrepro[^\n]*", (ROOT / "workflow/rules/common.smk").read_text(), re.M)
    assert "from bnnrepro.pipeline.plan import Plan, PlanError" in imports

    def loads_torch(lines: list[str]) -> bool:
        code = "\n".join([*lines, "import sys", "print('torch' in sys.modules)"])
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return result.stdout == "True\n"

    assert not loads_torch(imports)
    assert loads_torch(["from bnnrepro import runs"])

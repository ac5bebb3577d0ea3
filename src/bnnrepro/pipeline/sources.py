"""The project source files a module runs, so that workflow rules can declare them as inputs.

Snakemake reruns a job when an input changes; declaring the `bnnrepro` modules a job imports
(transitively, found by reading their `import` statements) makes a code change rerun exactly the jobs
that run that code.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import bnnrepro
from bnnrepro.paths import project_root
from bnnrepro.pipeline.dag_cache import cached, files_digest

PACKAGE_DIR = Path(bnnrepro.__file__).parent


@cache
def _module_file(name: str) -> Path | None:
    """bnnrepro.a.b -> .../bnnrepro/a/b.py (or a/b/__init__.py), found on disk without importing it."""
    parts = name.split(".")
    if parts[0] != "bnnrepro":
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def _imported_modules(path: Path, name: str) -> frozenset[str]:
    """bnnrepro modules named by the import statements of one file (and the packages they live in)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return frozenset(m for m in found if _module_file(m) is not None)


@cache
def import_graph(record: Path | None = None) -> dict[str, tuple[str, ...]]:
    """{module: the bnnrepro modules its import statements name} for every module of the package. Parsing them
    all is a tenth of a second of every `snakemake` call: with `record` (`bnnrepro.pipeline.dag_cache`), the graph is
    read back while no source file of the package has changed."""
    modules = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}
    graph = cached(
        record,
        "import_graph",
        files_digest(modules.values()),
        lambda: {name: sorted(_imported_modules(path, name)) for name, path in modules.items()},
    )
    return {name: tuple(imports) for name, imports in graph.items()}


def _module_name(path: Path) -> str:
    """.../bnnrepro/a/b.py -> bnnrepro.a.b; .../bnnrepro/a/__init__.py -> bnnrepro.a."""
    parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
    return ".".join(["bnnrepro", *(parts[:-1] if parts[-1] == "__init__" else parts)])


@cache
def module_closure(name: str, record: Path | None = None) -> frozenset[Path]:
    """Source files of `name` and of every bnnrepro module it imports, transitively, with the packages that hold
    them (importing `bnnrepro.a.b` runs `bnnrepro/__init__.py` and `bnnrepro/a/__init__.py` first). `record`: see
    `import_graph`."""
    graph = import_graph(record)
    seen, todo = set(), [name]
    while todo:
        module = todo.pop()
        path = _module_file(module)
        if path is None or path in seen:
            continue
        seen.add(path)
        todo += [*graph[module], module.rpartition(".")[0]]
    return frozenset(seen)


def project_paths(files) -> list[str]:
    """Project-relative paths (src/bnnrepro/...) of package files; empty where the package is installed
    outside the project (then changes to them cannot be tracked)."""
    root = project_root()
    return [path for path in (_project_path(Path(file), root) for file in sorted(files)) if path is not None]


@cache
def _project_path(file: Path, root: Path) -> str | None:
    in_project = root / "src" / "bnnrepro" / file.relative_to(PACKAGE_DIR)
    return str(in_project.relative_to(root)) if in_project.exists() else None


def source_files(*modules: str, record: Path | None = None) -> list[str]:
    """Project-relative paths of the code the modules run. `record`: see `import_graph`."""
    return list(_source_files(modules, project_root(), record))


@cache
def _source_files(modules: tuple[str, ...], root: Path, record: Path | None) -> tuple[str, ...]:
    """`source_files`, once per DAG build (`root` keys the cache: the paths are relative to it)."""
    return tuple(project_paths(set().union(*(module_closure(m, record) for m in modules))))

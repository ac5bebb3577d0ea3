"""The artifact registry: every figure and table of the five works, and the code that draws ours.

`catalog.yaml` holds the papers' side (id, caption, kind, published numbers). Draw functions register
themselves with `@figure(...)` or `@table(...)` in the modules of this package (one per study, e.g.
`udn_spirals.py`); `implementations()` imports those modules and returns what they registered, `implementation(id)`
imports only the module that draws one. An
artifact is reproduced when its study is enabled and a function draws it.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bnnrepro.files import read_yaml

CATALOG = Path(__file__).with_name("catalog.yaml")
FRAMEWORK_MODULES = {"registry", "render", "context", "declarations", "published_points", "claims", "__main__"}


@cache
def catalog() -> dict:
    """The parsed catalog: {'papers': {...}, 'artifacts': [...]}, artifacts in catalog order."""
    return read_yaml(CATALOG)


def catalog_entry(artifact_id: str) -> dict:
    for entry in catalog()["artifacts"]:
        if entry["id"] == artifact_id:
            return entry
    raise KeyError(f"unknown artifact {artifact_id!r}; the ids are listed in src/bnnrepro/artifacts/catalog.yaml")


@dataclass(frozen=True)
class Implementation:
    """How we draw one artifact.

    uses: "metrics" (the study's aggregated runs), "data" (dataset files, listed by `data_files`),
    "runs" (the file `run_file` in the run folder of each of the study's runs of `methods`, on `datasets`
    if given: a training output such as "config.yaml", or "eval/<name>.npz", which
    `python -m bnnrepro.evaluations` makes from the run's checkpoint) or "nothing" (analytic: computed from
    formulas alone). `note` says how our
    version differs in size or setting from the paper's, per scale.
    """

    artifact_id: str
    output: str  # "figure" or "table"
    draw: Callable
    uses: str
    data_files: Callable[[str], list[str]] | None
    note: Callable[[str], str]
    run_file: str | None = None
    methods: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()  # uses="runs": only the runs on these datasets (all when empty)

    @property
    def stem(self) -> str:
        return artifact_stem(self.artifact_id)


def artifact_stem(artifact_id: str) -> str:
    """File name stem of an artifact's outputs: 'udn/fig3a' -> 'udn_fig3a'."""
    return artifact_id.replace("/", "_").replace(".", "_")


_REGISTERED: dict[str, Implementation] = {}


def _register(output: str, artifact_id: str, uses: str, data_files, note, run_file, methods, datasets) -> Callable:
    if uses not in ("metrics", "data", "runs", "nothing"):
        raise ValueError(f"{artifact_id}: uses must be metrics, data, runs or nothing, got {uses!r}")
    if (uses == "data") != (data_files is not None):
        raise ValueError(f"{artifact_id}: give data_files exactly when uses='data'")
    if (uses == "runs") != bool(run_file and methods):
        raise ValueError(f"{artifact_id}: give run_file and methods exactly when uses='runs'")
    if datasets and uses != "runs":
        raise ValueError(f"{artifact_id}: datasets select runs; give them only when uses='runs'")
    catalog_entry(artifact_id)

    def decorate(draw: Callable) -> Callable:
        if artifact_id in _REGISTERED and _REGISTERED[artifact_id].draw is not draw:
            raise ValueError(f"{artifact_id} is drawn by two functions")
        notes = note if callable(note) else (lambda scale: note)
        _REGISTERED[artifact_id] = Implementation(
            artifact_id, output, draw, uses, data_files, notes, run_file, tuple(methods), tuple(datasets)
        )
        return draw

    return decorate


def figure(
    artifact_id: str, uses: str = "metrics", data_files=None, note="", run_file=None, methods=(), datasets=()
) -> Callable:
    """Register `draw(context) -> matplotlib Figure` for a figure artifact."""
    return _register("figure", artifact_id, uses, data_files, note, run_file, methods, datasets)


def table(
    artifact_id: str, uses: str = "metrics", data_files=None, note="", run_file=None, methods=(), datasets=()
) -> Callable:
    """Register `draw(context) -> DataFrame[row, column, ours, ours_error, n_runs]` for a table artifact."""
    return _register("table", artifact_id, uses, data_files, note, run_file, methods, datasets)


def _decorated_ids(tree: ast.Module) -> set[str]:
    """The ids of `@figure("id", ...)` and `@table("id", ...)` decorators in a module's source (a literal id, or a
    module-level string constant)."""
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    ids = set()
    for node in ast.walk(tree):
        for decorator in getattr(node, "decorator_list", []):
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) in ("figure", "table"):
                first = decorator.args[0] if decorator.args else None
                if isinstance(first, ast.Constant):
                    ids.add(first.value)
                elif isinstance(first, ast.Name) and first.id in constants:
                    ids.add(constants[first.id])
    return ids


def drawing_modules() -> list[str]:
    """The modules of this package that draw artifacts (every module but the framework's), found without importing."""
    return [
        f"{__package__}.{module.name}"
        for module in pkgutil.iter_modules([str(Path(__file__).parent)])
        if module.name not in FRAMEWORK_MODULES
    ]


@cache
def artifact_modules() -> dict[str, str]:
    """{artifact id: the module of this package that draws it}, read from the modules' decorators (ast), so that a
    study's drawing job imports its own modules only, not every study's plotting and model code."""
    modules = {}
    for module in drawing_modules():
        tree = ast.parse(Path(__file__).with_name(f"{module.rpartition('.')[2]}.py").read_text())
        modules.update(dict.fromkeys(_decorated_ids(tree), module))
    return modules


def implementation(artifact_id: str) -> Implementation:
    """How one artifact is drawn, importing only its module when its decorator names it literally."""
    if artifact_id in artifact_modules():
        importlib.import_module(artifact_modules()[artifact_id])
    if artifact_id not in _REGISTERED:
        return implementations()[artifact_id]
    return _REGISTERED[artifact_id]


@cache
def implementations() -> dict[str, Implementation]:
    """Import every artifact module of this package and return the registered implementations."""
    for module in drawing_modules():
        importlib.import_module(module)
    return dict(_REGISTERED)

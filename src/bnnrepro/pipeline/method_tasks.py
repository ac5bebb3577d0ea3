"""The data tasks each method takes, read from its module's declarations, so that a study pairing a method with a
dataset of another task (edl on a regression set) is an error when the workflow builds its DAG, naming the
methods that do take that task, not inside the training job.

Every method module declares, beside its `METHODS` tuple,

    TASKS = ("classification", "regression")              # every method of the module takes these
    TASKS = {"bedl": ("classification", "regression"), "edl": ("classification",)}   # or per method
    NOT_TAKEN = {"forecasting": "why the module's methods do not take it"}   # optional, the reason a study reads

with tasks among `KNOWN_TASKS` (config/train/dataset/*.yaml `task`), and its `build(cfg, spec)` refuses the others.
The workflow reads the declarations on every `snakemake` call, so they are read from the module's source (its
top-level assignments, `ast`), not imported: no method's module (nor torch) is imported, and with a DAG record
(`bnnrepro.pipeline.dag_cache`) the sources are parsed again only after an edit. Training code does not import this
module. `python -m bnnrepro.pipeline.method_tasks` prints the table of methods by task (Markdown).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from bnnrepro import methods
from bnnrepro.methods import METHOD_MODULES
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.dag_cache import cached, files_digest
from bnnrepro.train_configs import read_config_file

KNOWN_TASKS = ("classification", "regression", "forecasting", "sampling")
"""The tasks of config/train/dataset/*.yaml."""


def _module_file(module: str) -> Path:
    return Path(methods.__file__).parent / f"{module.rpartition('.')[2]}.py"


@cache
def _declarations(module: str) -> dict[str, object]:
    """The literal values of the module's top-level `TASKS` and `NOT_TAKEN` assignments."""
    found = {}
    for node in ast.parse(_module_file(module).read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id in ("TASKS", "NOT_TAKEN"):
            found[target.id] = ast.literal_eval(node.value)
    return found


def _module_tasks(module: str) -> dict[str, list[str]]:
    """{method name: tasks} of the module's methods; ValueError naming the module where it declares none."""
    declared = _declarations(module).get("TASKS")
    names = [name for name, owner in METHOD_MODULES.items() if owner == module]
    if declared is None:
        raise ValueError(
            f"{module} declares no TASKS: add `TASKS = (...)` (the data tasks its methods take, of "
            f"{', '.join(KNOWN_TASKS)}) beside its METHODS"
        )
    per_method = declared if isinstance(declared, dict) else dict.fromkeys(names, declared)
    return {name: list(per_method[name]) for name in names}


def method_tasks(record: Path | None = None) -> dict[str, tuple[str, ...]]:
    """{Hydra method name: the tasks its module declares it takes}. `record`: the table is read back while no method
    module changed (`bnnrepro.pipeline.dag_cache`)."""
    modules = sorted(set(METHOD_MODULES.values()))
    table = cached(
        record,
        "method_tasks",
        files_digest([_module_file(module) for module in modules]),
        lambda: {name: tasks for module in modules for name, tasks in _module_tasks(module).items()},
    )
    return {name: tuple(tasks) for name, tasks in table.items()}


def why_not(method: str, task: str) -> str | None:
    """The reason method `method`'s module gives for not taking `task` (`NOT_TAKEN`), if it gives one."""
    return (_declarations(METHOD_MODULES[method]).get("NOT_TAKEN") or {}).get(task)


def methods_taking(task: str, record: Path | None = None) -> list[str]:
    """The Hydra method names that take `task`, sorted."""
    return sorted(name for name, tasks in method_tasks(record).items() if task in tasks)


def _config_method(path: Path) -> str | None:
    """The method a config/train/method file builds: its `name`, or that of the first config its defaults extend."""
    config = read_config_file(path) or {}
    if "name" in config:
        return str(config["name"])
    parents = [entry for entry in config.get("defaults", []) if isinstance(entry, str) and entry != "_self_"]
    return _config_method(path.with_name(f"{parents[0]}.yaml")) if parents else None


def method_configs() -> dict[str, list[str]]:
    """{method: the config/train/method names that build it}: what a study names (`method: <config>`)."""
    configs: dict[str, list[str]] = {}
    for path in sorted((train_config_dir() / "method").glob("*.yaml")):
        if (method := _config_method(path)) is not None:
            configs.setdefault(method, []).append(path.stem)
    return configs


def task_table() -> str:
    """The methods by task as a Markdown table: each method, the configs a study names it by, its module, and a mark
    per task it takes."""
    declared, configs = method_tasks(), method_configs()
    header = "| method | configs a study names | module | " + " | ".join(KNOWN_TASKS) + " |"
    rows = [header, "|---|---|---|" + "---|" * len(KNOWN_TASKS)]
    for name in sorted(declared):
        marks = " | ".join("yes" if task in declared[name] else "" for task in KNOWN_TASKS)
        named = ", ".join(f"`{config}`" for config in configs.get(name, []))
        rows.append(f"| `{name}` | {named} | `{METHOD_MODULES[name]}` | {marks} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(task_table(), end="")

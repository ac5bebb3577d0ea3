"""The data tasks each method takes, read from its module's declarations, so that a study pairing a method with a
dataset of another task (edl on a regression set) is an error when the workflow builds its DAG, naming the
methods that do take that task, not inside the training job.

Every method module declares, beside its `METHODS` tuple,

    TASKS = ("classification", "regression")              # every method of the module takes these
    TASKS = {"bedl": ("classification", "regression"), "edl": ("classification",)}   # or per method
    NOT_TAKEN = {"forecasting": "why the module's methods do not take it"}   # optional, the reason a study reads
    NOT_ON_TABLES = "why the module's methods do not train on a table"      # optional

with tasks among `KNOWN_TASKS` (config/train/dataset/*.yaml `task`), and its `build(cfg, spec)` refuses the others.
The workflow reads the declarations on every `snakemake` call, so they are read from the module's source (its
top-level assignments, `ast`), not imported: no method's module (nor torch) is imported, and with a DAG record
(`bnnrepro.pipeline.dag_cache`) the sources are parsed again only after an edit. Training code does not import this
module. A method config trains on a table (a registry entry of a table loader, `bnnrepro.data.registry.is_table`)
unless its module declares NOT_ON_TABLES or it builds an image network (an `architecture` of `IMAGE_ARCHITECTURES`,
or `convolutions`); a study pairing such a config with a table stops before any job too. `python -m
bnnrepro.pipeline.method_tasks` prints the table of methods by task on a table (Markdown);
tests/test_methods_on_tables.py trains every config it lists on a small table of each task it marks.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from bnnrepro import methods
from bnnrepro.data.registry import is_table
from bnnrepro.methods import METHOD_MODULES, config_method_name
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.dag_cache import cached, files_digest
from bnnrepro.train_configs import read_config_file

KNOWN_TASKS = ("classification", "regression", "forecasting", "sampling")
"""The tasks of config/train/dataset/*.yaml."""


def _module_file(module: str) -> Path:
    return Path(methods.__file__).parent / f"{module.rpartition('.')[2]}.py"


@cache
def _declarations(module: str) -> dict[str, object]:
    """The literal values of the module's top-level `TASKS`, `NOT_TAKEN` and `NOT_ON_TABLES` assignments."""
    found = {}
    for node in ast.parse(_module_file(module).read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id in ("TASKS", "NOT_TAKEN", "NOT_ON_TABLES"):
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


IMAGE_ARCHITECTURES = ("conv", "resnet")
"""A method config's `architecture` that builds an image network (models/conv_dynamics.py, models/resnet.py)."""
TABLE_TASKS = ("classification", "regression")
"""The tasks a table (config/datasets.yaml `task`) can have."""


def _config_value(path: Path, key: str) -> object:
    """A config/train/method file's value of `key`: its own, or that of the first config its defaults extend."""
    config = read_config_file(path) or {}
    if key in config:
        return config[key]
    parents = [entry for entry in config.get("defaults", []) if isinstance(entry, str) and entry != "_self_"]
    return _config_value(path.with_name(f"{parents[0]}.yaml"), key) if parents else None


def _config_method(path: Path) -> str | None:
    """The method a config/train/method file builds (`config_method_name`), or None for a config that names none
    (the repulsive ensembles' shared `posterior_network`)."""
    try:
        return config_method_name(path.stem)
    except KeyError:
        return None


def method_configs() -> dict[str, list[str]]:
    """{method: the config/train/method names that build it}: what a study names (`method: <config>`)."""
    configs: dict[str, list[str]] = {}
    for path in sorted((train_config_dir() / "method").glob("*.yaml")):
        if (method := _config_method(path)) is not None:
            configs.setdefault(method, []).append(path.stem)
    return configs


def table_refusal(config: str) -> str | None:
    """Why method config `config` (config/train/method/<config>.yaml) does not train on a table: its module's
    NOT_ON_TABLES, or the image network its `architecture` or `convolutions` build; None where it does."""
    path = train_config_dir() / "method" / f"{config}.yaml"
    method = _config_method(path)
    if method in METHOD_MODULES and (reason := _declarations(METHOD_MODULES[method]).get("NOT_ON_TABLES")):
        return str(reason)
    if (architecture := _config_value(path, "architecture")) in IMAGE_ARCHITECTURES:
        return f"it builds an image network (architecture: {architecture})"
    if _config_value(path, "convolutions"):
        return "it builds a convolutional network for images (its `convolutions`)"
    return None


def table_error(config: str, dataset: str) -> str | None:
    """Why a study cannot pair method config `config` with `dataset` (a table, `registry.is_table`, that the config
    does not train on), naming the configs of its method that do; None where it can."""
    if not is_table(dataset) or (refusal := table_refusal(config)) is None:
        return None
    method = _config_method(train_config_dir() / "method" / f"{config}.yaml")
    others = table_configs().get(method, [])
    instead = f"its method's configs that do: {', '.join(others)}" if others else "no config of its method does"
    return f"config {config!r} does not train on a table ({refusal}), but dataset {dataset!r} is one; {instead}"


def table_configs() -> dict[str, list[str]]:
    """{method: its configs that train on a table} of the methods that take a table task and have one."""
    declared = method_tasks()
    return {
        method: tables
        for method, configs in method_configs().items()
        if set(declared.get(method, ())) & set(TABLE_TASKS)
        and (tables := [config for config in configs if table_refusal(config) is None])
    }


def task_table() -> str:
    """The methods by task on a table, as a Markdown table: each method, the configs a study names it by that train
    on a table, its module, a mark per table task it takes, and why the others do not train on a table."""
    declared, configs, tables = method_tasks(), method_configs(), table_configs()
    header = "| method | configs for a table | module | " + " | ".join(TABLE_TASKS) + " | not on a table |"
    rows = [header, "|---|---|---|" + "---|" * (len(TABLE_TASKS) + 1)]
    for name in sorted(declared):
        marks = " | ".join("yes" if task in declared[name] and name in tables else "" for task in TABLE_TASKS)
        named = ", ".join(f"`{config}`" for config in tables.get(name, []))
        refused = [config for config in configs.get(name, []) if config not in tables.get(name, [])]
        reasons: dict[str, list[str]] = {}
        for config in refused:
            reason = table_refusal(config) or f"takes {' or '.join(declared[name])} data only"
            reasons.setdefault(reason, []).append(f"`{config}`")
        why = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in reasons.items())
        rows.append(f"| `{name}` | {named} | `{METHOD_MODULES[name]}` | {marks} | {why} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(task_table(), end="")

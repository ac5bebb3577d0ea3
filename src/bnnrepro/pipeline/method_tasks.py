"""The data tasks each method takes, read from its module's `TASKS` tuple, so that a study pairing a method with a
dataset of another task (mc_dropout on a regression set) is an error when the workflow builds its DAG, not inside
the training job.

A method module that takes only some tasks declares them beside its `METHODS` tuple, as a line starting
`TASKS = ("classification",)`, and its `build(cfg, spec)` refuses the others with that constant; a module without
the line takes any task. The workflow reads the tuples on every `snakemake` call, so they are read from the source,
as `bnnrepro.methods.method_modules` reads `METHODS`: no method's module (nor torch) is imported. Training code does
not import this module.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from bnnrepro import methods
from bnnrepro.methods import METHOD_MODULES
from bnnrepro.paths import train_config_dir
from bnnrepro.train_configs import read_config_file

DECLARED_TASKS = re.compile(r"^TASKS\s*=\s*(\([^)]*\))", flags=re.MULTILINE)
"""A method module's `TASKS = ("task", ...)` declaration; group 1 is the tuple."""


@cache
def _module_tasks(module: str) -> tuple[str, ...] | None:
    """The `TASKS` tuple that module `module` (bnnrepro.methods.<name>) declares in its source; None without one."""
    path = Path(methods.__file__).parent / f"{module.rpartition('.')[2]}.py"
    declared = DECLARED_TASKS.findall(path.read_text())
    if len(declared) > 1:
        raise ValueError(f"{module} declares TASKS {len(declared)} times; declare it once")
    return tuple(ast.literal_eval(declared[0])) if declared else None


def method_tasks() -> dict[str, tuple[str, ...] | None]:
    """{Hydra method name: the tasks its module declares it takes (config/train/dataset/*.yaml `task`), None for
    any task}."""
    return {name: _module_tasks(module) for name, module in METHOD_MODULES.items()}


def dataset_task(name: str) -> str | None:
    """The `task` that config/train/dataset/<name>.yaml sets, itself or through its defaults list (uci_boston -> uci:
    regression), as `config_method_name` reads a method's name; None when none sets one. Read with the files the
    workflow reads anyway (`read_config_file`): merging them (`registry.dataset_config`) took 2 ms a dataset."""
    cfg = read_config_file(train_config_dir() / "dataset" / f"{name}.yaml") or {}
    if "task" in cfg:
        return cfg["task"]
    parents = [entry for entry in cfg.get("defaults", []) if isinstance(entry, str) and entry != "_self_"]
    return dataset_task(parents[0]) if parents else None

"""Inference methods. Each Hydra `method` name maps to the module whose `build(cfg, spec)` builds it: the module
that lists the name in its `METHODS` tuple.

A method is an `nn.Module` with the hooks of `bnnrepro.methods.protocol.Method`, checked when it is built.
Modules are imported only when their method runs, so a job loads nothing it does not use.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from bnnrepro.paths import train_config_dir
from bnnrepro.train_configs import read_config_file

if TYPE_CHECKING:  # the workflow reads METHOD_MODULES when it builds the DAG: no torch here
    from omegaconf import DictConfig

    from bnnrepro.data.spec import DataSpec, Splits
    from bnnrepro.methods.protocol import Method


DECLARED_METHODS = re.compile(r"^METHODS\s*=\s*(\([^)]*\))", flags=re.MULTILINE)
"""A module's `METHODS = ("name", ...)` declaration; group 1 is the tuple."""


def method_modules() -> dict[str, str]:
    """{Hydra method name: module} from the `METHODS` tuple that each module of this package declares, read from
    the source (`METHODS = (...)` at the start of a line), so that no method's module is imported before its
    method runs: a new method is its module and its config file, with no list to edit here. (The workflow reads
    this on every `snakemake` call: a full parse of every module took a tenth of a second.)"""
    modules: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        module = f"{__name__}.{path.stem}"
        for names in DECLARED_METHODS.findall(path.read_text()):
            for name in ast.literal_eval(names):
                if name in modules:
                    raise ValueError(f"method {name!r} is declared by both {modules[name]} and {module}")
                modules[name] = module
    return modules


METHOD_MODULES = method_modules()
"""{Hydra method name: the module whose `build(cfg, spec)` builds it}."""


# Families of Bayesian supervised learning methods and their properties (SDE-BNN paper, Table 5, App. C.5):
# (posterior over a stochastic process, flexible approximate posterior, adaptive computation), the references,
# and the methods of METHOD_MODULES that belong to the family.
METHOD_FAMILIES = {
    "Bayes by Backprop": {"properties": (False, False, False), "references": "Blundell et al. (2015)",
                          "implemented_by": ("mfvi",)},
    "MCMC for BNNs": {"properties": (False, True, False),
                      "references": "(Neal, 1996; Wenzel et al., 2020; Izmailov et al., 2021)", "implemented_by": ()},
    "Bayesian Hypernets": {"properties": (False, True, False), "references": "Krueger et al. (2018)",
                           "implemented_by": ()},
    "BBVI for SDEs": {"properties": (True, False, False), "references": "Ryder et al. (2018)", "implemented_by": ()},
    "Bayesian Neural ODEs": {"properties": (False, False, True),
                             "references": "Yildiz et al. (2019) Dandekar et al. (2020)", "implemented_by": ()},
    "SDE-BNN": {"properties": (True, True, True), "references": "current work", "implemented_by": ("sdebnn",)},
}  # fmt: skip


def config_method_name(config_name: str) -> str:
    """The method `name` that config/train/method/<config_name>.yaml sets, itself or through its defaults list
    (e.g. sdebnn_cifar10 -> sdebnn_mnist -> "sdebnn"): how the workflow finds the code a run's method runs."""
    cfg = read_config_file(train_config_dir() / "method" / f"{config_name}.yaml")
    if "name" in cfg:
        return cfg["name"]
    parents = [entry for entry in cfg.get("defaults", []) if entry != "_self_"]
    if not parents:
        raise KeyError(f"config/train/method/{config_name}.yaml sets no method name")
    return config_method_name(parents[0])


def method_module(name: str) -> ModuleType:
    """The module of method `name`, imported; KeyError naming the known methods."""
    if name not in METHOD_MODULES:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHOD_MODULES))}")
    return importlib.import_module(METHOD_MODULES[name])


def own_training_job(name: str) -> Callable | None:
    """`train_job(cfg, run)` of a method whose module owns its training job (a labelling run,
    bnnrepro.methods.active_learning), else None: bnnrepro.train's epochs train it."""
    return getattr(method_module(name), "train_job", None)


def check_task(module: ModuleType, name: str, task: str) -> None:
    """ValueError naming the tasks method `name` takes (its module's `TASKS`) and why not `task` (`NOT_TAKEN`), where
    it does not take `task`; the workflow checks a study's pairs against the same declarations before any job runs
    (bnnrepro.pipeline.method_tasks)."""
    tasks = module.TASKS[name] if isinstance(module.TASKS, dict) else module.TASKS
    if task not in tasks:
        why = getattr(module, "NOT_TAKEN", {}).get(task)
        raise ValueError(
            f"method {name!r} supports {' or '.join(tasks)} data only{f' ({why})' if why else ''}, got {task!r}"
        )


def build_method(cfg: DictConfig, spec: DataSpec, splits: Splits | None = None) -> Method:
    """The method `cfg.method.name` on data `spec`; an error names a missing hook of the protocol. A method whose
    build reads the run's data (a sampling target's samples, a BNSDE's pretraining sequences) declares a `splits`
    parameter and gets `splits`, the data the job loaded: no method loads data itself."""
    from bnnrepro.methods.protocol import check_method

    module = method_module(cfg.method.name)
    check_task(module, cfg.method.name, spec.task)
    if "splits" in inspect.signature(module.build).parameters:
        method = module.build(cfg, spec, splits=splits)
    else:
        method = module.build(cfg, spec)
    check_method(method, module.__name__)
    return method

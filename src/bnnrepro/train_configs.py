"""The files of config/train that a training job's Hydra composition reads, so that each is an input of the job.

`python -m bnnrepro.train` composes config/train/config.yaml with one option of each group (method/, dataset/,
scale/, and the optional protocol/<dataset>_<scale>.yaml, or the defaults of the dataset's task at that scale,
protocol/<task>_<scale>.yaml, that the workflow selects for a dataset without one: `protocol_override`; then the
optional method_protocol/<method>_<scale>.yaml); an option's
file may extend others of its group through its defaults list (method/sdebnn_cifar10.yaml -> sdebnn_mnist.yaml ->
sdebnn.yaml). Editing any of these files must rerun
exactly the runs that compose it: the workflow makes them inputs of rule `train` (`composed_files`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from bnnrepro.files import read_yaml
from bnnrepro.overrides import quote_path_values, quoting_hint
from bnnrepro.paths import project_root, train_config_dir

if TYPE_CHECKING:  # the workflow reads this module when it builds the DAG: Hydra is imported where it composes
    from omegaconf import DictConfig

GROUPS = ("method", "dataset", "scale")
SCALES = ("smoke", "default", "paper")
"""The options of the scale group (config/train/scale/)."""
"""The groups of config/train/config.yaml's defaults list that every run selects an option of."""


def compose_config(overrides: list[str]) -> DictConfig:
    """A run's config: config/train composed with `overrides`, path values quoted for Hydra (bnnrepro.overrides)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import OverrideParseException

    with initialize_config_dir(config_dir=str(train_config_dir()), version_base="1.3", job_name="train"):
        try:
            return compose(config_name="config", overrides=quote_path_values(overrides))
        except OverrideParseException as err:
            raise OverrideParseException(err.override, quoting_hint(err, overrides)) from None


@cache
def read_config_file(path: Path) -> object:
    """A config file's contents, read once per process (the workflow asks for every run's files)."""
    return read_yaml(path)


def default_options() -> dict[str, str]:
    """The option of each group that config/train/config.yaml selects when no override does."""
    defaults = read_config_file(train_config_dir() / "config.yaml")["defaults"]
    options = {key: value for entry in defaults if isinstance(entry, dict) for key, value in entry.items()}
    return {group: options[group] for group in GROUPS}


def option_files(group: str, option: str) -> list[Path]:
    """config/train/<group>/<option>.yaml and the files its defaults list includes, in order: options of the same
    group it extends ("sdebnn") and options of other groups it nests ({"/depth_generator@generator": "default"})."""
    path = train_config_dir() / group / f"{option}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise FileNotFoundError(f"{group}={option}: there is no config/train/{group}/{option}.yaml; known: {known}")
    files = [path]
    for entry in (read_config_file(path) or {}).get("defaults", []):
        if isinstance(entry, str) and entry != "_self_":
            files += option_files(group, entry)
        elif isinstance(entry, dict):
            for key, nested in entry.items():
                nested_group = key.partition("@")[0]
                nested_group = nested_group[1:] if nested_group.startswith("/") else f"{group}/{nested_group}"
                files += option_files(nested_group, nested)
    return files


def composed_files(overrides: list[str], groups: tuple[str, ...] = GROUPS) -> list[str]:
    """Project-relative paths of the config/train files that composing `overrides` (key=value Hydra overrides, e.g.
    a workflow run's) reads: config.yaml, each group's option and its parents, and the protocol file if there is one.
    With `groups`, only the option files of those groups."""
    options = default_options() | {"protocol": None}
    for override in overrides:
        key, _, value = override.partition("=")
        if key in (*GROUPS, "protocol"):
            options[key] = value
    selected = tuple(options[group] for group in GROUPS)
    return list(_selected_files(project_root(), selected, options["protocol"], groups))


@cache
def _selected_files(
    root: Path, selected: tuple[str, ...], protocol_option: str | None, groups: tuple[str, ...]
) -> tuple[str, ...]:
    """`composed_files` of one option per group of GROUPS (`selected`) and a `protocol=` override, if any, in the
    project at `root`: the same for every run of a method variant on a dataset at a scale (the workflow asks for
    thousands of runs), so found once per process, as `read_config_file` reads each file once."""
    options = dict(zip(GROUPS, selected, strict=True))
    files = [train_config_dir() / "config.yaml"] if groups == GROUPS else []
    for group in groups:
        files += option_files(group, options[group])
    if protocol_option is not None:
        protocol = train_config_dir() / "protocol" / f"{protocol_option}.yaml"
    else:
        protocol = protocol_file(options["dataset"], options["scale"])
    if groups == GROUPS and protocol.is_file():
        files.append(protocol)
    if groups == GROUPS and (method_protocol := method_protocol_file(options["method"], options["scale"])).is_file():
        files.append(method_protocol)
    return tuple(str(path.relative_to(root)) for path in dict.fromkeys(files))


GLOBAL_PACKAGE = "# @package _global_"
"""The first line of a protocol file: Hydra merges it at the top of the config, not under `protocol:`."""


def protocol_file(dataset: str, scale: str) -> Path:
    """config/train/protocol/<dataset>_<scale>.yaml: a dataset's epochs, evaluation cadence and model selection."""
    return train_config_dir() / "protocol" / f"{dataset}_{scale}.yaml"


def method_protocol_file(method: str, scale: str) -> Path:
    """config/train/method_protocol/<method>_<scale>.yaml: what method config `method` needs at `scale` whatever the
    dataset (merged after the dataset's protocol; optional)."""
    return train_config_dir() / "method_protocol" / f"{method}_{scale}.yaml"


def task_protocol_file(task: str | None, scale: str) -> Path:
    """config/train/protocol/<task>_<scale>.yaml: the protocol of a dataset of `task` that has none of its own."""
    return train_config_dir() / "protocol" / f"{task}_{scale}.yaml"


def dataset_task(name: str) -> str | None:
    """The `task` that config/train/dataset/<name>.yaml sets, itself or through its defaults list (uci_boston -> uci:
    regression), as `config_method_name` reads a method's name; None when none sets one. Read with the files the
    workflow reads anyway (`read_config_file`): merging them (`registry.dataset_config`) took 2 ms a dataset."""
    cfg = read_config_file(train_config_dir() / "dataset" / f"{name}.yaml") or {}
    if "task" in cfg:
        return cfg["task"]
    parents = [entry for entry in cfg.get("defaults", []) if isinstance(entry, str) and entry != "_self_"]
    return dataset_task(parents[0]) if parents else None


def protocol_override(dataset: str, scale: str) -> list[str]:
    """`protocol=<task>_<scale>` for a dataset without a protocol file of its own at `scale` whose task has default
    ones (config/train/protocol/regression_default.yaml, ...), else nothing (its own file is Hydra's default)."""
    if protocol_file(dataset, scale).is_file() or not task_protocol_file(dataset_task(dataset), scale).is_file():
        return []
    return [f"protocol={dataset_task(dataset)}_{scale}"]


def run_protocol_file(dataset: str, scale: str) -> Path:
    """The protocol file a run on `dataset` at `scale` composes: the dataset's own, else its task's default."""
    own = protocol_file(dataset, scale)
    return own if own.is_file() else task_protocol_file(dataset_task(dataset), scale)


def check_protocol_files(runs: Iterable, scale: str) -> None:
    """Raise FileNotFoundError naming the protocol files to add when a dataset the `runs` train on has none at
    `scale`, neither of its own nor of its task (config.yaml's train/optim defaults would train it 100 epochs and
    select by val_accuracy, which a regression dataset does not record; an explicit protocol says how long and by
    what metric), and ValueError when one lacks its `GLOBAL_PACKAGE` first line."""
    datasets = {run.dataset for run in runs}
    missing = sorted(name for name in datasets if not run_protocol_file(name, scale).is_file())
    if missing:
        files = [str(protocol_file(name, s).relative_to(project_root())) for name in missing for s in SCALES]
        defaults = {str(task_protocol_file(dataset_task(name), scale).relative_to(project_root())) for name in missing}
        raise FileNotFoundError(
            f"dataset(s) {', '.join(missing)} have no protocol file at scale {scale!r}: add {', '.join(files)} "
            "(each sets train.epochs, batch_size, eval_every, checkpoint_every and select_by; see "
            f"config/train/protocol/spirals_smoke.yaml), or their task's defaults ({', '.join(sorted(defaults))})"
        )
    for name in sorted(datasets):
        path = run_protocol_file(name, scale)
        if path.read_text().splitlines()[:1] != [GLOBAL_PACKAGE]:
            raise ValueError(
                f"{path.relative_to(project_root())}: its first line must be '{GLOBAL_PACKAGE}', which puts its train: "
                "and optim: settings at the top of the run's config; without it Hydra files them under protocol: and "
                "the run ignores them"
            )

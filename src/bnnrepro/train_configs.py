"""The files of config/train that a training job's Hydra composition reads, so that each is an input of the job.

`python -m bnnrepro.train` composes config/train/config.yaml with one option of each group (method/, dataset/,
scale/, and the optional protocol/<dataset>_<scale>.yaml); an option's file may extend others of its group through its
defaults list (method/sdebnn_cifar10.yaml -> sdebnn_mnist.yaml -> sdebnn.yaml). Editing any of these files must rerun
exactly the runs that compose it: the workflow makes them inputs of rule `train` (`composed_files`).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bnnrepro.paths import project_root, train_config_dir

GROUPS = ("method", "dataset", "scale")
"""The groups of config/train/config.yaml's defaults list that every run selects an option of."""


def default_options() -> dict[str, str]:
    """The option of each group that config/train/config.yaml selects when no override does."""
    defaults = yaml.safe_load((train_config_dir() / "config.yaml").read_text())["defaults"]
    options = {key: value for entry in defaults if isinstance(entry, dict) for key, value in entry.items()}
    return {group: options[group] for group in GROUPS}


def option_files(group: str, option: str) -> list[Path]:
    """config/train/<group>/<option>.yaml and the files of the same group its defaults list extends, in order."""
    path = train_config_dir() / group / f"{option}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise FileNotFoundError(f"{group}={option}: there is no config/train/{group}/{option}.yaml; known: {known}")
    parents = [entry for entry in (yaml.safe_load(path.read_text()) or {}).get("defaults", []) if entry != "_self_"]
    return [path, *(p for parent in parents if isinstance(parent, str) for p in option_files(group, parent))]


def composed_files(overrides: list[str]) -> list[str]:
    """Project-relative paths of the config/train files that composing `overrides` (key=value Hydra overrides, e.g.
    a workflow run's) reads: config.yaml, each group's option and its parents, and the protocol file if there is one."""
    options = default_options()
    for override in overrides:
        key, _, value = override.partition("=")
        if key in GROUPS:
            options[key] = value
    files = [train_config_dir() / "config.yaml"]
    for group in GROUPS:
        files += option_files(group, options[group])
    protocol = train_config_dir() / "protocol" / f"{options['dataset']}_{options['scale']}.yaml"
    if protocol.is_file():
        files.append(protocol)
    return [str(path.relative_to(project_root())) for path in dict.fromkeys(files)]

"""Repeated mapping keys in the workflow's YAML files, named before the workflow reads them.

YAML parsers keep the last of two equal keys in one mapping and drop the first without a word: a second top-level
`downloads:` block in config/datasets.yaml replaces the first, every download of the first disappears, and the error
that follows names whatever study used one of them. `check_unique_keys` parses each file with a loader that rejects
a repeated key at any depth and names the file, both lines and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

WORKFLOW_CONFIG_PATTERNS = (
    "config/config.yaml",
    "config/datasets.yaml",
    "config/evaluations/*.yaml",
    "config/studies/*.yaml",
    "config/train/**/*.yaml",
    "src/bnnrepro/artifacts/catalog.yaml",
    "profiles/*/*.yaml",  # read by snakemake itself, before the workflow: a repeated key is named, not obeyed
)
"""The YAML files the workflow reads, relative to the project root (besides the --configfile files of a run)."""


class DuplicateKeyError(ValueError):
    """A mapping of a YAML file gives one key twice; the message names the file, both lines, the key and the fix."""


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The safe loader (libyaml's parser where PyYAML has it, as bnnrepro.files reads YAML) that raises
    DuplicateKeyError where a mapping, at any depth, repeats a key; `source` names the file in the message."""

    source = "<string>"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The mapping, after checking that no key of the node's own (merge keys `<<` may override) repeats."""
        if isinstance(node, yaml.MappingNode):
            check_mapping_node(node, self)
        return super().construct_mapping(node, deep=deep)


def check_mapping_node(node: yaml.MappingNode, loader: UniqueKeyLoader) -> None:
    """Raise DuplicateKeyError at the first key of `node` given a second time (hashable keys only; the loader
    rejects the others itself)."""
    first: dict[object, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            earlier = first.setdefault(key, (key_node, value_node))
        except TypeError:
            continue
        if earlier[0] is not key_node:
            raise DuplicateKeyError(duplicate_message(loader.source, key, key_node, *earlier))


def duplicate_message(
    source: str, key: object, key_node: yaml.Node, first_key: yaml.Node, first_value: yaml.Node
) -> str:
    """'<file>:<line>: key ... is given a second time (first on line N); ...' with the fix for a block or a value."""
    where = f"{source}:{key_node.start_mark.line + 1}"
    if isinstance(first_value, yaml.MappingNode):
        fix = f"YAML keeps only the last, dropping every entry of the first: put the entries of both under one '{key}:'"
    else:
        fix = "YAML keeps only the last value, silently: keep one of them"
    return f"{where}: key {key!r} is given a second time (first on line {first_key.start_mark.line + 1}); {fix}"


def display_path(path: Path) -> str:
    """`path` relative to the working directory where it lies under it (the project root, for the workflow)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def check_unique_keys(paths: Iterable[Path]) -> None:
    """Raise DuplicateKeyError naming the first repeated mapping key of any of the YAML files (a YAML syntax error
    is raised as yaml.YAMLError, as any reader of the file would)."""
    for path in paths:
        loader = UniqueKeyLoader(Path(path).read_text())
        loader.source = display_path(Path(path))
        try:
            loader.get_single_data()
        finally:
            loader.dispose()


def workflow_config_files(root: Path) -> list[Path]:
    """The YAML files the workflow reads under the project root `root` that exist (WORKFLOW_CONFIG_PATTERNS)."""
    root = Path(root)
    return [path for pattern in WORKFLOW_CONFIG_PATTERNS for path in sorted(root.glob(pattern))]

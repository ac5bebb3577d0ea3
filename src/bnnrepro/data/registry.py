"""The dataset registry (config/datasets.yaml, checked against data/datasets.schema.yaml): three kinds of dataset.

- A download's raw files are the output of the DVC stage `data/dvc.yaml:fetch@<name>`, prepared once for its
  loader, with an offline stand-in used unless the workflow's `real_data` asks for the real files (always at the
  `paper` scale).
- A packaged dataset ships with an installed Python package (scikit-learn's, say): its `source` function is called
  once and its arrays written for the loader; it needs no network and no stand-in.
- A generated dataset's instance is named by its data keys' values and its seed; the file records the values it
  was made with, so that a run whose config says otherwise stops instead of training on other data.
Where each one's files live: bnnrepro.layout.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jsonschema
import numpy as np
import yaml
from omegaconf import OmegaConf

from bnnrepro import layout
from bnnrepro.data.packages import RegistryPackage
from bnnrepro.data.spec import Splits
from bnnrepro.files import read_yaml
from bnnrepro.layout import is_standin as is_standin  # re-exported: training jobs read it from the registry
from bnnrepro.paths import config_dir, train_config_dir

SCHEMA = Path(__file__).parent / "datasets.schema.yaml"
GENERATED_WITH = "generated_with"
"""The array of a generated instance's file recording, as JSON, the data keys' values and the seed it was made with."""


class RegistryError(ValueError):
    """config/datasets.yaml, or a dataset a run names, that cannot be used; the message names the fix."""


def resolve(reference: str) -> Callable:
    """'module:function' -> the function."""
    module, function = reference.split(":")
    return getattr(importlib.import_module(module), function)


def reference_error(reference: str) -> str | None:
    """Why 'module:function' does not resolve, or None when it does. A module with Python source is read, not
    imported (the workflow checks every reference when it builds the DAG, and importing, say, scikit-learn's
    datasets costs seconds): the function must be defined, assigned or imported at its top level."""
    module, function = reference.split(":")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return f"module {module!r} is not installed or does not exist"
    if spec.origin and spec.origin.endswith(".py"):
        if function in _top_level_names(spec.origin):
            return None
        return f"module {module!r} ({spec.origin}) defines no {function!r} at its top level"
    return None if hasattr(importlib.import_module(module), function) else f"module {module!r} has no {function!r}"


@cache
def _top_level_names(source_file: str) -> set[str]:
    names = set()
    for node in ast.parse(Path(source_file).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


ClassLabels = list | dict | None
"""A classification table's declared classes: its target's values in index order, or {value: name}; None: every
value the target takes, sorted (bnnrepro.data.table_checks.class_indices)."""


def table_target(entry: Download | PackagedDataset) -> dict:
    """The keyword arguments by which a table's prepare step learns the target's declared kind: {} for a regression
    table (and for any download that declares no task), else task and class_labels."""
    if entry.task != "classification":
        return {}
    return {"task": entry.task, "class_labels": entry.class_labels}


@dataclass(frozen=True)
class RemoteFile:
    name: str
    md5: str
    size: int | None


@dataclass(frozen=True)
class Download:
    """A dataset fetched from `url` (or a mirror), checked file by file, prepared once for its loader."""

    name: str
    title: str
    url: str
    mirror_path: str
    licence: str
    format: str
    files: tuple[RemoteFile, ...]
    prepare: str  # "module:function" (raw folder, out .npz, **options)
    loader: str  # "module:function" (prepared .npz, dataset config) -> Splits
    standin: str | None = None  # "module:function" (entry, out .npz) writing the offline stand-in
    options: Mapping = field(default_factory=dict)  # keyword arguments of `prepare`
    real_data: bool = False  # the real files at every scale (no stand-in), as config `real_data` naming it
    standin_shape: tuple[int, int] | None = None  # (rows, features) of a tabular stand-in
    packages: tuple[RegistryPackage, ...] = ()  # registry packages of the same content (bnnrepro.data.packages)
    content_sha256: Mapping[str, str] = field(default_factory=dict)  # {array: digest} of the decoded content
    task: str | None = None  # a table's task (bnnrepro.data.tabular): regression (None) or classification
    class_labels: ClassLabels = None  # a classification table's classes: values, or {value: name}

    def source_url(self, file: RemoteFile, mirror: str | None) -> str:
        if mirror:
            return f"{mirror.rstrip('/')}/{self.mirror_path}{file.name}"
        return f"{self.url}{file.name}"

    def prepared_file(self, standin: bool) -> str:
        return layout.prepared_download_file(self.name, standin)


@dataclass(frozen=True)
class PackagedDataset:
    """A dataset an installed package ships: `source(**options)` returns (x, y) or an object with .data and .target
    (scikit-learn's `load_*` functions); `prepare` writes them once for `loader`, which applies the split rule."""

    name: str
    title: str
    licence: str
    source: str  # "module:function"
    loader: str  # "module:function" (prepared .npz, dataset config) -> Splits
    options: Mapping = field(default_factory=dict)
    task: str | None = None  # regression (None) or classification, as for a Download
    class_labels: ClassLabels = None

    def prepared_file(self) -> str:
        return layout.prepared_download_file(self.name)

    def package_version(self) -> str:
        """'<distribution>==<version>' of the package that ships the data (its data may change between versions)."""
        top = self.source.split(":")[0].split(".")[0]
        distributions = importlib.metadata.packages_distributions().get(top, [top])
        return ", ".join(f"{d}=={importlib.metadata.version(d)}" for d in distributions)


@dataclass(frozen=True)
class GeneratedDataset:
    """A synthetic dataset made by `generator` from the `data_keys` of its Hydra config and a seed."""

    name: str
    title: str
    generator: str  # "module:function" taking the data keys and seed, returning Splits
    data_keys: tuple[str, ...]

    def generation_values(self, values: Mapping) -> dict:
        """Every data key's value: those given, else the generator's default (the paper's)."""
        parameters = inspect.signature(resolve(self.generator)).parameters
        defaults = {k: p.default for k, p in parameters.items() if p.default is not inspect.Parameter.empty}
        return {key: values[key] if key in values else defaults.get(key) for key in self.data_keys}

    def generate(self, values: Mapping, seed: int) -> Splits:
        """The instance for `values` and `seed`, recording both in the array `generated_with`."""
        splits = resolve(self.generator)(seed=seed, **values)
        record = json.dumps({**self.generation_values(values), "seed": seed})
        return Splits({**splits.arrays, GENERATED_WITH: np.array(record)})


Entry = Download | PackagedDataset | GeneratedDataset
KINDS = {"downloads": Download, "packaged": PackagedDataset, "generated": GeneratedDataset}


def registry_file() -> Path:
    return config_dir() / "datasets.yaml"


def _schema_error(err: jsonschema.ValidationError, schema: dict) -> str:
    """The message of a schema violation, naming the entry, the field and, for an unknown field, the valid ones."""
    where = ".".join(str(p) for p in err.absolute_path) or "top level"
    if err.validator == "additionalProperties":
        unknown = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        valid = ", ".join(err.schema.get("properties", {}))
        return f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: {valid}"
    if err.validator == "required":
        return f"{where}: {err.message}; required fields: {', '.join(err.validator_value)}"
    return f"{where}: {err.message}"


@cache
def _registry() -> dict[str, Entry]:
    raw = read_yaml(registry_file()) or {}
    schema = read_yaml(SCHEMA)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(raw))
    if error is not None:
        raise RegistryError(f"{registry_file()}: {_schema_error(error, schema)} (schema: {SCHEMA.name})")
    entries: dict[str, Entry] = {}
    for kind, cls in KINDS.items():
        for name, entry in (raw.get(kind) or {}).items():
            if name in entries:
                raise RegistryError(f"{registry_file()}: dataset {name!r} is registered twice; rename one")
            if cls is Download:
                files = tuple(RemoteFile(f["name"], f["md5"], f.get("size")) for f in entry["files"])
                shape = tuple(entry["standin_shape"]) if "standin_shape" in entry else None
                packages = tuple(RegistryPackage(**package) for package in entry.get("packages", []))
                entries[name] = Download(name=name, **{**entry, "files": files, "standin_shape": shape,
                                                       "packages": packages})  # fmt: skip
            elif cls is GeneratedDataset:
                entries[name] = GeneratedDataset(name, entry["title"], entry["generator"], tuple(entry["data_keys"]))
            else:
                entries[name] = cls(name=name, **entry)
    return entries


TABLE_LOADER = "bnnrepro.data.tabular:load"
TABLE_LOADERS = (TABLE_LOADER, "bnnrepro.data.uci:load")
CSV_PREPARE = "bnnrepro.data.csv_tables:prepare_csv"
"""The prepare step of a CSV download, whose header the workflow checks before any job where the file is at hand."""
"""The loaders of tables: rows of features and a target (a CSV, a packaged table, the UCI sets)."""


def is_table(name: str) -> bool:
    """Whether dataset `name` is a table (its registry loader is one of TABLE_LOADERS)."""
    entry = _registry().get(name)
    return isinstance(entry, Download | PackagedDataset) and entry.loader in TABLE_LOADERS


def table_task_error(name: str, config_task: str | None) -> str | None:
    """Why a table's training config disagrees with its registry entry on the task (the entry declares it, default
    regression; the config's `task` decides how runs are trained and judged), or None where they agree or `name` is
    no table."""
    entry = _registry().get(name)
    if not isinstance(entry, Download | PackagedDataset) or (entry.task is None and entry.loader != TABLE_LOADER):
        return None
    declared = entry.task or "regression"
    if config_task == declared:
        return None
    shared = "tabular_classification" if declared == "classification" else "tabular"
    return (
        f"dataset {name!r}: config/datasets.yaml declares task {declared} (its `task:`, regression where it gives "
        f"none), but config/train/dataset/{name}.yaml sets task {config_task}; make them agree: `defaults: [{shared}, "
        f"_self_]` in the training config, or `task: {config_task}` in the registry entry"
    )


def check_references() -> None:
    """Raise RegistryError naming every function reference of config/datasets.yaml that does not resolve (the
    workflow calls it when it builds the DAG, before any job runs)."""
    problems = []
    for entry in _registry().values():
        steps = [(step, getattr(entry, step, None)) for step in ("prepare", "loader", "standin", "source", "generator")]
        steps += [(f"packages[{i}].reader", package.reader) for i, package in enumerate(getattr(entry, "packages", ()))]
        for step, reference in steps:
            if reference is not None and (why := reference_error(reference)):
                problems.append(f"{entry.name}.{step} = {reference}: {why}")
    if problems:
        raise RegistryError(f"{registry_file()}: " + "; ".join(problems))


def dataset(name: str) -> Entry:
    if name not in _registry():
        raise KeyError(
            f"unknown dataset {name!r}; known datasets (config/datasets.yaml): {', '.join(sorted(_registry()))}"
        )
    return _registry()[name]


def downloads() -> list[Download]:
    return [entry for entry in _registry().values() if isinstance(entry, Download)]


def packaged() -> list[PackagedDataset]:
    return [entry for entry in _registry().values() if isinstance(entry, PackagedDataset)]


def uses_real_data(name: str, scale: str, real_data: Collection[str] | str = ()) -> bool:
    """Whether runs at `scale` read download `name`'s real files rather than its offline stand-in: always at the
    `paper` scale; below it when the workflow's `real_data` is "all" or names the download, or its registry entry
    says `real_data: true`."""
    declared = getattr(_registry().get(name), "real_data", False)
    return scale == "paper" or real_data == "all" or name in real_data or declared


def prepared_file(name: str, scale: str, real_data: Collection[str] | str = ()) -> str:
    """The prepared file a run at `scale` reads for a download (real or stand-in, `uses_real_data`) or a packaged
    dataset (real at every scale: it needs no network)."""
    entry = dataset(name)
    if isinstance(entry, Download):
        return entry.prepared_file(standin=not uses_real_data(name, scale, real_data))
    if isinstance(entry, PackagedDataset):
        return entry.prepared_file()
    raise RegistryError(f"dataset {name!r} is generated: its files are named by its data keys (data_path)")


def check_real_data(real_data: Collection[str] | str) -> None:
    """Raise RegistryError unless `real_data` is "all" or a list of registered downloads."""
    if real_data == "all":
        return
    names = [entry.name for entry in downloads()]
    unknown = [name for name in real_data if name not in names]
    if unknown:
        raise RegistryError(
            f"config 'real_data': {', '.join(map(repr, unknown))} is no download of config/datasets.yaml (only "
            f"downloads have stand-ins); downloads: {', '.join(names)}; or give real_data: all"
        )


def load_splits(config: Mapping) -> Splits:
    """The splits a training job reads: a download or packaged dataset through its registry loader (which applies
    the split and preprocessing of the Hydra dataset config), a generated dataset as written, after checking that
    it was made with the config's data keys (`check_generated_with`); with `max_examples` ({split: n}, the small scales'
    subsets), the first n examples of each split named."""
    entry = dataset(config["name"])
    path = Path(config["path"])
    if not path.is_file():
        raise FileNotFoundError(
            f"dataset file {path} does not exist: build it with `snakemake --cores 1 {path}` (the workflow makes "
            "it before any run that needs it)"
        )
    if isinstance(entry, GeneratedDataset):
        splits = Splits.load(path)
        check_generated_with(entry, splits, config, path)
    else:
        splits = resolve(entry.loader)(path, config)
    arrays = {k: v for k, v in splits.arrays.items() if k != GENERATED_WITH}
    for split, limit in (config.get("max_examples") or {}).items():
        if limit is not None:
            arrays.update({f"{a}_{split}": arrays[f"{a}_{split}"][:limit] for a in "xy"})
    return Splits(arrays)


def check_generated_with(entry: GeneratedDataset, splits: Splits, config: Mapping, path: Path) -> None:
    """Raise RegistryError unless the instance at `path` was generated with the data keys' values of `config`: a
    run's recorded config must be the config it ran with. (The instance's seed is recorded too, but not checked: a
    run may train with other seeds on one data set.)"""
    if GENERATED_WITH not in splits.arrays:
        raise RegistryError(f"{path} does not record the values it was generated with; delete it and rerun")
    recorded = json.loads(str(splits.arrays[GENERATED_WITH]))
    wanted = {key: config[key] for key in entry.data_keys if key in config}
    differ = {key: (value, recorded.get(key)) for key, value in wanted.items() if not _same(value, recorded.get(key))}
    if differ:
        given = ", ".join(f"dataset.{key}={ours} (the file's: {theirs})" for key, (ours, theirs) in differ.items())
        instance = data_path(entry.name, {key: wanted[key] for key in differ}, recorded["seed"])
        raise RegistryError(
            f"dataset {entry.name!r}: the run asks for {given}, but {path} was generated with other values, so the "
            "run would train on data its config.yaml does not describe. Generate the instance it asks for "
            f"(`snakemake --cores 1 '{instance}'`) and pass it as dataset.path, or, in a study, put the dataset.* "
            "keys in a grid: the workflow then generates and passes the right instance"
        )


def _same(ours: object, theirs: object) -> bool:
    if isinstance(ours, int | float) and isinstance(theirs, int | float) and not isinstance(ours, bool):
        return math.isclose(float(ours), float(theirs), rel_tol=1e-12, abs_tol=0.0)
    return ours == theirs


def parse_instance(instance: str) -> dict[str, str]:
    """'omega=4+seed=0' -> {'omega': '4', 'seed': '0'} (a '+' inside a value, as in 1e+30, is kept)."""
    return dict(item.split("=", 1) for item in re.split(r"\+(?=[A-Za-z_]\w*=)", instance))


def instance_name(values: Mapping, seed: int) -> str:
    return layout.PAIR_SEPARATOR.join([*(f"{k}={v}" for k, v in values.items()), f"seed={seed}"])


def data_path(dataset_name: str, values: Mapping, seed: int) -> str:
    return layout.generated_data_file(dataset_name, instance_name(values, seed))


def dataset_config(dataset_name: str) -> dict:
    """The Hydra dataset option config/train/dataset/<name>.yaml merged over the files its defaults list extends
    (empty when the dataset has no such file)."""
    from bnnrepro.train_configs import option_files

    path = train_config_dir() / "dataset" / f"{dataset_name}.yaml"
    if not path.is_file():
        return {}
    files = option_files("dataset", dataset_name)
    merged = OmegaConf.merge(*(OmegaConf.load(f) for f in reversed(files)))
    return OmegaConf.to_container(merged)


def generate_instance(dataset_name: str, instance: str, out: Path) -> None:
    """Generate one data file. Data keys not in `instance` take the Hydra dataset config's values
    (config/train/dataset/<name>.yaml and the files it extends) where it sets them, else the generator's defaults
    (the paper's)."""
    entry = dataset(dataset_name)
    if not isinstance(entry, GeneratedDataset):
        raise RegistryError(f"dataset {dataset_name!r} is not a generated dataset: fetch or prepare it instead")
    config = dataset_config(dataset_name)
    given = parse_instance(instance)
    seed = int(given.pop("seed"))
    unknown = set(given) - set(entry.data_keys)
    if unknown:
        raise RegistryError(
            f"dataset {dataset_name!r} has no data key(s) {sorted(unknown)}; data keys: {entry.data_keys}"
        )
    values = {k: config[k] for k in entry.data_keys if k in config}
    values.update({k: yaml.safe_load(v) for k, v in given.items()})
    entry.generate(values, seed).save(out)

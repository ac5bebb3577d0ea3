"""The dataset registry (config/datasets.yaml): downloads fetched through DVC and generated datasets.

Where each dataset's files live (bnnrepro.layout): a download's raw files are the output of the DVC stage
`data/dvc.yaml:fetch@<name>`, prepared once for the loaders, with an offline stand-in used below the `paper`
scale; a generated dataset's instance is named by its data keys' values and its seed.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from bnnrepro import layout
from bnnrepro.data.spec import Splits
from bnnrepro.layout import is_standin as is_standin  # re-exported: training jobs read it from the registry
from bnnrepro.paths import project_root, train_config_dir


def resolve(reference: str) -> Callable:
    """'module:function' -> the function."""
    module, function = reference.split(":")
    return getattr(importlib.import_module(module), function)


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
    prepare: str  # "module:function" (raw folder, out .npz)
    loader: str  # "module:function" (prepared .npz, dataset config) -> Splits
    standin: str  # "module:function" (out .npz, seed) writing the offline stand-in

    def source_url(self, file: RemoteFile, mirror: str | None) -> str:
        if mirror:
            return f"{mirror.rstrip('/')}/{self.mirror_path}{file.name}"
        return f"{self.url}{file.name}"

    def prepared_file(self, standin: bool) -> str:
        return layout.prepared_download_file(self.name, standin)


@dataclass(frozen=True)
class GeneratedDataset:
    """A synthetic dataset made by `generator` from the `data_keys` of its Hydra config and a seed."""

    name: str
    title: str
    generator: str  # "module:function" taking the data keys and seed, returning Splits
    data_keys: tuple[str, ...]

    def generate(self, values: dict, seed: int):
        return resolve(self.generator)(seed=seed, **values)


def registry_file() -> Path:
    return project_root() / "config" / "datasets.yaml"


@cache
def _registry() -> dict[str, Download | GeneratedDataset]:
    raw = yaml.safe_load(registry_file().read_text())
    entries: dict[str, Download | GeneratedDataset] = {}
    for name, entry in raw.get("downloads", {}).items():
        files = tuple(RemoteFile(f["name"], f["md5"], f.get("size")) for f in entry["files"])
        fields = {
            k: entry[k] for k in ("title", "url", "mirror_path", "licence", "format", "prepare", "loader", "standin")
        }
        entries[name] = Download(name=name, files=files, **fields)
    for name, entry in raw.get("generated", {}).items():
        entries[name] = GeneratedDataset(name, entry["title"], entry["generator"], tuple(entry["data_keys"]))
    return entries


def dataset(name: str) -> Download | GeneratedDataset:
    if name not in _registry():
        raise KeyError(
            f"unknown dataset {name!r}; known datasets (config/datasets.yaml): {', '.join(sorted(_registry()))}"
        )
    return _registry()[name]


def downloads() -> list[Download]:
    return [entry for entry in _registry().values() if isinstance(entry, Download)]


def load_splits(config: Mapping) -> Splits:
    """The splits a training job reads: a download through its registry loader (which applies the
    preprocessing of the Hydra dataset config), a generated dataset as written; with `max_examples`
    ({split: n}, the small scales' subsets), the first n examples of each split named."""
    entry = dataset(config["name"])
    if isinstance(entry, Download):
        splits = resolve(entry.loader)(Path(config["path"]), config)
    else:
        splits = Splits.load(Path(config["path"]))
    arrays = dict(splits.arrays)
    for split, limit in (config.get("max_examples") or {}).items():
        if limit is not None:
            arrays.update({f"{a}_{split}": arrays[f"{a}_{split}"][:limit] for a in "xy"})
    return Splits(arrays)


def parse_instance(instance: str) -> dict[str, str]:
    """'omega=4+seed=0' -> {'omega': '4', 'seed': '0'} (a '+' inside a value, as in 1e+30, is kept)."""
    return dict(item.split("=", 1) for item in re.split(r"\+(?=[A-Za-z_]\w*=)", instance))


def instance_name(values: dict, seed: int) -> str:
    return layout.PAIR_SEPARATOR.join([*(f"{k}={v}" for k, v in values.items()), f"seed={seed}"])


def data_path(dataset_name: str, values: dict, seed: int) -> str:
    return layout.generated_data_file(dataset_name, instance_name(values, seed))


def generate_instance(dataset_name: str, instance: str, out: Path) -> None:
    """Generate one data file. Data keys not in `instance` take the Hydra dataset config's values
    (config/train/dataset/<name>.yaml) where it sets them, else the generator's defaults (the paper's)."""
    entry = dataset(dataset_name)
    if not isinstance(entry, GeneratedDataset):
        raise KeyError(f"dataset {dataset_name!r} is a download: fetch and prepare it instead of generating it")
    config_file = train_config_dir() / "dataset" / f"{dataset_name}.yaml"
    config = OmegaConf.load(config_file) if config_file.exists() else {}
    given = parse_instance(instance)
    seed = int(given.pop("seed"))
    unknown = set(given) - set(entry.data_keys)
    if unknown:
        raise KeyError(f"dataset {dataset_name!r} has no data key(s) {sorted(unknown)}; data keys: {entry.data_keys}")
    values = {k: config[k] for k in entry.data_keys if k in config}
    values.update({k: yaml.safe_load(v) for k, v in given.items()})
    entry.generate(values, seed).save(out)

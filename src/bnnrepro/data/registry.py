"""Registry of the datasets the studies train on.

A generated dataset names its generator and the Hydra `dataset` keys that change the data (the
others, such as the hidden width, only change the model). A data file is one instance:
`results/data/<dataset>/<key>=<value>,...,seed=<seed>.npz`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from bnnrepro.data.spec import Splits
from bnnrepro.paths import train_config_dir


@dataclass(frozen=True)
class GeneratedDataset:
    name: str
    generator: str  # "module:function" taking the data keys and seed, returning Splits
    data_keys: tuple[str, ...]  # dataset config keys passed to the generator

    def generate(self, values: dict, seed: int) -> Splits:
        module, function = self.generator.split(":")
        return getattr(importlib.import_module(module), function)(seed=seed, **values)


DATASETS = {
    "spirals": GeneratedDataset(
        "spirals",
        "bnnrepro.data.spirals:generate",
        ("omega", "n_train", "n_val", "n_test", "noise_std"),
    ),
}


def dataset(name: str) -> GeneratedDataset:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]


def parse_instance(instance: str) -> dict[str, str]:
    """'omega=4,seed=0' -> {'omega': '4', 'seed': '0'}."""
    return dict(item.split("=", 1) for item in instance.split(","))


def instance_name(values: dict, seed: int) -> str:
    return ",".join([*(f"{k}={v}" for k, v in values.items()), f"seed={seed}"])


def data_path(dataset_name: str, values: dict, seed: int) -> str:
    return f"results/data/{dataset_name}/{instance_name(values, seed)}.npz"


def generate_instance(dataset_name: str, instance: str, out: Path) -> None:
    """Generate one data file; unspecified data keys take the Hydra dataset config's values."""
    entry = dataset(dataset_name)
    config = OmegaConf.load(train_config_dir() / "dataset" / f"{dataset_name}.yaml")
    given = parse_instance(instance)
    seed = int(given.pop("seed"))
    unknown = set(given) - set(entry.data_keys)
    if unknown:
        raise KeyError(f"dataset {dataset_name!r} has no data key(s) {sorted(unknown)}; data keys: {entry.data_keys}")
    values = {k: yaml.safe_load(given[k]) if k in given else config[k] for k in entry.data_keys}
    entry.generate(values, seed).save(out)

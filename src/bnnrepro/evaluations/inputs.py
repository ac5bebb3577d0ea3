"""What an evaluation reads: a finished run (its config, data, trained method and the method as initialised), and
its declaration's settings at the run's scale and extra datasets (config/evaluations/<name>.yaml)."""

from __future__ import annotations

import copy
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from bnnrepro.data.registry import load_splits
from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.files import verify_archive
from bnnrepro.methods import build_method
from bnnrepro.paths import train_config_dir
from bnnrepro.runs import RunFolder


@dataclass(frozen=True)
class EvaluationInputs:
    """What an evaluation reads besides its run's trained method and data: its settings at the run's scale, the
    prepared files of its extra datasets, the run's seed (which fixes the evaluation's randomness), its device
    setting (auto, cpu, cuda: `bnnrepro.device.resolve_device`), the run's dataset config (name, preprocessing) and
    `untrained`, the run's method at its seeded initialisation (e.g. the prior of an SDE-BNN)."""

    settings: Mapping = field(default_factory=dict)
    data_files: Mapping[str, Path] = field(default_factory=dict)
    seed: int = 0
    device: str = "cpu"
    run_dataset: Mapping = field(default_factory=dict)
    untrained: nn.Module | None = None

    def dataset(self, name: str, **options) -> Splits:
        """Extra dataset `name` as its loader makes it: config/train/dataset/<name>.yaml composed with the file's
        path and `options` (e.g. CIFAR-10-C's corruption and severity)."""
        if name not in self.data_files:
            raise KeyError(f"this evaluation was given no file of dataset {name!r} (given: {sorted(self.data_files)})")
        path = self.data_files[name]
        config = OmegaConf.merge(
            OmegaConf.load(train_config_dir() / "dataset" / f"{name}.yaml"), {"path": str(path), **options}
        )
        try:
            return load_splits(config)
        except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as err:
            raise ValueError(
                f"dataset {name!r}: cannot read {path} ({type(err).__name__}: {err}); it is incomplete or corrupt. "
                f"Delete it and make it again with `snakemake --cores 1 {path}`"
            ) from err

    def untrained_method(self) -> nn.Module:
        """The run's method as initialised; an error where the caller gave none."""
        if self.untrained is None:
            raise ValueError("this evaluation needs the run's untrained method: pass EvaluationInputs(untrained=...)")
        return self.untrained


def evaluation_inputs(
    name: str, cfg: DictConfig, data: Mapping[str, Path], untrained: nn.Module | None = None
) -> EvaluationInputs:
    """The inputs of evaluation `name` of the run with resolved config `cfg`, given the files of its extra datasets
    and the run's untrained method; a missing file is an error that names the dataset and how to make it."""
    declared = declared_evaluation(name)
    expected = declared.data_of(OmegaConf.select(cfg, "dataset.name", default=None))
    if set(expected) != set(data):
        raise ValueError(
            f"evaluation {name!r} reads datasets {sorted(expected) or 'none'} besides the run's "
            f"(config/evaluations/{name}.yaml); given {sorted(data) or 'none'}: pass --data DATASET=FILE for each"
        )
    for data_name, path in data.items():
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"evaluation {name!r} needs dataset {data_name!r}, but {path} does not exist. Make it with "
                f"`snakemake --cores 1 {path}` (the offline stand-in below the paper scale; at paper, the download "
                "fetched through DVC, config/datasets.yaml)"
            )
    scale = cfg.scale.name
    if scale not in declared.settings:
        raise KeyError(f"config/evaluations/{name}.yaml: evaluation {name!r} has no settings for scale {scale!r}")
    files = {key: Path(value) for key, value in data.items()}
    run_dataset = OmegaConf.to_container(cfg.dataset, resolve=True) if "dataset" in cfg else {}
    return EvaluationInputs(declared.settings[scale], files, int(cfg.seed), cfg.device, run_dataset, untrained)


def load_run(run_dir: Path) -> tuple[DictConfig, Splits, nn.Module, nn.Module]:
    """(config, data, trained method, the same method as initialised) of a finished run, on the CPU."""
    cfg = OmegaConf.load(run_dir / RunFolder.CONFIG)
    splits = load_splits(cfg.dataset)
    torch.manual_seed(cfg.seed)
    method = build_method(cfg, splits.spec(cfg.dataset.task), splits)
    untrained = copy.deepcopy(method)
    checkpoint = run_dir / RunFolder.CHECKPOINT
    verify_archive(checkpoint, "checkpoint")
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]
    method.prepare_resume(state)
    method.load_state_dict(state)
    return cfg, splits, method.eval(), untrained.eval()

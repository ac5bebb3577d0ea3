"""An evaluation job: `python -m bnnrepro.evaluation RUN_DIR NAME OUT.npz [--data DATASET=FILE ...]`.

Some figures need more than a run's metrics: predictive samples on a grid, hidden-state paths, weight
samples, metrics under other solvers or on shifted data. An evaluation reloads a finished run (its resolved
config and checkpoint), computes the arrays of evaluation NAME and writes them atomically as .npz.

* An evaluation declared in config/evaluations.yaml is computed by its `code` module,
  `evaluation_arrays(method, name, splits, inputs)`, with `inputs` (`EvaluationInputs`) its settings at the run's
  scale and the files of the registry datasets it reads besides the run's own (`data`, each passed as
  `--data DATASET=FILE`: the file `extra_data_files` names). Keeping that code out of the method modules keeps
  it out of the training jobs' inputs (the code they import), so changing it reruns only evaluations.
* Any other is the method's own, `method.evaluation_arrays(name, splits, untrained)`, where `untrained` is the
  same model at its seeded initialisation (e.g. the prior of an SDE-BNN).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import torch
import yaml
from omegaconf import DictConfig, OmegaConf

from bnnrepro.data.registry import dataset, load_splits
from bnnrepro.data.spec import Splits
from bnnrepro.files import write_atomic
from bnnrepro.methods import build_method
from bnnrepro.paths import project_root, train_config_dir
from bnnrepro.runs import RunFolder


@dataclass(frozen=True)
class DeclaredEvaluation:
    """An entry of config/evaluations.yaml: the module that computes it, the registry datasets it reads besides
    its run's, and its settings per scale."""

    code: str
    data: tuple[str, ...] = ()
    settings: Mapping[str, Mapping] = field(default_factory=dict)


def evaluations_file() -> Path:
    return project_root() / "config" / "evaluations.yaml"


@cache
def declared_evaluations() -> dict[str, DeclaredEvaluation]:
    raw = yaml.safe_load(evaluations_file().read_text())
    return {name: DeclaredEvaluation(e["code"], tuple(e.get("data", ())), e.get("settings", {}))
            for name, e in raw.items()}  # fmt: skip


def evaluation_modules(name: str) -> list[str]:
    """The module that computes evaluation `name` besides the run's method (none for a method's own)."""
    declared = declared_evaluations().get(name)
    return [] if declared is None else [declared.code]


def extra_data_files(name: str, scale: str) -> dict[str, str]:
    """{dataset: prepared file} of the datasets evaluation `name` reads besides its run's: a download's offline
    stand-in below the `paper` scale and the real data at `paper`, as for the training runs' own datasets."""
    declared = declared_evaluations().get(name)
    names = declared.data if declared else ()
    return {data: dataset(data).prepared_file(standin=scale != "paper") for data in names}


@dataclass(frozen=True)
class EvaluationInputs:
    """What a declared evaluation reads besides its run: its settings at the run's scale, the prepared files of its
    extra datasets, the run's seed (which fixes the evaluation's randomness), its device setting (auto, cpu,
    cuda: `bnnrepro.device.resolve_device`) and the run's dataset config (name, preprocessing)."""

    settings: Mapping = field(default_factory=dict)
    data_files: Mapping[str, Path] = field(default_factory=dict)
    seed: int = 0
    device: str = "cpu"
    run_dataset: Mapping = field(default_factory=dict)

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


def evaluation_inputs(name: str, cfg: DictConfig, data: Mapping[str, Path]) -> EvaluationInputs:
    """The inputs of declared evaluation `name` of the run with resolved config `cfg`, given the files of its extra
    datasets; a missing file is an error that names the dataset and how to make it."""
    declared = declared_evaluations()[name]
    if set(declared.data) != set(data):
        raise ValueError(
            f"evaluation {name!r} reads datasets {sorted(declared.data) or 'none'} besides the run's "
            f"(config/evaluations.yaml); given {sorted(data) or 'none'}: pass --data DATASET=FILE for each"
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
        raise KeyError(f"config/evaluations.yaml: evaluation {name!r} has no settings for scale {scale!r}")
    files = {key: Path(value) for key, value in data.items()}
    run_dataset = OmegaConf.to_container(cfg.dataset, resolve=True) if "dataset" in cfg else {}
    return EvaluationInputs(declared.settings[scale], files, int(cfg.seed), cfg.device, run_dataset)


def load_run(run_dir: Path) -> tuple[DictConfig, Splits, torch.nn.Module, torch.nn.Module]:
    """(config, data, trained method, the same method as initialised) of a finished run, on the CPU."""
    cfg = OmegaConf.load(run_dir / RunFolder.CONFIG)
    splits = load_splits(cfg.dataset)
    torch.manual_seed(cfg.seed)
    method = build_method(cfg, splits.spec(cfg.dataset.task))
    untrained = copy.deepcopy(method)
    state = torch.load(run_dir / RunFolder.CHECKPOINT, map_location="cpu", weights_only=True)["model"]
    method.prepare_resume(state)
    method.load_state_dict(state)
    return cfg, splits, method.eval(), untrained.eval()


def _data_argument(text: str) -> tuple[str, Path]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"expected DATASET=FILE, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.evaluation")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("name")
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=_data_argument, action="append", default=[], metavar="DATASET=FILE",
                        help="the prepared file of a dataset the evaluation reads besides the run's")  # fmt: skip
    args = parser.parse_args(argv)
    declared = declared_evaluations().get(args.name)
    if declared is None and args.data:
        raise ValueError(f"evaluation {args.name!r} reads no dataset besides the run's; drop --data")
    cfg, splits, method, untrained = load_run(args.run_dir)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    with torch.no_grad():
        if declared is None:
            arrays = method.evaluation_arrays(args.name, splits, untrained)
        else:
            inputs = evaluation_inputs(args.name, cfg, dict(args.data))
            arrays = importlib.import_module(declared.code).evaluation_arrays(method, args.name, splits, inputs)
    write_atomic(args.out, lambda tmp: np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()}))


if __name__ == "__main__":
    main()

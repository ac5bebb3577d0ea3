"""An evaluation job: `python -m bnnrepro.evaluation RUN_DIR NAME OUT.npz`.

Some figures need more than a run's metrics: predictive samples on a grid, hidden-state paths, weight
samples. An evaluation reloads a finished run (its resolved config and checkpoint), asks the method for
the arrays of evaluation NAME (`method.evaluation_arrays(name, splits, untrained)`, where `untrained` is the
same model at its seeded initialisation, e.g. the prior of an SDE-BNN) and writes them atomically as .npz.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro.data.registry import load_splits
from bnnrepro.data.spec import Splits
from bnnrepro.files import write_atomic
from bnnrepro.methods import build_method
from bnnrepro.runs import RunFolder


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


def main(argv: list[str] | None = None) -> None:
    run_dir, name, out = (argv if argv is not None else sys.argv[1:])[:3]
    cfg, splits, method, untrained = load_run(Path(run_dir))
    torch.manual_seed(cfg.seed)
    with torch.no_grad():
        arrays = method.evaluation_arrays(name, splits, untrained)
    write_atomic(Path(out), lambda tmp: np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()}))


if __name__ == "__main__":
    main()

"""`python -m bnnrepro.evaluations RUN_DIR NAME OUT.npz [--data DATASET=FILE ...]`: one evaluation job.

Reloads the finished run in RUN_DIR (its resolved config and checkpoint), computes the arrays of evaluation NAME
(config/evaluations/) with torch's generator seeded by the run's seed, and writes them atomically as .npz. Each
`--data` is the prepared file of a dataset the evaluation reads besides the run's
(`bnnrepro.evaluations.declarations.extra_data_files`).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import numpy as np
import torch

from bnnrepro.cpu_arithmetic import set_up_process
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.evaluations.inputs import evaluation_inputs, load_run
from bnnrepro.files import write_atomic
from bnnrepro.pipeline.job_process import freeze_imported_objects


def _data_argument(text: str) -> tuple[str, Path]:
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(f"expected DATASET=FILE, got {text!r}")
    return name, Path(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.evaluations")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("name")
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", type=_data_argument, action="append", default=[], metavar="DATASET=FILE",
                        help="the prepared file of a dataset the evaluation reads besides the run's")  # fmt: skip
    args = parser.parse_args(argv)
    declared = declared_evaluation(args.name)
    cfg, splits, method, untrained = load_run(args.run_dir)
    set_up_process(cfg.threads)  # the arithmetic of the run's training job
    torch.manual_seed(cfg.seed)
    with torch.no_grad():
        inputs = evaluation_inputs(args.name, cfg, dict(args.data), untrained)
        arrays = importlib.import_module(declared.code).evaluation_arrays(method, args.name, splits, inputs)
    write_atomic(args.out, lambda tmp: np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()}))


if __name__ == "__main__":
    freeze_imported_objects()
    main()

"""Thesis Table 5.4 (Haußmann 2021, §5.6.4): FLOPs per data point of one training step and one prediction of every
model of Table 5.2, counted by the formulas of `torch.utils.flop_counter` (`OperationCounter`, which counts what
`FlopCounterMode` does) on the built MNIST LeNet5 for S in
{1, 5, 10} samples, beside the thesis' big-O costs (which are symbolic only). Study `thesis_bedl`."""

from __future__ import annotations

import math

import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.operation_counter import count_matmul_flops
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.thesis_bedl import CELL_COLUMNS, OOD_METHODS, ROWS, STUDY
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import evidential, gaussian_weight_vi, mc_dropout
from bnnrepro.methods.protocol import check_method
from bnnrepro.optim import Adam
from bnnrepro.pipeline.studies import load_study

THESIS_COSTS = {
    "mc_dropout": ("O((F+L)S)", "O((F+L)S)"),
    "varout": ("O(2(F+L)S + R(W/N))", "O(2(F+L)S)"),
    "dvi": ("O(2F + SL + R(W/N))", "O(2F + SL)"),
    "edl": ("O(F+L)", "O(F+L)"),
    "bedl": ("O(3F + SL)", "O(3F + SL)"),
    "bedl_pac": ("O(3F + S(L+R))", "O(3F + SL)"),
}
"""Thesis Table 5.4 (training per iteration, prediction), per data point."""
SAMPLE_COUNTS = (1, 5, 10)
REFERENCE_SAMPLES = 5  # the thesis' S ("five samples whenever it needs to conduct an MC sampling approximation")
FLOP_NETWORK = "@lenet5"  # the MNIST LeNet5 of Table 5.2
FLOP_BATCH = 10  # every count is linear in the batch size: the counts per data point are those of any batch
MNIST_SPEC = DataSpec("classification", 28, 10, (28, 28))  # the datasets' [H, W] grey images
MNIST_TRAINING_SET = 60_000
BUILDERS = {name: module.build for module in (mc_dropout, gaussian_weight_vi, evidential) for name in module.METHODS}
"""Hydra method name -> its module's `build` (imported here, so that the table reruns when a model's code changes)."""


def method_config(method: str) -> DictConfig:
    """The run config of study method `method` (e.g. 'bedl@lenet5') on MNIST."""
    return load_study(STUDY).variant_config(method, "mnist")


def with_samples(cfg: DictConfig, num_samples: int) -> DictConfig:
    """`cfg` with `num_samples` draws per training step and per prediction where its method samples."""
    cfg = cfg.copy()
    for key in ("num_samples", "eval_samples"):
        if key in cfg.method:
            OmegaConf.update(cfg, f"method.{key}", num_samples)
    return cfg


def build_model(cfg: DictConfig, spec: DataSpec = MNIST_SPEC) -> nn.Module:
    method = BUILDERS[cfg.method.name](cfg, spec)
    check_method(method, BUILDERS[cfg.method.name].__module__)
    return method


def step_and_prediction_flops(method: nn.Module, batch: int = FLOP_BATCH, seed: int = 0) -> tuple[float, float]:
    """FLOPs per data point of one training step (loss, backward pass, Adam update) and of one prediction, on a
    batch of `batch` random MNIST-shaped inputs."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn((batch, *MNIST_SPEC.input_shape), generator=generator)
    y = torch.randint(MNIST_SPEC.num_classes, (batch,), generator=generator)
    optimizer = Adam(method.parameter_groups(1e-3, 0.1))
    torch.manual_seed(seed)
    method.train()
    training = count_matmul_flops(method.training_step, x, y, MNIST_TRAINING_SET, optimizer)
    method.eval()
    prediction = count_matmul_flops(method.predict, x)
    return training / batch, prediction / batch


def measured_flops(methods=OOD_METHODS, sample_counts=SAMPLE_COUNTS) -> pd.DataFrame:
    """[method, S, training, prediction]: FLOPs per data point of each model of Table 5.2 on the MNIST LeNet5 (on
    one torch thread: the counts do not depend on it, the time does)."""
    rows, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for method in methods:
            cfg = method_config(f"{method}{FLOP_NETWORK}")
            for samples in sample_counts:
                torch.manual_seed(0)
                training, prediction = step_and_prediction_flops(build_model(with_samples(cfg, samples)))
                rows.append({"method": method, "S": samples, "training": training, "prediction": prediction})
    finally:
        torch.set_num_threads(threads)
    return pd.DataFrame(rows)


def table54_note(scale: str) -> str:
    return (
        "Measured at every scale on the thesis' MNIST LeNet5 (conv 5x5/2 20 ch, conv 5x5/2 50 ch, 500 units, 10 "
        f"classes; Table 5.2's network): FLOPs per data point (of a batch of {FLOP_BATCH}) counted by the "
        "formulas of torch.utils.flop_counter (FlopCounterMode's), which count matrix products and convolutions "
        "(forward and backward) only, so the elementwise costs L (likelihood), R (regulariser), the activation "
        "moments and the optimiser update are left out. F: EDL's prediction, the deterministic network's forward "
        "pass. The thesis' entries are big-O expressions only (the 'thesis' columns). Our DVI and BEDL share one "
        "moment-propagating layer (three products per layer, two for the first, whose input is deterministic), so "
        "DVI measures about 3F where the thesis writes 2F."
    )


@table("thesis/table5.4", uses="nothing", note=table54_note)
def flops_per_data_point(context: ArtifactContext) -> pd.DataFrame:
    """Measured FLOPs per data point for S in SAMPLE_COUNTS, their ratios at the thesis' S = 5 to EDL's (training)
    and to F (prediction), beside the thesis' big-O costs."""
    flops = measured_flops()
    edl = flops[flops["method"] == "edl"].set_index("S")
    cells = []
    for method, group in flops.groupby("method", sort=False):
        by_s = group.set_index("S")
        row = ROWS[method]
        cells += [
            {"row": row, "column": "thesis: training", "ours": THESIS_COSTS[method][0]},
            {"row": row, "column": "thesis: prediction", "ours": THESIS_COSTS[method][1]},
        ]
        for kind in ("training", "prediction"):
            cells += [{"row": row, "column": f"{kind} FLOPs, S={s}", "ours": float(by_s.loc[s, kind])}
                      for s in SAMPLE_COUNTS]  # fmt: skip
        cells += [
            {"row": row, "column": f"training / EDL's, S={REFERENCE_SAMPLES}",
             "ours": by_s.loc[REFERENCE_SAMPLES, "training"] / edl.loc[REFERENCE_SAMPLES, "training"]},
            {"row": row, "column": f"prediction / F, S={REFERENCE_SAMPLES}",
             "ours": by_s.loc[REFERENCE_SAMPLES, "prediction"] / edl.loc[REFERENCE_SAMPLES, "prediction"]},
        ]  # fmt: skip
    table = pd.DataFrame(cells)
    table["ours_error"], table["n_runs"] = math.nan, None
    return table[CELL_COLUMNS]

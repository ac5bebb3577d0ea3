"""Thesis Table 6.3 (Haußmann 2021, ch. 6): the cost of one training iteration (loss and backward pass) of each BNSDE
variant of §6.4 and of the D-BNN baselines, measured on the stochastic Lorenz attractor for sequence lengths T in
{12, 24, 48}, M in {1, 2, 4} Monte Carlo samples and D in {3, 6} state dimensions, beside the thesis' big-O costs
(which are symbolic only). Study `thesis_bnsde`.

Two counts per iteration, both by `OperationCounter` in one pass:
- matrix-product FLOPs, by the formulas of `torch.utils.flop_counter` (those `FlopCounterMode` applies, as in Table
  5.4's `thesis_bedl_costs`): the drift network's passes, the thesis' F;
- elementwise operations: one per output element of every elementwise kernel and one per element read by every
  reduction. These hold the terms Table 6.3 adds to the F's: the likelihood L, the path KL of Lemma 1 (O(TMD) here:
  G is diagonal), the weight KL or penalty (W) and the prior drift (P).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from functools import cache

import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.operation_counter import OperationCounter
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.thesis_bedl import CELL_COLUMNS
from bnnrepro.artifacts.thesis_bedl_costs import with_samples
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import bnsde
from bnnrepro.methods.protocol import check_method
from bnnrepro.pipeline.studies import load_study

STUDY, DATASET = "thesis_bnsde", "lorenz"
ROWS: dict[str, tuple[str, str | None]] = {
    "D-BNN (SGLD)": ("e_bayes", "sgld"),
    "Variational Bayes": ("e_bayes", "elbo"),
    "E-Bayes": ("e_bayes", None),
    "E-PAC-Bayes": ("e_pac_bayes", None),
    "E-Bayes-Hybrid": ("e_bayes_hybrid@z", None),
    "E-PAC-Bayes-Hybrid": ("e_pac_bayes_hybrid@z", None),
}
"""Table 6.3's rows -> (the study's Lorenz method variant, the `method.objective` that replaces its own). The study
trains the D-BNN baselines on CMU only (dbnn_vi@cmu, dbnn_sgld@cmu): here they are the Lorenz black box trained by
their objectives. The hybrids reveal dz (gamma = [0, 0, 1]), the prior knowledge of Figs. 6.5-6.9."""
THESIS_COSTS = {
    "D-BNN (SGLD)": "O(MTF + MTDL + W)",
    "Variational Bayes": "O(2MTF + MTDL + W)",
    "E-Bayes": "O(2MTF + MTDL)",
    "E-PAC-Bayes": "O(2MTF + MTDL + W + TMD³)",
    "E-Bayes-Hybrid": "O(2MTF + MTDL + MTP)",
    "E-PAC-Bayes-Hybrid": "O(2MTF + MTDL + W + TMD³ + MTP)",
}
"""Thesis Table 6.3: training cost per iteration."""
HYBRIDS = ("E-Bayes-Hybrid", "E-PAC-Bayes-Hybrid")  # no prior knowledge for a 6-D state: the Lorenz system is 3-D
REFERENCE = (24, 1, 3)  # (T, M, D): Lorenz's training windows of 24 steps (§6.4.2), S = 1 (bnsde.yaml), 3-D
BATCH = 2  # sequences per iteration: the Lorenz grids' train.batch_size (§6.6.3); every count is per iteration
SWEEP = ((12, 1, 3), (24, 1, 3), (48, 1, 3), (24, 2, 3), (24, 4, 3), (12, 1, 6), (24, 1, 6))
"""The (T, M, D) points measured: T in {12, 24, 48} at M = 1, M in {1, 2, 4} at T = 24, and D = 6 at T in {12, 24}
(black-box rows only)."""
COUNTS = {"matmul": "matmul FLOPs", "elementwise": "elementwise ops"}
THESIS_COLUMN = "thesis: training per iteration"
RATIO_COLUMN = "matmul FLOPs / D-BNN (SGLD)'s"
PER_T_MATMUL_COLUMN = "matmul FLOPs per unit T and trajectory / F"
PER_T_COLUMN = "elementwise ops beyond E-Bayes', per unit T"
AT_ZERO_COLUMN = "elementwise ops beyond E-Bayes', at T=0"


def label(length: int, samples: int, states: int) -> str:
    return f"T={length}, M={samples}, D={states}"


@cache
def variant_config(variant: str) -> DictConfig:
    """The run config of the study's method variant `variant` on Lorenz (composed once: read, never changed)."""
    return load_study(STUDY).variant_config(variant, DATASET)


def row_config(row: str, states: int = 3) -> DictConfig:
    """The Lorenz run config of Table 6.3's row `row` (ROWS); for states != 3, the black box on a `states`-dim
    observed state with G = I (the Lorenz equations, the hybrids' prior knowledge, are 3-D)."""
    variant, objective = ROWS[row]
    cfg = copy.deepcopy(variant_config(variant))
    if objective is not None:
        OmegaConf.update(cfg, "method.objective", objective)
    if states != len(cfg.dataset.dynamics.diffusion):
        if cfg.method.knowledge.gamma is not None:
            raise ValueError(f"{row} has Lorenz prior knowledge, a 3-D system: it has no {states}-D version")
        OmegaConf.update(cfg, "dataset.dynamics", {"system": None, "diffusion": [1.0] * states}, merge=True)
    return cfg


def build_model(cfg: DictConfig, length: int) -> bnsde.BNSDEMethod:
    states = len(cfg.dataset.dynamics.diffusion)
    method = bnsde.build(cfg, DataSpec("forecasting", length, 0, (length, states + 1)))
    check_method(method, bnsde.__name__)
    return method


def sequences(length: int, states: int, batch: int = BATCH, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch` random sequences x [B, T, D + 1] (states and times, dt = 0.01 as Lorenz's) and targets y [B, T, D]."""
    x = torch.randn((batch, length, states + 1), generator=torch.Generator().manual_seed(seed))
    x[..., -1] = 0.01 * torch.arange(length)
    return x, x[..., :states].clone()


def one_iteration(method: bnsde.BNSDEMethod, x: torch.Tensor, y: torch.Tensor, num_train: int) -> None:
    """The loss of one minibatch and its backward pass (the optimiser's or Langevin update left out)."""
    method.zero_grad()
    method.loss(x, y, num_train).backward()


def iteration_counts(cfg: DictConfig, length: int, samples: int, seed: int = 0) -> tuple[int, int, set[str]]:
    """(matmul FLOPs, elementwise operations, unknown operations) of one iteration of `cfg`'s model on BATCH random
    sequences of `length` observations with `samples` trajectories each."""
    cfg = with_samples(cfg, samples)
    torch.manual_seed(seed)
    method = build_model(cfg, length)
    x, y = sequences(length, len(cfg.dataset.dynamics.diffusion), seed=seed)
    with OperationCounter() as counter:
        one_iteration(method, x, y, cfg.dataset.n_train)
    return counter.matmul_flops, counter.elementwise, counter.unknown


def forward_flops(cfg: DictConfig) -> int:
    """F: the FLOPs of one pass of one state through the drift network with point weights (its posterior means)."""
    drift = build_model(cfg, 2).sde.drift
    with OperationCounter() as counter:
        drift.mean_forward(torch.zeros(1, drift.state_size), torch.zeros(1))
    return counter.matmul_flops


def measured_counts(rows: Iterable[str] = ROWS, sweep: Iterable[tuple[int, int, int]] = SWEEP) -> pd.DataFrame:
    """[row, T, M, D, matmul, elementwise, F] of each row at each (T, M, D) point of `sweep` it has (the hybrids: D = 3
    only), on one torch thread (the counts do not depend on it, the time does)."""
    records, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for row in rows:
            configs: dict[int, DictConfig] = {}
            for length, samples, states in sweep:
                if states != 3 and row in HYBRIDS:
                    continue
                if states not in configs:
                    configs[states] = row_config(row, states)
                matmul, elementwise, unknown = iteration_counts(configs[states], length, samples)
                if unknown:
                    raise RuntimeError(f"{row}: ElementwiseCounter does not know the aten operations {sorted(unknown)}")
                records.append({"row": row, "T": length, "M": samples, "D": states, "matmul": matmul,
                                "elementwise": elementwise, "F": forward_flops(configs[states])})  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    return pd.DataFrame(records)


def drift_sizes(cfg: DictConfig) -> list[int]:
    """The drift network's layer sizes, state to state."""
    states = len(cfg.dataset.dynamics.diffusion)
    return [states, *cfg.method.drift.widths, states]


def drift_weights(cfg: DictConfig) -> int:
    """W: the drift network's weights and biases (a Bayesian network has a mean and a variance of each)."""
    sizes = drift_sizes(cfg)
    return sum((n_in + 1) * n_out for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True))


def affine_in_t(counts: pd.DataFrame, column: str) -> pd.DataFrame:
    """[row, D, per_t, at_zero]: `column` at M = 1 as a line in T through the shortest and the longest T measured
    (every count is affine in T: T - 1 Euler-Maruyama steps, the first without a gradient for its state), its slope
    and its value at T = 0."""
    at_m1 = counts[counts["M"] == 1].set_index(["row", "D", "T"])[column]
    records = []
    for (row, states), group in at_m1.groupby(level=["row", "D"], sort=False):
        lengths = group.index.get_level_values("T")
        first, last = min(lengths), max(lengths)
        slope = (group[row, states, last] - group[row, states, first]) / (last - first)
        records.append({"row": row, "D": states, "per_t": slope, "at_zero": group[row, states, first] - slope * first})
    return pd.DataFrame(records).set_index(["row", "D"])


def beyond_reference(counts: pd.DataFrame, reference: str = "E-Bayes") -> pd.DataFrame:
    """`affine_in_t` of each row's elementwise operations minus `reference`'s (at the same T, M and D)."""
    by_point = counts.set_index(["row", "T", "M", "D"])["elementwise"]
    at_reference = by_point.xs(reference, level="row")
    extra = (by_point - at_reference.reindex(by_point.index.droplevel("row")).to_numpy()).rename("elementwise")
    return affine_in_t(extra.reset_index(), "elementwise")


def table63_note(scale: str) -> str:
    cfg = row_config("E-Bayes")
    drift = "-".join(map(str, drift_sizes(cfg)))
    return (
        f"Measured at every scale on the study's Lorenz models (the {drift} {cfg.method.drift.activation} drift, "
        f"W = {drift_weights(cfg):,} weights; local reparameterisation but for SGLD's point weights): one training "
        f"iteration (loss and backward pass, no optimiser update) of a minibatch of {BATCH} random sequences of T "
        "observations (T - 1 Euler-Maruyama steps) with M trajectories each. 'matmul FLOPs': the formulas of "
        "torch.utils.flop_counter (FlopCounterMode's), which count matrix products only: the drift network's passes "
        "(F: one pass of one state with point weights). 'elementwise ops': one per output element of every "
        "elementwise aten kernel (an exp or a softplus counts as one) and one per element read by a reduction, "
        "forward and backward; random draws and copies are not counted. The likelihood, the path and weight KLs and "
        "the prior drift are all elementwise, so the last five rows' matmul FLOPs are equal: twice SGLD's, 6F per "
        "Euler-Maruyama step and trajectory against 3F (local reparameterisation's mean and variance products, "
        "forward, and their gradients), the thesis' 2MTF against MTF. The thesis' other terms show in the "
        "elementwise ops beyond E-Bayes', as a line in T (every count is affine in T; the matmul FLOPs are "
        "proportional to M). E-PAC-Bayes' per-T extra is the path KL of Lemma 1, O(TMD) as G is diagonal (the "
        "thesis' D³ is a full G's inverse), its T=0 extra the weight KL, O(W), as Variational Bayes'; the hybrids' "
        "per-T extra is the prior drift, O(MTP). SGLD's per-T extra is negative: its point weights skip the variance "
        "pass of local reparameterisation (squared inputs, square roots, noise) at each step. D=6: the black box on a "
        "6-D observed state with G = I (the prior knowledge, the Lorenz equations, is 3-D: no hybrid). The thesis' "
        "entries are big-O expressions only (the 'thesis' column)."
    )


@table("thesis/table6.3", uses="nothing", note=table63_note)
def iteration_costs(context: ArtifactContext) -> pd.DataFrame:
    """Matmul FLOPs and elementwise operations of one training iteration of every row at each SWEEP point, the
    ratio to SGLD's matmul FLOPs and the elementwise operations beyond E-Bayes', beside the thesis' big-O costs."""
    return cost_cells(measured_counts())


def cost_cells(counts: pd.DataFrame, reference: tuple[int, int, int] = REFERENCE) -> pd.DataFrame:
    """Table 6.3's cells from a `measured_counts` frame, in its row and point order; the matmul ratio at the
    (T, M, D) point `reference`."""
    by_point = counts.set_index(["row", "T", "M", "D"])
    sgld = by_point.loc[("D-BNN (SGLD)", *reference), "matmul"]
    matmul, extras = affine_in_t(counts, "matmul"), beyond_reference(counts)
    forward = counts.groupby(["row", "D"])["F"].first()
    cells = []
    for row, group in counts.groupby("row", sort=False):
        cells.append({"row": row, "column": THESIS_COLUMN, "ours": THESIS_COSTS[row]})
        for point in group.itertuples(index=False):
            cells += [{"row": row, "column": f"{name}, {label(point.T, point.M, point.D)}",
                       "ours": float(getattr(point, count))} for count, name in COUNTS.items()]  # fmt: skip
        cells.append({"row": row, "column": f"{RATIO_COLUMN}, {label(*reference)}",
                      "ours": by_point.loc[(row, *reference), "matmul"] / sgld})  # fmt: skip
        for states in group["D"].unique():
            per_trajectory = matmul.loc[(row, states), "per_t"] / (BATCH * forward[row, states])
            extra = extras.loc[(row, states)]
            cells += [
                {"row": row, "column": f"{PER_T_MATMUL_COLUMN}, M=1, D={states}", "ours": float(per_trajectory)},
                {"row": row, "column": f"{PER_T_COLUMN}, M=1, D={states}", "ours": float(extra["per_t"])},
                {"row": row, "column": f"{AT_ZERO_COLUMN}, M=1, D={states}", "ours": float(extra["at_zero"])},
            ]
    table = pd.DataFrame(cells)
    table["ours_error"], table["n_runs"] = math.nan, None
    return table[CELL_COLUMNS]

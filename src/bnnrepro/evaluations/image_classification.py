"""Evaluations of a trained image classifier (SDE-BNN, ODEnet, ResNet32, ...; the solver sweep asks the
`WeightSDEBlocks` hook) for the CIFAR-10 figures of Xu et al. 2022 (SDE-BNN), declared in config/evaluations/
(`bnnrepro.evaluations`).

* "calibration" (Fig. 6b): metrics and the reliability bins of the predictive on the test split (10 equal-width
  confidence bins: not stated in the paper; the authors' code's, xwinxu/bayeSDE `torchbnn/_impl/utils.py`
  `score_model`), the model as trained.
* "solver_sweep" (Figs. 6a, 11, 12): the same for the SDE-BNN at other test-time solver settings, fixed step
  counts around the training one and adaptive tolerances, with each solve's wall-clock seconds and drift
  evaluations (NFE). Every setting sees the same weight draw: torch's generator is reseeded, which fixes each
  block's Brownian entropy, and the paths are sampled on the dyadic tree (`SolverSettings.paired_paths`), so that
  they do not depend on where the solver queries them: the differences between settings come from the solver.
* "cifar10c" (Figs. 7, 9): accuracy, NLL and ECE on each CIFAR-10-C corruption and severity (§5.2.2) and on
  the clean originals of those images, each with the same weight draw.

The predictive is the model's own (`method.predict`: its `eval_samples` weight draws, Table 2's 1 for images),
on a whole split at once, as the training job evaluates it (`bnnrepro.train.evaluate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from bnnrepro.data.formats import CIFAR10C_CORRUPTIONS, CIFAR10C_SEVERITIES
from bnnrepro.data.spec import Splits
from bnnrepro.device import resolve_device
from bnnrepro.methods.evaluation_hooks import WeightSDEBlocks, require
from bnnrepro.metrics import accuracy, calibration_bins, expected_calibration_error, negative_log_likelihood
from bnnrepro.models.weight_sde_solver import SolverSettings

if TYPE_CHECKING:
    from bnnrepro.evaluations.inputs import EvaluationInputs
    from bnnrepro.methods.protocol import Method

WARM_UP_IMAGES = 8  # an untimed pass before the timed solves, so that the first carries no start-up cost
CORRUPTION_DATASET = "cifar10c"  # the registry dataset of SDE-BNN paper §5.2.2 (its evaluation's `data`)


def predictive(method: Method, images: np.ndarray, seed: int) -> torch.Tensor:
    """The predictive probabilities [N, C] (on the CPU) of `images` with torch's generator seeded by `seed`: every
    call with the same seed draws the same weights (Brownian entropies, mean-field samples)."""
    device = next(method.parameters()).device
    torch.manual_seed(seed)
    return method.predict(torch.as_tensor(images, device=device)).cpu()


def summary(probs: torch.Tensor, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, NLL, ECE and the reliability bins (counts, accuracy, confidence; NaN where empty) of `probs`."""
    labels = torch.as_tensor(labels)
    bins = calibration_bins(probs, labels)
    return {
        "accuracy": np.asarray(accuracy(probs, labels)),
        "nll": np.asarray(negative_log_likelihood(probs, labels)),
        "ece": np.asarray(expected_calibration_error(probs, labels)),
        "bin_counts": bins.counts.numpy(),
        "bin_accuracy": bins.accuracy.numpy(),
        "bin_confidence": bins.confidence.numpy(),
        "bin_edges": bins.edges.numpy(),
    }


def stacked(rows: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One array per key of `rows`, the rows along the first axis."""
    return {key: np.stack([row[key] for row in rows]) for key in rows[0]}


def calibration(method: Method, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """SDE-BNN paper Fig. 6b: the test split's metrics and reliability bins."""
    return summary(predictive(method, splits.x("test"), inputs.seed), splits.y("test"))


def weight_sdes(method: WeightSDEBlocks) -> list[nn.Module]:
    """The SDE-BNN blocks of the method's network, whose solver settings the sweep changes."""
    require(method, WeightSDEBlocks, "a solver sweep")
    if not (blocks := method.weight_sdes()):
        raise ValueError(f"a solver sweep needs an SDE-BNN; {type(method).__name__} has no weight SDE")
    return blocks


def sweep_settings(trained: SolverSettings, step_factors: Sequence[float], tolerances: Sequence[float]) -> list:
    """Fixed step counts round(factor x the training count) (at least 1, without repeats), then adaptive step
    doubling from the training step at rtol = atol = each tolerance; all with paired Brownian paths."""
    counts = sorted({max(1, round(factor * trained.num_steps)) for factor in step_factors})
    fixed = [replace(trained, num_steps=n, adaptive=False, paired_paths=True) for n in counts]
    adaptive = [replace(trained, adaptive=True, rtol=tol, atol=tol, paired_paths=True) for tol in tolerances]
    return fixed + adaptive


@contextmanager
def solved_with(blocks: Sequence[nn.Module], settings: SolverSettings) -> Iterator[list[int]]:
    """The blocks integrated with `settings`; yields a one-item list that counts their drift evaluations. The
    training settings and drift are restored on exit."""
    count = [0]
    trained = [block.solver for block in blocks]
    for block in blocks:
        drift = block.sde.f

        def counted(t: torch.Tensor, y: torch.Tensor, drift: Callable = drift) -> torch.Tensor:
            count[0] += 1
            return drift(t, y)

        block.solver, block.sde.f = settings, counted  # an instance attribute over AugmentedWeightSDE.f
    try:
        yield count
    finally:
        for block, solver in zip(blocks, trained, strict=True):
            block.solver = solver
            del block.sde.f


def solver_sweep(method: Method, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """SDE-BNN paper Figs. 6a, 11, 12: per setting (rows, fixed step counts first) the test metrics and reliability
    bins, seconds, and NFE (drift evaluations per block per solve; torchsde adds one per solve to check shapes)."""
    blocks = weight_sdes(method)
    trained = blocks[0].solver
    settings = sweep_settings(trained, inputs.settings["step_factors"], inputs.settings["tolerances"])
    images, labels = splits.x("test"), splits.y("test")
    predictive(method, images[:WARM_UP_IMAGES], inputs.seed)
    rows = []
    for solver in settings:
        with solved_with(blocks, solver) as count:
            start = time.perf_counter()
            probs = predictive(method, images, inputs.seed)
            seconds = time.perf_counter() - start
        nfe = count[0] / len(blocks)
        rows.append({**summary(probs, labels), "seconds": np.asarray(seconds), "nfe": np.asarray(nfe)})
    return {
        **stacked(rows),
        "adaptive": np.array([s.adaptive for s in settings]),
        "num_steps": np.array([s.num_steps for s in settings]),  # adaptive: the first step is 1 / num_steps
        "tolerance": np.array([s.rtol if s.adaptive else np.nan for s in settings]),
        "training_num_steps": np.asarray(trained.num_steps),
        "training_adaptive": np.asarray(trained.adaptive),
        "num_test": np.asarray(len(labels)),
    }


def corruption_robustness(method: Method, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """SDE-BNN paper Figs. 7, 9: metrics [corruption, severity] on the first `images_per_severity` images of each
    CIFAR-10-C set (all with null) and `clean_*` on their clean originals, the run's first test images."""
    count = inputs.settings["images_per_severity"]
    images, labels = splits.x("test")[:count], splits.y("test")[:count]
    clean = summary(predictive(method, images, inputs.seed), labels)
    rows = []
    for corruption in CIFAR10C_CORRUPTIONS:
        for severity in range(1, CIFAR10C_SEVERITIES + 1):
            shifted = inputs.dataset(CORRUPTION_DATASET, corruption=corruption, severity=severity)
            shifted_labels = shifted.y("test")[:count]
            if not np.array_equal(shifted_labels, labels):
                raise ValueError(
                    f"CIFAR-10-C {corruption} severity {severity}: its first {len(shifted_labels)} labels are not "
                    f"those of the run's first {len(labels)} test images; the corrupted images must be the test "
                    "images in order (use the CIFAR-10-C file made from this run's CIFAR-10 test set)"
                )
            rows.append(summary(predictive(method, shifted.x("test")[:count], inputs.seed), shifted_labels))
    table = {key: value.reshape(len(CIFAR10C_CORRUPTIONS), CIFAR10C_SEVERITIES, *value.shape[1:])
             for key, value in stacked(rows).items()}  # fmt: skip
    return {
        **{key: table[key] for key in ("accuracy", "nll", "ece")},
        **{f"clean_{key}": clean[key] for key in ("accuracy", "nll", "ece")},
        "corruptions": np.array(CIFAR10C_CORRUPTIONS),
        "severities": np.arange(1, CIFAR10C_SEVERITIES + 1),
        "images_per_severity": np.asarray(len(labels)),
    }


EVALUATIONS = {"calibration": calibration, "solver_sweep": solver_sweep, "cifar10c": corruption_robustness}


def evaluation_arrays(method: Method, name: str, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """The arrays of evaluation `name` (config/evaluations/<name>.yaml), computed on the run's device."""
    if name not in EVALUATIONS:
        raise KeyError(f"unknown image evaluation {name!r}; known: {', '.join(EVALUATIONS)}")
    if getattr(method, "task", None) != "classification":
        raise ValueError(f"evaluation {name!r} needs an image classifier, got {type(method).__name__}")
    method.to(resolve_device(inputs.device))
    return EVALUATIONS[name](method, splits, inputs)

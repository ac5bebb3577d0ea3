"""Tables 4.3-4.5 of thesis chapter 4 (Haußmann 2021, RAL), generated from the modules the `thesis_ral` runs build
at the `paper` scale's settings: the CLT-BNN predictor for MNIST/FashionMNIST (Table 4.3) and for CIFAR-10 (Table
4.4), a `MomentNetwork` built from the composed run config as Table 3.4's strided LeNet5 is, and RAL's policy BNN
(Table 4.5, bnnrepro.active_learning.policy.PolicyNetwork)."""

from __future__ import annotations

from functools import cache

import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro.active_learning.policy import PolicyNetwork
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.thesis_vbp_tables import lenet5_layers
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.pipeline.studies import load_study

STUDY = "thesis_ral"
NUM_CLASSES = 10
PREDICTORS = {
    "thesis/table4.3": ("ral", "mnist", (28, 28), 800),
    "thesis/table4.4": ("ral@cifar10", "cifar10", (32, 32, 3), 4800),
}
"""Each predictor table's study method variant and data set, the stored image shape, and the flattened features of
the thesis' first linear layer (Table 4.3: Linear(800, 500); Table 4.4: Linear(4800, 1000))."""
PARAMETER_COLUMNS = ("weights", "variational parameters")


@cache
def paper_method_config(variant: str, dataset: str) -> DictConfig:
    """The method config of the `paper` scale's runs of `variant` on `dataset`: the variant's composed run config
    (`Study.variant_config`) with the grid's method.* values."""
    study = load_study(STUDY)
    run = next(run for run in study.runs("paper") if run.method == variant and run.dataset == dataset)
    method = study.variant_config(variant, dataset).method
    for key, value in run.hparams:
        if key.startswith("method."):
            OmegaConf.update(method, key.removeprefix("method."), value)
    return method


def cells(layers: dict[str, dict], after: dict[str, dict] | None = None) -> pd.DataFrame:
    """Table cells of the {row: {column: value}} of `layers`, a total row of their parameter counts, and the rows of
    `after`."""
    totals = {column: sum(layer.get(column, 0) for layer in layers.values()) for column in PARAMETER_COLUMNS}
    return pd.DataFrame(
        [{"row": row, "column": column, "ours": value, "ours_error": None, "n_runs": None}
         for row, layer in {**layers, "total": totals, **(after or {})}.items() for column, value in layer.items()]
    )  # fmt: skip


def predictor_architecture(artifact_id: str) -> pd.DataFrame:
    """Table 4.3 or 4.4: the input and each affine layer of the CLT-BNN predictor (kind, output shape, weights and
    biases of the mean network, variational parameters); ValueError when the convolutions do not flatten to the
    thesis' features."""
    variant, dataset, image_shape, flatten = PREDICTORS[artifact_id]
    layers = lenet5_layers(paper_method_config(variant, dataset), image_shape, NUM_CLASSES)
    if not any(f"(flatten {flatten})" in layer["output shape"] for layer in layers):
        shapes = [layer["output shape"] for layer in layers]
        raise ValueError(f"{artifact_id}: the convolutions of {variant} should flatten to {flatten} features: {shapes}")
    channels = image_shape[2] if len(image_shape) == 3 else 1
    rows = {"input": {"layer": "image", "output shape": " × ".join(map(str, (channels, *image_shape[:2])))}}
    rows.update({f"layer {index}": layer for index, layer in enumerate(layers, start=1)})
    return cells(rows)


def policy_architecture() -> pd.DataFrame:
    """Table 4.5: RAL's policy net as the paper-scale runs build it (C * M state moments -> hidden width -> M
    candidates, §4.2.2, §4.7): its input, two Gaussian affine layers with their parameter counts (a mean and a
    log-variance per weight and bias), and the prior precision of its weights."""
    cfg = paper_method_config("ral", "mnist")
    state_size = NUM_CLASSES * cfg.candidates
    policy = PolicyNetwork(state_size, cfg.policy.hidden_width, cfg.candidates, cfg.policy.prior_precision)
    with torch.no_grad():
        actions = policy(Moments(torch.zeros(1, state_size), torch.ones(1, state_size)))
    if tuple(actions.shape) != (cfg.candidates,):
        raise ValueError(f"the policy gives {tuple(actions.shape)} action probabilities, not one per candidate")
    rows = {"input": {"layer": f"({state_size}, 2) mean and variance", "output shape": f"{state_size} × 2"}}
    for index, layer in enumerate(policy.network.layers, start=1):
        rows[f"layer {index}"] = {
            "layer": f"Linear ({layer.shape.in_size}, {layer.shape.out_size})",
            "output shape": f"{layer.shape.out_size} × 2",
            "weights": layer.weight_mean.numel() + layer.bias_mean.numel(),
            "variational parameters": sum(parameter.numel() for parameter in layer.parameters()),
        }
    return cells(rows, {"prior": {"precision α": policy.prior_precision}})


PREDICTOR_NOTE = (
    "Generated from the CLT-BNN predictor the runs build (bnnrepro.models.moment_layers.MomentNetwork, the study's "
    "composed run config at the paper scale's settings; ReLU moments between the layers, padding 0): output shapes "
    "as channels × height × width, the flattened size where the linear layers begin; weights: the mean network's "
    "weights and biases; variational parameters: a mean and a log-variance per weight and bias."
)


def table44_note(scale: str) -> str:
    runs = [run for run in load_study(STUDY).runs(scale) if run.dataset == "cifar10"]
    widths = sorted({dict(run.hparams)["method.width_multiplier"] for run in runs})
    if widths in ([], [1.0]):
        return PREDICTOR_NOTE
    return PREDICTOR_NOTE + f" At {scale} scale the CIFAR-10 runs use width multiplier {'/'.join(map(str, widths))}."


@table("thesis/table4.3", uses="nothing", note=PREDICTOR_NOTE)
def mnist_predictor(context: ArtifactContext) -> pd.DataFrame:
    return predictor_architecture("thesis/table4.3")


@table("thesis/table4.4", uses="nothing", note=table44_note)
def cifar10_predictor(context: ArtifactContext) -> pd.DataFrame:
    return predictor_architecture("thesis/table4.4")


@table(
    "thesis/table4.5",
    uses="nothing",
    note=(
        "Generated from the policy BNN the runs build (bnnrepro.active_learning.policy.PolicyNetwork) at the paper "
        "scale's settings: the state's C × M = 10 × 50 means and variances, two Gaussian affine layers with ReLU "
        "moments between them, whose 50 outputs are probit-marginalised and normalised over the candidates (eq. 4.5). "
        "Output shapes: mean and variance per unit; parameters: the mean network's weights and biases, and a mean and "
        "a log-variance per weight and bias. The thesis conflicts on the hidden width: §4.3.1's text says 500 units "
        "per layer, Table 4.5 and the authors' code (`manuelhaussmann/ral`, `policy.py`) 256; ours: 256."
    ),
)
def policy_net(context: ArtifactContext) -> pd.DataFrame:
    return policy_architecture()

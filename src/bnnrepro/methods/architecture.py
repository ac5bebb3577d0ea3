"""What a trained method is, in the two numbers a benchmark's leaderboard shows beside its scores: how many values
training fitted and how deep the network that predicts is (a run's metrics.json `architecture`)."""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn

LEARNED_DEPTH = "expected_depth"
"""The diagnostic of a method that learns its depth: the mean of its depth posterior, E_q[l] (UDN paper §3)."""


def trainable_parameters(method: nn.Module) -> int:
    """The number of scalars the optimiser fits: every member of an ensemble, a variational posterior's means and
    scales, a learned noise; fixed buffers (a Laplace approximation's curvature, a prior) are not counted."""
    return sum(parameter.numel() for parameter in method.parameters() if parameter.requires_grad)


def hidden_layers(method_cfg: Mapping, diagnostics: Mapping[str, float]) -> float | None:
    """The depth in hidden layers of the network that predicts: the depth posterior's mean where the method learns
    its depth (UDN and DUN, `LEARNED_DEPTH`), the set depth of a network of fixed depth (`depth`), else the number of
    `hidden_widths` (for a continuous-depth network, those of the function it integrates over depth t in [0, 1]);
    None for a method without layers (the exact GP)."""
    if LEARNED_DEPTH in diagnostics:
        return float(diagnostics[LEARNED_DEPTH])
    if method_cfg.get("depth") is not None:
        return float(method_cfg["depth"])
    widths = method_cfg.get("hidden_widths")
    return None if widths is None else float(len(widths))


def architecture(method: nn.Module, method_cfg: Mapping) -> dict[str, float]:
    """{`parameters`, `hidden_layers`} of a trained method (`trainable_parameters`, `hidden_layers` from its
    `diagnostics()`), without `hidden_layers` where it has none."""
    depth = hidden_layers(method_cfg, method.diagnostics())
    return {"parameters": trainable_parameters(method), **({} if depth is None else {"hidden_layers": depth})}

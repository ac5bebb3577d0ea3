"""Evaluations ask a method through the hooks of bnnrepro.methods.evaluation_hooks, never through a concrete class:
no evaluation module imports a method module other than the protocols, and a method without a hook gets an error
that names the evaluation, the hook and the functions to define."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from torch import nn

import bnnrepro.evaluations
from bnnrepro.evaluations import forecast_paths, posterior_arrays
from bnnrepro.methods import evaluation_hooks
from bnnrepro.methods.evaluation_hooks import DepthPaths, LatentPaths, ObservationForecasts, TargetSamples, require

PROTOCOL_MODULES = {"bnnrepro.methods.protocol", "bnnrepro.methods.evaluation_hooks"}


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("path", sorted(Path(bnnrepro.evaluations.__file__).parent.glob("*.py")), ids=lambda p: p.name)
def test_an_evaluation_imports_no_concrete_method(path: Path) -> None:
    concrete = {m for m in imported_modules(path) if m.startswith("bnnrepro.methods.") and m not in PROTOCOL_MODULES}
    assert not concrete, f"{path.name} imports {concrete}: ask the method through bnnrepro.methods.evaluation_hooks"


class PlainNetwork(nn.Module):
    """A method with the training hooks only: no evaluation hook."""

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return x


@pytest.mark.parametrize("hook", [DepthPaths, LatentPaths, ObservationForecasts, TargetSamples])
def test_a_method_without_the_hook_is_named_with_the_functions_to_define(hook: type) -> None:
    with pytest.raises(ValueError) as error:
        require(PlainNetwork(), hook, "some_evaluation")
    message = str(error.value)
    assert "'some_evaluation'" in message and hook.__name__ in message and "PlainNetwork has none" in message
    functions = [name for name in vars(hook) if not name.startswith("_")]
    assert functions and all(name in message for name in functions)


def test_the_evaluations_refuse_a_method_without_their_hook() -> None:
    with pytest.raises(ValueError, match="ObservationForecasts"):
        forecast_paths.forecast_paths(PlainNetwork(), torch.zeros(3, 2), 4)
    with pytest.raises(ValueError, match="TargetSamples"):
        posterior_arrays.evaluation_arrays(PlainNetwork(), posterior_arrays.EVALUATION, None, None)


def test_every_hook_is_a_runtime_protocol() -> None:
    hooks = [
        value
        for value in vars(evaluation_hooks).values()
        if isinstance(value, type) and value.__module__ == evaluation_hooks.__name__
    ]
    assert hooks and all(getattr(hook, "_is_runtime_protocol", False) for hook in hooks)

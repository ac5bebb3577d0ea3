"""What the methods with a fixed architecture share: one Adam group for all parameters, nothing to grow or
rebuild, and the "toy_paths" evaluation arrays of a 1D regression (data and predictive samples on the grid)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bnnrepro.data.spec import Splits
from bnnrepro.optim import Adam


def toy_predictive_arrays(method: nn.Module, splits: Splits, untrained: nn.Module) -> dict[str, np.ndarray]:
    """The "toy_paths" arrays of a regression method: the data, and predictive samples [S, N] of the trained
    (posterior) and the untrained (as initialised) method on the test grid (SDE-BNN P1 Figs. 2, 10)."""
    grid = torch.as_tensor(splits.x("test"))
    return {
        "x_train": splits.x("train"),
        "y_train": splits.y("train"),
        "x_grid": splits.x("test"),
        "y_grid": splits.y("test"),
        "posterior_predictive": method.predict(grid)[..., 0].numpy(),
        "prior_predictive": untrained.predict(grid)[..., 0].numpy(),
    }


class FixedArchitectureMethod(nn.Module):
    """The hooks of `bnnrepro.methods.protocol.Method` that a method whose architecture does not change while it
    trains shares: one Adam group, nothing to grow or rebuild, no diagnostics, nothing to prepare before a
    checkpoint loads. The step and `fit_posterior` are the method's own (or `LossMinimiser`'s)."""

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return [{"params": list(self.parameters()), "lr": lr}]

    def adapt_architecture(self, optimizer: Adam) -> None:
        """The architecture is fixed."""

    def diagnostics(self) -> dict[str, float]:
        return {}

    def prepare_resume(self, state: dict) -> None:
        """Nothing to build before loading a checkpoint."""

    def evaluation_arrays(self, name: str, splits: Splits, untrained: nn.Module) -> dict[str, np.ndarray]:
        """The arrays of evaluation "toy_paths" (`toy_predictive_arrays`)."""
        if name != "toy_paths":
            raise KeyError(f"unknown evaluation {name!r} for {type(self).__name__}; known: toy_paths")
        return toy_predictive_arrays(self, splits, untrained)

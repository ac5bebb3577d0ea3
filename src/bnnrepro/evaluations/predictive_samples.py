"""The predictive samples of a 1D regression method on its test grid, trained and as initialised: what the toy
figures of SDE-BNN (Figs. 2, 10) and of repulsive ensembles (Fig. 1) draw."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bnnrepro.data.spec import Splits


def predictive_arrays(method: nn.Module, splits: Splits, untrained: nn.Module) -> dict[str, np.ndarray]:
    """The data, and predictive samples [S, N] of the trained (posterior) and the untrained (as initialised)
    method on the test grid (SDE-BNN Figs. 2, 10)."""
    grid = torch.as_tensor(splits.x("test"))
    return {
        "x_train": splits.x("train"),
        "y_train": splits.y("train"),
        "x_grid": splits.x("test"),
        "y_grid": splits.y("test"),
        "posterior_predictive": method.predict(grid)[..., 0].numpy(),
        "prior_predictive": untrained.predict(grid)[..., 0].numpy(),
    }

"""How a BNSDE's state h meets an observed sequence: where the solve starts, on which time grid, and what it predicts.

- `ObservedState` (Lotka-Volterra, Lorenz; thesis §6.4.1-6.4.2): the state is the observation. The solve starts
  from the window's first observation (as the authors' code, `manuelhaussmann/bnsde` `bsde.py`; p(h_0) is not
  stated) on the window's time column (bnnrepro.data.dynamics: the last column of x is t).
- `EncodedState` (CMU walking, §6.4.3 and §6.6.3): a 6-D latent state. The encoder b maps the first three frames
  through two softplus layers of 30 units to h_0; the decoder a maps each h_t back through the mirrored chain to a
  frame. The thesis writes the encoder inside the drift, f(b(h_t), t); since b consumes three observed frames, we
  read it as setting the initial state. Both are point estimates (no prior is given for them). Frames are dt apart
  (0.1 in the ODE2VAE preprocessing).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F


class ObservedState(nn.Module):
    """h is the observation: x [B, L, P + 1] (states and time), targets y [B, L, P]."""

    def __init__(self, state_size: int):
        super().__init__()
        self.state_size = state_size

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, 0, : self.state_size]

    def start_time(self, x: torch.Tensor) -> torch.Tensor:
        """The time of each window's first observation [B]."""
        return x[:, 0, -1]

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """EM step sizes [L - 1]: the spacing of the first window's times (the windows share their spacing)."""
        return x[0, 1:, -1] - x[0, :-1, -1]

    def emit(self, path: torch.Tensor) -> torch.Tensor:
        return path


def softplus_chain(sizes: Sequence[int]) -> nn.Sequential:
    """Linear layers between `sizes` with softplus between them (none after the last)."""
    layers: list[nn.Module] = []
    for index, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(n_in, n_out))
        if index < len(sizes) - 2:
            layers.append(nn.Softplus())
    return nn.Sequential(*layers)


class EncodedState(nn.Module):
    """A latent state: h_0 = b(first `context` frames), prediction a(h_t); frames x = y [B, L, D]."""

    def __init__(self, frame_size: int, latent_size: int, widths: Sequence[int], context: int, dt: float):
        super().__init__()
        self.state_size, self.context, self.dt = latent_size, context, dt
        self.encoder = softplus_chain([context * frame_size, *widths, latent_size])
        self.decoder = softplus_chain([latent_size, *reversed(widths), frame_size])

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] < self.context:
            raise ValueError(f"a sequence of {x.shape[1]} frames is shorter than the encoder's {self.context}")
        return self.encoder(x[:, : self.context].flatten(1))

    def start_time(self, x: torch.Tensor) -> torch.Tensor:
        """0 for each sequence: frames carry no clock, so a time-reading drift reads the time since the first."""
        return x.new_zeros(x.shape[0])

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full((x.shape[1] - 1,), self.dt, dtype=x.dtype, device=x.device)

    def emit(self, path: torch.Tensor) -> torch.Tensor:
        return self.decoder(path)


def gaussian_log_likelihood(prediction: torch.Tensor, targets: torch.Tensor, variance: float) -> torch.Tensor:
    """log N(y_k | prediction_k, variance I) summed over observations and dimensions: [S, K, B, D] -> [S, B]."""
    squared = F.mse_loss(prediction, targets.expand_as(prediction), reduction="none")
    per_point = -0.5 * (squared / variance + torch.log(torch.tensor(2 * torch.pi * variance)))
    return per_point.sum((1, 3))

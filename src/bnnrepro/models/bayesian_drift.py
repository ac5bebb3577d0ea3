"""The BNN drift f_theta(h, t) of a Bayesian neural SDE (thesis §6.2.1, eqs. 6.3 and 6.5): an MLP whose weights have
the mean-field Gaussian q = p_phi(theta) (§6.2.2), or point weights (the SGLD baseline, Look & Kandemir 2019). With
`time_input` the network reads the time beside the state, as the thesis writes it (and the authors' code,
`manuelhaussmann/bnsde` `bsde.py`, feeds t to its BNN); without, f_theta(h) is autonomous.

How a solve draws theta is `weight_sampling`:
- "local_reparameterisation": every evaluation draws each unit's pre-activation from its Gaussian marginal
  (Kingma et al. 2015), so theta is effectively resampled at every Euler-Maruyama step (§6.2.2, and the authors'
  code);
- "per_trajectory": theta is drawn once per simulated trajectory and kept for all its steps (Algorithm 2, line 3);
- "mean": the posterior means (a deterministic drift; the point weights of SGLD are always used this way).
The thesis uses both of the first two without reconciling them; `config/train/method/bnsde.yaml` says which is ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.models.moment_layers import GaussianAffine, LayerShape

WEIGHT_SAMPLING = ("local_reparameterisation", "per_trajectory", "mean")
ACTIVATIONS = {"softplus": F.softplus, "relu": F.relu, "tanh": torch.tanh}

DriftFunction = Callable[..., torch.Tensor]
"""f(h [B, P], t [B] or None) -> [B, P] with theta fixed for one solve (as `BayesianDrift.draw` returns it)."""


class BayesianDrift(nn.Module):
    """f_theta: R^P (x R with `time_input`) -> R^P, an MLP of `widths` hidden units with `activation`, Bayesian or
    point weights."""

    def __init__(
        self, state_size: int, widths: Sequence[int], activation: str, bayesian: bool = True, time_input: bool = False
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown drift activation {activation!r}; use one of {', '.join(ACTIVATIONS)}")
        self.time_input, self.input_size = time_input, state_size + int(time_input)
        sizes = [self.input_size, *widths, state_size]
        shapes = [LayerShape(i, o) for i, o in zip(sizes[:-1], sizes[1:], strict=True)]
        self.state_size, self.bayesian = state_size, bayesian
        self.layers = nn.ModuleList(
            [GaussianAffine(s) if bayesian else nn.Linear(s.in_size, s.out_size) for s in shapes]
        )
        self.activation = ACTIVATIONS[activation]

    def _through(self, h: torch.Tensor, layer_call: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
        for index in range(len(self.layers)):
            h = layer_call(index, h)
            if index < len(self.layers) - 1:
                h = self.activation(h)
        return h

    def inputs(self, h: torch.Tensor, t: torch.Tensor | None) -> torch.Tensor:
        """The network's input: the state h [B, P], with `time_input` beside the time t [B]."""
        if not self.time_input:
            return h
        if t is None:
            raise ValueError("this drift reads the time (method.drift.time_input); give the solve its start times")
        return torch.cat([h, t[:, None].to(h.dtype)], dim=-1)

    def mean_forward(self, h: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
        """f at the posterior means (or the point weights)."""
        return self._through(self.inputs(h, t), lambda i, x: self._mean_layer(i)(x))

    def _mean_layer(self, index: int) -> Callable[[torch.Tensor], torch.Tensor]:
        layer = self.layers[index]
        return layer.mean_forward if self.bayesian else layer

    def draw(self, batch: int, weight_sampling: str) -> DriftFunction:
        """The drift of one solve of `batch` trajectories under `weight_sampling` (WEIGHT_SAMPLING)."""
        if weight_sampling not in WEIGHT_SAMPLING:
            raise ValueError(f"unknown weight_sampling {weight_sampling!r}; use one of {', '.join(WEIGHT_SAMPLING)}")
        if not self.bayesian or weight_sampling == "mean":
            return self.mean_forward
        if weight_sampling == "local_reparameterisation":
            samplers = [layer.sampler() for layer in self.layers]  # the variances once per solve, not per step
            return lambda h, t=None: self._through(self.inputs(h, t), lambda i, x: samplers[i](x))
        weights = [self._trajectory_weights(layer, batch) for layer in self.layers]

        def per_trajectory(h: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
            return self._through(
                self.inputs(h, t), lambda i, x: torch.baddbmm(weights[i][1], x[:, None], weights[i][0])[:, 0]
            )

        return per_trajectory

    @staticmethod
    def _trajectory_weights(layer: GaussianAffine, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(W^T [B, in, out], b [B, 1, out]) drawn from q once per trajectory by reparameterisation."""

        def per_row(mean: torch.Tensor, variance: torch.Tensor) -> torch.Tensor:
            return mean + variance.sqrt() * torch.randn((batch, *mean.shape), dtype=mean.dtype, device=mean.device)

        weight_var, bias_var = layer.variances()
        weight, bias = per_row(layer.weight_mean, weight_var), per_row(layer.bias_mean, bias_var)
        return weight.transpose(1, 2), bias[:, None]

    def kl(self, prior_precision: float) -> torch.Tensor:
        """KL(p_phi(theta) || N(0, 1/alpha)), closed form (the weight term of Lemma 1); 0 for point weights."""
        if not self.bayesian:
            return torch.zeros(())
        return sum((layer.kl(prior_precision) for layer in self.layers), torch.zeros(()))

    def squared_norm(self) -> torch.Tensor:
        """||theta||^2 of point weights (the Gaussian prior's log-density up to constants, SGLD)."""
        return sum(p.square().sum() for p in self.parameters())

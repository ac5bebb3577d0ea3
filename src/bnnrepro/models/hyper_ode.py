"""Continuous-depth blocks with deterministic weight paths: ODEnet and HyperODEnet, with their mean-field
variants (Xu et al. 2022, Table 1 baselines, §5; settings in App. B, Table 2).

    dh/dt = f_h(t, h, w_t)      the hidden dynamics (the SDE-BNN's f_h)
    dw/dt = f_w(w_t, t; phi)    HyperODEnet: a hypernetwork drift (eq. 8, sigma = 0); ODEnet: dw/dt = 0

integrated with fixed-step Euler over t in [0, 1] (Table 2 "# Solver Steps"). w_0 and phi are point estimates
(ODEnet, HyperODEnet) or mean-field Gaussians (MFVI ODEnet: q(w_0); MFVI HyperODEnet: q(w_0) q(phi)), each
sample of q giving one deterministic path.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from bnnrepro.models.weight_sde import (
    DriftNet,
    GaussianInitialWeights,
    HiddenDynamics,
    MLPHiddenDynamics,
    PointInitialWeights,
)


def flat_weights(
    init: torch.Tensor, mean_field: bool, prior_variance: float, initial_log_std: float
) -> GaussianInitialWeights | PointInitialWeights:
    """A flat parameter vector as a point estimate, or as q = N(mean, diag std^2) against N(0, prior_variance I)
    with the closed-form KL (`GaussianInitialWeights`, the SDE-BNN's inferred w_0)."""
    if mean_field:
        return GaussianInitialWeights(init, prior_variance, initial_log_std)
    return PointInitialWeights(init)


class WeightODEBlock(nn.Module):
    """One ODEnet / HyperODEnet block: `forward(h [S, B, *state_shape])` -> (h_1 [S, B, ...], KL [S]).

    * `drift_widths=None`: ODEnet, constant weights w_t = w_0 (Table 2: sigma 0, KL coef. 0).
    * `drift_widths` given: HyperODEnet, dw/dt = NN_phi(w, t), the SDE-BNN's drift net (`DriftNet`: an MLP on
      [w, t] with its last layer at zero, so w_t = w_0 at initialisation) without the OU term -w and without
      noise (Table 2: sigma 0). It is evaluated by `MLPHiddenDynamics`, the same MLP with its weights read from a
      flat vector phi (`DriftNet`'s parameters in order), so each sample of q(phi) drives its own path.
    * `mean_field_w0`: q(w_0) mean-field (MFVI ODEnet, §5); `mean_field_drift`: q(phi) mean-field too
      (MFVI HyperODEnet, §5: "inference ... over the parameters of the hypernetwork"; the authors'
      `--meanfield_sdebnn` wraps the whole block, w_0 and phi). Prior N(0, prior_variance I), posterior log-std
      starting at `initial_log_std`.

    A point-estimate HyperODEnet has no KL: Table 2's "KL coef. 1e-3" for it multiplies zero.
    """

    def __init__(
        self,
        dynamics: HiddenDynamics,
        num_steps: int = 20,
        drift_widths: Sequence[int] | None = None,
        drift_activation: str = "tanh",
        mean_field_w0: bool = False,
        mean_field_drift: bool = False,
        prior_variance: float = 0.01,
        initial_log_std: float = -4.0,
    ):
        super().__init__()
        if mean_field_drift and drift_widths is None:
            raise ValueError("mean_field_drift needs a hypernetwork drift (drift_widths)")
        self.dynamics, self.num_steps = dynamics, num_steps
        self.stochastic = mean_field_w0 or mean_field_drift
        options = (prior_variance, initial_log_std)
        self.initial_weights = flat_weights(dynamics.initial_weights(), mean_field_w0, *options)
        self.hypernet: MLPHiddenDynamics | None = None
        self.drift_weights: GaussianInitialWeights | PointInitialWeights | None = None
        if drift_widths is not None:
            num_weights = dynamics.num_weights
            self.hypernet = MLPHiddenDynamics(num_weights, drift_widths, drift_activation)
            phi = parameters_to_vector(DriftNet(num_weights, drift_widths, drift_activation).parameters())
            self.drift_weights = flat_weights(phi.detach(), mean_field_drift, *options)

    def forward(self, h: torch.Tensor, entropy: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(h_1, KL [S]) from h_0 [S, B, ...]; `entropy` is unused (no Brownian motion), kept for the block
        interface shared with the SDE-BNN block."""
        num_samples = h.shape[0]
        w, kl = self.initial_weights(num_samples)
        if self.hypernet is not None:
            phi, kl_phi = self.drift_weights(num_samples)
            kl = kl + kl_phi
        times = torch.linspace(0.0, 1.0, self.num_steps + 1, dtype=h.dtype, device=h.device)
        for t0, t1 in pairwise(times):
            dh = self.dynamics(t0, h, w)
            if self.hypernet is not None:
                w = w + self.hypernet(t0, w.unsqueeze(1), phi).squeeze(1) * (t1 - t0)
            h = h + dh * (t1 - t0)
        return h, kl

"""Prior knowledge of a hybrid BNSDE: the ODE dh = r_xi(h) dt with fixed parameters xi, weighted per dimension by
gamma in [0, 1]^P (thesis eqs. 6.4-6.6). The hybrid drift adds gamma * r_xi to the BNN's; the prior SDE of the PAC
bound has gamma * r_xi as its whole drift (eq. 6.6).

The known systems are those the data were simulated from (bnnrepro.data.dynamics), with "relevant but inaccurate"
parameters: xi ~ N(true, std^2) drawn once per run from its seed (Lotka-Volterra std 0.5, §6.4.1; Lorenz std 1,
§6.4.2). Only the equations with gamma_d > 0 matter, so perturbing every parameter is the same as perturbing the
revealed equation's (each Lorenz and Lotka-Volterra parameter enters one equation only).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from bnnrepro.data.dynamics import LORENZ_BETA, LORENZ_RHO, LORENZ_SIGMA, LV_THETA, lorenz_drift, lotka_volterra_drift
from bnnrepro.models.bayesian_drift import BayesianDrift

SYSTEMS = {
    "lotka_volterra": (LV_THETA, lambda h, xi: lotka_volterra_drift(h[..., 0], h[..., 1], xi)),
    "lorenz": (
        (LORENZ_SIGMA, LORENZ_RHO, LORENZ_BETA),
        lambda h, xi: lorenz_drift(h[..., 0], h[..., 1], h[..., 2], *xi),
    ),
}
"""{system: (true parameters, r(h [..., P], xi) -> tuple of P drift components)}."""
_SEED_TAG = 0x6B6E  # the stream of the parameter noise, apart from the run's other draws


def check_gamma(gamma: Sequence[float], state_size: int) -> None:
    """gamma must have one weight in [0, 1] per state dimension."""
    if len(gamma) != state_size:
        raise ValueError(
            f"knowledge.gamma {list(gamma)} has {len(gamma)} entries for a {state_size}-dimensional state: give one "
            f"weight in [0, 1] per dimension (e.g. {[0.0] * state_size} hides every equation)"
        )
    outside = [g for g in gamma if not 0.0 <= g <= 1.0]
    if outside:
        raise ValueError(f"knowledge.gamma {list(gamma)} has weights {outside} outside [0, 1] (thesis eq. 6.5)")


class KnowledgeDrift(nn.Module):
    """gamma * r_xi(h) of a known system with noisy parameters xi, or of no system (0)."""

    def __init__(self, system: str | None, gamma: Sequence[float], state_size: int, noise_std: float, seed: int):
        super().__init__()
        if system is not None and system not in SYSTEMS:
            raise ValueError(f"unknown knowledge.system {system!r}; use one of {', '.join(SYSTEMS)} or null")
        check_gamma(gamma, state_size)
        if noise_std < 0:
            raise ValueError(f"knowledge.parameter_noise_std is {noise_std}; it must be >= 0")
        self.system = system
        self.register_buffer("gamma", torch.tensor(gamma, dtype=torch.float32))
        true = SYSTEMS[system][0] if system else ()
        noise = torch.randn(len(true), generator=torch.Generator().manual_seed(seed * 65536 + _SEED_TAG))
        self.register_buffer("parameters_xi", torch.tensor(true, dtype=torch.float32) + noise_std * noise)

    @property
    def active(self) -> bool:
        """Whether any prior knowledge enters the drift."""
        return self.system is not None and bool(self.gamma.any())

    def forward(self, h: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
        """gamma * r_xi(h) [..., P] (zeros without knowledge); the known systems are autonomous (t unused)."""
        if self.system is None:
            return torch.zeros_like(h)
        components = SYSTEMS[self.system][1](h, self.parameters_xi.unbind())
        return self.gamma * torch.stack(components, dim=-1)


class LearnedKnowledge(nn.Module):
    """gamma * r(h) with r the posterior-mean drift of a BNSDE trained before (CMU, §6.4.3: an E-PAC-Bayes model
    pretrained on other subjects' walks), frozen."""

    def __init__(self, drift: BayesianDrift, gamma: Sequence[float]):
        super().__init__()
        check_gamma(gamma, drift.state_size)
        self.drift = drift.requires_grad_(False)
        self.register_buffer("gamma", torch.tensor(gamma, dtype=torch.float32))

    @property
    def active(self) -> bool:
        return bool(self.gamma.any())

    def forward(self, h: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
        return self.gamma * self.drift.mean_forward(h, t)

"""The hybrid BNSDE dh = (f_theta(h, t) + gamma * r_xi(h)) dt + G dW (thesis eq. 6.5) and its Euler-Maruyama solve.

G is a constant diagonal diffusion with no learnable parameters (§6.2.1). One solve of B trajectories on the
observation grid t_0 < ... < t_K (the EM step is the observation spacing, Algorithm 2) returns the path and, per
trajectory, the discretised path KL of Lemma 1 between the hybrid and the prior SDE dh = gamma * r_xi dt + G dW
(eq. 6.6), which share the diffusion so that only the BNN part enters:

    KL_path = sum_k 1/2 f_theta(h_k, t_k)^T (G G^T)^-1 f_theta(h_k, t_k) dt_k.

This is the same Monte Carlo estimate as torchsde's `sdeint(..., logqp=True)` with posterior drift f + gamma * r,
prior drift gamma * r and diffusion G (tests/test_bnsde.py checks the two agree); the loop here is plain torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from bnnrepro.models.bayesian_drift import BayesianDrift, DriftFunction
from bnnrepro.models.prior_knowledge import KnowledgeDrift


def check_diffusion(diffusion: Sequence[float], state_size: int) -> None:
    """G = diag(diffusion) must have one positive entry per state dimension (its inverse enters Lemma 1)."""
    if len(diffusion) != state_size or any(not g > 0 for g in diffusion):
        raise ValueError(
            f"diffusion {list(diffusion)} must have {state_size} positive entries, one per state dimension: the path "
            "KL of Lemma 1 divides by G G^T (thesis §6.2.3); give the known noise scale of each equation"
        )


class HybridSDE(nn.Module):
    """A BNN drift (or none: the white-box prior SDE), prior knowledge gamma * r_xi and a constant diagonal G."""

    def __init__(self, drift: BayesianDrift | None, knowledge: KnowledgeDrift, diffusion: Sequence[float]):
        super().__init__()
        state_size = len(knowledge.gamma)
        check_diffusion(diffusion, state_size)
        self.drift, self.knowledge = drift, knowledge
        self.register_buffer("diffusion", torch.tensor(diffusion, dtype=torch.float32))

    def solve(
        self,
        h0: torch.Tensor,
        steps: torch.Tensor,
        weight_sampling: str,
        noise: torch.Tensor | None = None,
        with_kl: bool = True,
        t0: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """EM from h0 [B, P] at times t0 [B] (0 when None) over the step sizes `steps` [K]: (path [K + 1, B, P]
        with path[0] = h0, path KL [B]).

        noise: standard normal increments [K, B, P] (drawn here when None), so that a caller can share one Brownian
        path with another solver. with_kl=False skips the KL (zeros), e.g. in forecasts."""
        batch = h0.shape[0]
        if noise is None:
            noise = torch.randn((len(steps), *h0.shape), dtype=h0.dtype, device=h0.device)
        f_theta: DriftFunction | None = None if self.drift is None else self.drift.draw(batch, weight_sampling)
        precision = self.diffusion.square().reciprocal()
        scales = steps.sqrt()[:, None, None] * self.diffusion * noise
        knows = self.knowledge.active  # once per solve: no host-device synchronisation per step
        path, kl, h = [h0], h0.new_zeros(batch), h0
        t = h0.new_zeros(batch) if t0 is None else t0
        for k, dt in enumerate(steps.tolist()):
            drift = self.knowledge(h, t) if knows else torch.zeros_like(h)
            if f_theta is not None:
                learned = f_theta(h, t)
                drift = drift + learned
                if with_kl:
                    kl = kl + 0.5 * dt * (learned.square() * precision).sum(-1)
            h, t = h + drift * dt + scales[k], t + dt
            path.append(h)
        return torch.stack(path), kl

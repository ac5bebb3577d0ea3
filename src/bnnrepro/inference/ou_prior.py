"""The Ornstein-Uhlenbeck prior over the weight process w_t of SDE-BNN (Xu et al. 2022, eq. 9).

dw_t = -theta w_t dt + sigma dB_t on the depth interval t in [0, 1], elementwise over the flat weight vector.
The SDE-BNN paper (Xu et al. 2022, eq. 9) uses theta = 1 (f_p = -w, g = sigma I); theta is kept as a parameter
because the authors' toy scripts (bayeSDE) also use theta = 0.1 (Fig. 3) and theta = 0 (Brownian motion, Fig. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class OrnsteinUhlenbeckPrior:
    """f_p(w, t) = -rate * w, g(w, t) = sigma * I (SDE-BNN paper eq. 9 with rate = 1)."""

    sigma: float
    rate: float = 1.0

    def __post_init__(self) -> None:
        if not self.sigma > 0:
            raise ValueError(f"the diffusion sigma must be positive (the path KL divides by it), got {self.sigma}")
        if self.rate < 0:
            raise ValueError(f"the OU rate must be non-negative, got {self.rate}")

    def drift(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """f_p(w_t, t) = -rate * w_t (eq. 9)."""
        return -self.rate * w

    def diffusion(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """The diagonal of g(w_t, t) = sigma I (eq. 9)."""
        return torch.full_like(w, self.sigma)

    def mean(self, t: float | torch.Tensor, w0: torch.Tensor) -> torch.Tensor:
        """E[w_t | w_0] = w_0 exp(-rate t), the solution of dm/dt = -rate m."""
        return w0 * torch.exp(-self.rate * torch.as_tensor(t, dtype=w0.dtype, device=w0.device))

    def variance(self, t: float | torch.Tensor, w0_var: float | torch.Tensor = 0.0) -> torch.Tensor:
        """Var[w_t] for w_0 with variance `w0_var` (0: a fixed w_0), from dv/dt = -2 rate v + sigma^2:

        v(t) = w0_var exp(-2 rate t) + sigma^2 (1 - exp(-2 rate t)) / (2 rate)   (sigma^2 t when rate = 0).

        The stationary variance is sigma^2 / (2 rate), not sigma^2 as the SDE-BNN workshop paper (Xu et al. 2020)
        states below its eq. 10.
        """
        t = torch.as_tensor(t, dtype=torch.get_default_dtype())
        if self.rate == 0:
            return w0_var + self.sigma**2 * t
        noise = self.sigma**2 * -torch.expm1(-2 * self.rate * t) / (2 * self.rate)
        return w0_var * torch.exp(-2 * self.rate * t) + noise

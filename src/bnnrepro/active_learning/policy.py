"""RAL's policy (thesis §4.2.2, "Policy net"; Table 4.5): a BNN of two Gaussian affine layers with the CLT ReLU
moments between them, fed the moments of the Gaussian state, whose M outputs are probit-marginalised over q(phi)
(eq. 4.5) and normalised into a categorical distribution over the M candidates."""

from __future__ import annotations

import torch
from torch import nn

from bnnrepro.inference.classification_likelihoods import probit_predictive
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.models.moment_layers import LayerShape, MomentNetwork, activation_moments


class PolicyNetwork(nn.Module):
    """pi(. | S): state moments [1, C*M] -> M action probabilities."""

    def __init__(self, state_size: int, hidden_width: int, num_candidates: int, prior_precision: float):
        super().__init__()
        shapes = [LayerShape(state_size, hidden_width), LayerShape(hidden_width, num_candidates)]
        self.network = MomentNetwork(shapes, activation_moments("relu"))
        self.prior_precision = prior_precision

    def forward(self, state: Moments) -> torch.Tensor:
        """a^t_m = p(a~_m) / sum_j p(a~_j) with p(a~_m) = Phi(mu_m / sqrt(1 + sigma_m^2)) (eq. 4.5) [M]."""
        mean, var = self.network(state)
        marginals = probit_predictive(mean, var)[0]
        return marginals / marginals.sum()

    def kl(self) -> torch.Tensor:
        """KL(q(phi) || N(0, 1/alpha)), alpha = 100 in the thesis (§4.7)."""
        return self.network.kl(self.prior_precision)

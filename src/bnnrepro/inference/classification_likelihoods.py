"""The two classification likelihoods of thesis ch. 4 (Haußmann 2021, §4.2.1 and §4.6.2) and the uncertainty
scores that active learning reads from them (§4.3: Maxent, BALD).

- `Softmax`: y ~ Cat(softmax(f)), the categorical cross-entropy of the dropout networks (Drop-BNN-CE).
- `MultiLabelProbit`: y in {0, 1}^C with y_c ~ Ber(Phi(f_c)) independently (§4.2.1), used even though each image
  has one class, because its predictive under a Gaussian f is closed form (eq. 4.4):
  int Ber(y_c | Phi(f_c)) N(f_c | g_c, h_c) df_c = Ber(y_c | Phi(g_c / sqrt(1 + h_c))).

Each likelihood maps outputs f to its per-class probabilities, and probabilities to the entropy of the predictive
distribution they define over its own label space (one class of C; or C independent bits: the sum of the bits'
binary entropies, as the authors' code (`manuelhaussmann/ral`, `exp_mnist.py`) ranks by), to the likelihood of an
observed class, and to probabilities over the C classes normalised for the accuracy/NLL/ECE metrics (the probit's C bits
normalised as the policy's probit outputs are in eq. 4.5). Shapes: outputs and probabilities [..., C], labels [...]
(class indices, broadcast against the outputs' leading axes, e.g. [N] against S draws [S, N, C]).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

PROBABILITY_FLOOR = 1e-12
"""Smallest probability taken a log of (an overconfident probit output rounds to exactly 0 or 1 in float32)."""


def probit_predictive(mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """Phi(g / sqrt(1 + h)): P(y_c = 1) when f_c ~ N(g_c, h_c), eq. (4.4) (and the policy's eq. 4.5)."""
    return torch.special.ndtr(mean / torch.sqrt(1.0 + var))


def binary_entropy(p: torch.Tensor) -> torch.Tensor:
    """H(Ber(p)) in nats, elementwise (0 at p = 0 and p = 1)."""
    return -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p))


class Softmax:
    """y ~ Cat(softmax(f))."""

    name = "softmax"

    @staticmethod
    def probabilities(outputs: torch.Tensor) -> torch.Tensor:
        return outputs.softmax(-1)

    @staticmethod
    def entropy(probabilities: torch.Tensor) -> torch.Tensor:
        """-sum_c p_c log p_c (§4.3, Maxent's H)."""
        return -torch.xlogy(probabilities, probabilities).sum(-1)

    @staticmethod
    def log_likelihood(probabilities: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """log p_y."""
        picked = probabilities.gather(-1, labels.expand(probabilities.shape[:-1])[..., None]).squeeze(-1)
        return picked.clamp_min(PROBABILITY_FLOOR).log()

    @staticmethod
    def log_likelihood_of_outputs(outputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """log softmax(f)_y, computed stably from the outputs."""
        return outputs.log_softmax(-1).gather(-1, labels.expand(outputs.shape[:-1])[..., None]).squeeze(-1)

    @staticmethod
    def class_probabilities(probabilities: torch.Tensor) -> torch.Tensor:
        return probabilities


class MultiLabelProbit:
    """y_c ~ Ber(Phi(f_c)) for c = 1..C, y the one-hot label (§4.2.1)."""

    name = "probit"

    @staticmethod
    def probabilities(outputs: torch.Tensor) -> torch.Tensor:
        return torch.special.ndtr(outputs)

    @staticmethod
    def entropy(probabilities: torch.Tensor) -> torch.Tensor:
        """sum_c H(Ber(p_c)): the entropy of the C independent bits the likelihood defines. §4.3 writes Maxent's H
        for a categorical p(y = c); the probit model's predictive is not one, and the authors' code
        (`manuelhaussmann/ral`, `exp_mnist.py`) ranks by this sum (our choice, the exact entropy of the model's own
        predictive)."""
        return binary_entropy(probabilities).sum(-1)

    @staticmethod
    def log_likelihood(probabilities: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """sum_c log Ber(y_c | p_c) with y the one-hot label."""
        one_hot = F.one_hot(labels, probabilities.shape[-1]).to(probabilities.dtype)
        chosen = torch.where(one_hot > 0, probabilities, 1 - probabilities)
        return chosen.clamp_min(PROBABILITY_FLOOR).log().sum(-1)

    @staticmethod
    def log_likelihood_of_outputs(outputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """sum_c log Phi(+-f_c) (+ for the label's class), computed stably with log Phi."""
        one_hot = F.one_hot(labels, outputs.shape[-1]).to(outputs.dtype)
        return torch.special.log_ndtr((2 * one_hot - 1) * outputs).sum(-1)

    @staticmethod
    def class_probabilities(probabilities: torch.Tensor) -> torch.Tensor:
        """The C bits' probabilities normalised to sum to one (as eq. 4.5 normalises the policy's)."""
        return probabilities / probabilities.sum(-1, keepdim=True).clamp_min(PROBABILITY_FLOOR)


LIKELIHOODS = {likelihood.name: likelihood for likelihood in (Softmax, MultiLabelProbit)}


def classification_likelihood(name: str) -> type[Softmax] | type[MultiLabelProbit]:
    """The likelihood of a method config's `likelihood` value."""
    if name not in LIKELIHOODS:
        raise ValueError(f"unknown classification likelihood {name!r}; choose one of {', '.join(LIKELIHOODS)}")
    return LIKELIHOODS[name]


def mutual_information(
    likelihood: type[Softmax] | type[MultiLabelProbit], predictive: torch.Tensor, draws: torch.Tensor
) -> torch.Tensor:
    """BALD (Houlsby et al. 2011; thesis §4.3): H[p(y | x, D)] - E_w[H[p(y | x, w)]], the first term from the
    predictive probabilities [N, C] (closed form for the CLT predictor), the second the mean over S draws [S, N, C]
    of the probabilities under sampled weights or outputs. Non-negative when `predictive` is the draws' expectation
    (the entropy is concave); per input [N]."""
    return likelihood.entropy(predictive) - likelihood.entropy(draws).mean(0)


def probit_draws(mean: torch.Tensor, var: torch.Tensor, num_samples: int) -> torch.Tensor:
    """Phi(f) for S draws f ~ N(mean, var) of the outputs [S, N, C]: the probabilities under sampled weights that
    BALD's second term averages (the CLT network's output Gaussian stands for q(w))."""
    noise = torch.randn((num_samples, *mean.shape), dtype=mean.dtype, device=mean.device)
    return torch.special.ndtr(mean + var.clamp_min(0).sqrt() * noise)

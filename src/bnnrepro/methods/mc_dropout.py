"""MC dropout (Gal & Ghahramani 2016): Bernoulli dropout after every hidden activation, at training and at test
time, read as variational inference; the predictive averages the likelihood's probabilities over dropout masks
(thesis §2.2; the baseline of thesis Tables 5.2 and 5.4, and ch. 4's Drop-BNN-CE and, with the multi-label probit
likelihood, Drop-BNN-Prob, §4.6.2). The Gaussian prior N(0, 1/alpha) of the weights is a weight decay
alpha/2 ||theta||^2 per N data points (alpha = 0: none)."""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from bnnrepro.data.spec import DataSpec
from bnnrepro.inference.classification_likelihoods import classification_likelihood
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.moment_layers import PlainNetwork, in_chunks, network_shapes

METHODS = ("mc_dropout",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("classification",)
"""The data tasks (config/train/dataset/*.yaml `task`) it takes; the workflow checks a study's pairs against them
before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {
    "regression": "implemented as the thesis' classifier (ch. 4, 5: categorical or probit likelihood); the UCI "
    "regression of Gal & Ghahramani (2016) is not implemented yet"
}
"""Why its methods do not take a task, for the error a study that pairs them gets."""


class MonteCarloDropout(LossMinimiser, FixedArchitectureMethod):
    """A `PlainNetwork` with dropout rate p; the loss is the negative log-likelihood averaged over `num_samples`
    masks, plus the weight decay."""

    def __init__(
        self,
        network: PlainNetwork,
        num_samples: int,
        eval_samples: int,
        likelihood: str = "softmax",
        prior_precision: float = 0.0,
    ):
        super().__init__()
        self.network, self.num_samples, self.eval_samples = network, num_samples, eval_samples
        self.likelihood, self.prior_precision = classification_likelihood(likelihood), prior_precision

    def _draws(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        return torch.stack([self.network(x, sample_dropout=True) for _ in range(num_samples)])

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        data_term = -self.likelihood.log_likelihood_of_outputs(self._draws(x, self.num_samples), y).mean()
        if not self.prior_precision:
            return data_term
        squared_norm = sum(parameter.square().sum() for parameter in self.network.parameters())
        return data_term + 0.5 * self.prior_precision * squared_norm / num_train

    @torch.no_grad()
    def acquisition_probabilities(self, x: torch.Tensor, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The likelihood's probabilities under the predictive [N, C] (their mean over masks) and under each of
        `num_samples` masks [S, N, C]."""
        draws = in_chunks(lambda chunk: self.likelihood.probabilities(self._draws(chunk, num_samples)), x, dim=1)
        return draws.mean(0), draws

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The likelihood's probabilities averaged over `eval_samples` dropout masks, over the classes [N, C]."""
        return self.likelihood.class_probabilities(self.acquisition_probabilities(x, self.eval_samples)[0])

    def noise_variance(self) -> float:
        return 0.0


def build(run_cfg: DictConfig, spec: DataSpec) -> MonteCarloDropout:
    cfg = run_cfg.method
    if not 0 <= cfg.dropout < 1:
        raise ValueError(f"method.dropout is a rate in [0, 1), got {cfg.dropout}")
    network = PlainNetwork(network_shapes(cfg, spec.input_shape, spec.num_classes), cfg.dropout)
    return MonteCarloDropout(network, cfg.num_samples, cfg.eval_samples, cfg.likelihood, cfg.prior_precision)

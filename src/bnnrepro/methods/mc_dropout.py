"""MC dropout (Gal & Ghahramani 2016): Bernoulli dropout after every hidden activation (and, with `input_dropout`,
on the inputs), at training and at test time, read as variational inference; the predictive averages the
likelihood's probabilities over dropout masks (thesis §2.2; the baseline of thesis Tables 5.2 and 5.4, and ch. 4's
Drop-BNN-CE and, with the multi-label probit likelihood, Drop-BNN-Prob, §4.6.2). On regression data (Gal &
Ghahramani's UCI experiments, §5.3) the likelihood is Gaussian, y ~ N(f(x), 1/tau), and the predictive is the
mixture over masks of those Gaussians: its samples of f and the noise variance 1/tau. With the heteroscedastic head
(Kendall & Gal 2017, "What uncertainties do we need", §3) the network outputs a mean and a variance per target
(bnnrepro.inference.heteroscedastic_gaussian) in place of the constant 1/tau, and the predictive is the mixture over
masks of N(mu_m(x), sigma_m^2(x)), moment-matched. The Gaussian prior N(0, 1/alpha) of the weights is a weight decay
alpha/2 ||theta||^2 per N data points (alpha = 0: none)."""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.inference.classification_likelihoods import classification_likelihood
from bnnrepro.inference.heteroscedastic_gaussian import (
    OUTPUTS_PER_TARGET,
    heteroscedastic_log_likelihood,
    mean_and_variance,
)
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.moment_layers import PlainNetwork, in_chunks, independent_draws, network_shapes

METHODS = ("mc_dropout",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("classification", "regression")
"""The data tasks (config/train/dataset/*.yaml `task`) it takes; the workflow checks a study's pairs against them
before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"forecasting": "a dropout network maps one input to one output; it has no sequence model"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""


class MonteCarloDropout(LossMinimiser, FixedArchitectureMethod):
    """A `PlainNetwork` with dropout rate p; the loss is the negative log-likelihood averaged over `num_samples`
    masks, plus the weight decay. `noise`: the Gaussian likelihood of regression data with a constant noise;
    `heteroscedastic`: regression data with the network's variance head instead (its outputs a mean and a raw
    variance per target; `noise` then None); neither: classification, with the classification likelihood
    `likelihood`."""

    def __init__(
        self,
        network: PlainNetwork,
        num_samples: int,
        eval_samples: int,
        likelihood: str = "softmax",
        prior_precision: float = 0.0,
        noise: RegressionLikelihood | None = None,
        heteroscedastic: bool = False,
    ):
        super().__init__()
        if heteroscedastic and noise is not None:
            raise ValueError("the heteroscedastic head replaces the constant noise: give no `noise` with it")
        self.network, self.num_samples, self.eval_samples = network, num_samples, eval_samples
        self.likelihood, self.prior_precision = classification_likelihood(likelihood), prior_precision
        self.noise, self.heteroscedastic = noise, heteroscedastic

    def _draws(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        return independent_draws(lambda inputs: self.network(inputs, sample_dropout=True), x, num_samples)

    def _log_likelihood(self, draws: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | outputs) [S, B] of the outputs under S masks [S, B, ...]."""
        if self.heteroscedastic:
            return heteroscedastic_log_likelihood(draws, y)
        if self.noise is not None:
            return self.noise(draws, y)
        return self.likelihood.log_likelihood_of_outputs(draws, y)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        data_term = -self._log_likelihood(self._draws(x, self.num_samples), y).mean()
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
        """Classification: the likelihood's probabilities averaged over `eval_samples` dropout masks, over the
        classes [N, C]; regression: f (with the head its mean output mu) under `eval_samples` masks [S, N, 1]."""
        if self.heteroscedastic:
            return in_chunks(lambda chunk: mean_and_variance(self._draws(chunk, self.eval_samples))[0], x, dim=1)
        if self.noise is not None:
            return in_chunks(lambda chunk: self._draws(chunk, self.eval_samples), x, dim=1)
        return self.likelihood.class_probabilities(self.acquisition_probabilities(x, self.eval_samples)[0])

    def noise_variance(self) -> float:
        """1/tau of the Gaussian likelihood on regression data; 0 on classification and with the heteroscedastic
        head, whose noise is `noise_variance_at`."""
        return self.noise.variance if self.noise is not None else 0.0

    @torch.no_grad()
    def noise_variance_at(self, x: torch.Tensor) -> torch.Tensor | float:
        """With the heteroscedastic head the mean of sigma_m^2(x) [N, 1] over `eval_samples` masks (drawn apart from
        `predict`'s; Kendall & Gal 2017 §3's aleatoric term); else the constant `noise_variance()`."""
        if not self.heteroscedastic:
            return self.noise_variance()
        return in_chunks(lambda chunk: mean_and_variance(self._draws(chunk, self.eval_samples))[1].mean(0), x)


def build(run_cfg: DictConfig, spec: DataSpec) -> MonteCarloDropout:
    cfg = run_cfg.method
    for key in ("dropout", "input_dropout"):
        if not 0 <= cfg[key] < 1:
            raise ValueError(f"method.{key} is a rate in [0, 1), got {cfg[key]}")
    regression = spec.task == "regression"
    if cfg.heteroscedastic and not regression:
        raise ValueError(f"method.heteroscedastic is a variance head for regression data; {spec.task} has none")
    outputs = (OUTPUTS_PER_TARGET if cfg.heteroscedastic else 1) if regression else spec.num_classes
    shapes = network_shapes(cfg, spec.input_shape or (spec.num_features,), outputs)
    network = PlainNetwork(shapes, cfg.dropout, cfg.input_dropout)
    noise = None
    if regression and not cfg.heteroscedastic:
        noise = RegressionLikelihood(cfg.noise.scale, "gaussian", cfg.noise.learn_scale)
    return MonteCarloDropout(
        network, cfg.num_samples, cfg.eval_samples, cfg.likelihood, cfg.prior_precision, noise, cfg.heteroscedastic
    )

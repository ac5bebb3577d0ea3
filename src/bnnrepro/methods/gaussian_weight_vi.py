"""Variational inference with mean-field Gaussian weights q(w) = N(mu, sigma^2) and prior N(0, 1/alpha), the
methods of thesis ch. 3 (Haußmann 2021; Haußmann et al. 2020b), which differ only in how they take the expected
log-likelihood E_q[log p(y | x, w)] of the ELBO (eq. 3.3, per datum: -E_q[log p] + KL(q || p) / N):

| method | pass through the network (bnnrepro.models.moment_layers)        | data term                     |
|--------|------------------------------------------------------------------|-------------------------------|
| vbp    | moments, Identity-Heaviside gates z ~ Ber(sigmoid(C E f)) (3.8) | closed form (3.5) / Taylor    |
| dvi    | moments, Gaussian (CLT) ReLU moments (Wu et al. 2019)            | closed form (3.5) / Taylor or |
|        |                                                                  | sampled softmax (ch. 5)       |
| varout | local-reparameterisation draws (Kingma et al. 2015), ReLU        | Monte Carlo                   |

With `likelihood: probit`, DVI's network is ch. 4's CLT-BNN (§4.2.1): the multi-label probit likelihood, whose data
term is the log of the closed-form predictive (4.4) (the thesis does not state it; the authors' RAL code's), and
with `variance: dropout` its CLT-BNN-Fix (§4.6.2; bnnrepro.models.moment_layers.DropoutVarianceAffine).

The KL over the binary activations (Proposition 2) is dropped, as in the thesis' experiments (§3.1.5.1).
Regression: a Gaussian likelihood of precision beta, set after every epoch to its type-II maximum-likelihood value
(§3.3.1: "for both VBP and VarOut"; VarOut's expectation by sampling) or kept fixed (ch. 5's beta = 100).
Predictive: regression N(E f, 1/beta + var f) (§3.1.3; VarOut: its draws); classification the mean softmax of
`eval_samples` draws of the final logits (§3.1.7; VarOut: of whole passes).
"""

from __future__ import annotations

from functools import partial

import torch
from omegaconf import DictConfig

from bnnrepro.data.spec import DataSpec
from bnnrepro.inference import moment_likelihoods as likelihoods
from bnnrepro.inference.classification_likelihoods import (
    MultiLabelProbit,
    classification_likelihood,
    probit_draws,
    probit_predictive,
)
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.moment_layers import (
    DropoutVarianceAffine,
    GaussianAffine,
    MomentNetwork,
    activation_moments,
    in_chunks,
    independent_draws,
    network_shapes,
    predictive_in_chunks,
)

METHODS = ("vbp", "dvi", "varout")
"""The Hydra method names (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("classification", "regression")
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""

ACTIVATIONS = {"vbp": "heaviside_relu", "dvi": "relu", "varout": "relu"}
"""Each method's activation moments (bnnrepro.models.moment_layers.ACTIVATION_MOMENTS); VarOut's draws use the
ReLU itself."""


class GaussianWeightVI(LossMinimiser, FixedArchitectureMethod):
    """A `MomentNetwork` trained on the per-datum negative ELBO with one of the data terms above."""

    def __init__(
        self,
        network: MomentNetwork,
        task: str,
        sampled_pass: bool,
        softmax_expectation: str,
        prior_precision: float,
        noise_precision: float,
        update_noise_precision: bool,
        num_samples: int,
        eval_samples: int,
        input_variance: float = 0.0,
        likelihood: str = "softmax",
    ):
        super().__init__()
        if softmax_expectation not in ("taylor", "sampled"):
            raise ValueError(f"softmax_expectation must be taylor or sampled, got {softmax_expectation!r}")
        self.likelihood = classification_likelihood(likelihood)
        if self.likelihood is MultiLabelProbit and sampled_pass:
            raise ValueError("the probit likelihood's closed form needs output moments; VarOut samples its outputs")
        self.network, self.task, self.sampled_pass = network, task, sampled_pass
        self.softmax_expectation, self.prior_precision = softmax_expectation, prior_precision
        self.update_noise_precision = update_noise_precision
        self.num_samples, self.eval_samples, self.input_variance = num_samples, eval_samples, input_variance
        self.register_buffer("noise_precision", torch.tensor(float(noise_precision)))

    def _draws(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        """VarOut: `num_samples` local-reparameterisation draws [S, B, D]."""
        return independent_draws(self.network.sample, x, num_samples)

    def expected_log_likelihood(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """E_q[log p(y_n | x_n, w)] per data point [B]."""
        if self.sampled_pass:
            outputs = self._draws(x, self.num_samples)
            if self.task == "classification":
                return likelihoods.mean_log_softmax(y, outputs)
            precision = self.noise_precision
            return likelihoods.gaussian_expected_log_likelihood(y, outputs, 0.0, precision).mean(0)
        mean, var = self.network(x, self.input_variance)
        if self.task == "regression":
            return likelihoods.gaussian_expected_log_likelihood(y, mean, var, self.noise_precision)
        if self.likelihood is MultiLabelProbit:  # log Ber(y | Phi(g / sqrt(1 + h))), eq. (4.4)
            return MultiLabelProbit.log_likelihood_of_outputs(mean / torch.sqrt(1.0 + var), y)
        if self.softmax_expectation == "taylor":
            return likelihoods.taylor_expected_log_softmax(y, mean, var)
        return likelihoods.mean_log_softmax(y, likelihoods.logit_samples(mean, var, self.num_samples))

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """-(1/B) sum_b E_q[log p(y_b | x_b, w)] + KL(q || p) / N."""
        kl = self.network.kl(self.prior_precision)
        return -self.expected_log_likelihood(x, y).mean() + kl / num_train

    @torch.no_grad()
    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Regression: beta <- N / sum_n E_q[(y_n - f_n)^2] on the whole training set (§3.3.1)."""
        if self.task != "regression" or not self.update_noise_precision:
            return
        if self.sampled_pass:
            draws = in_chunks(lambda x: self._draws(x, self.num_samples), x_train, dim=1)
            mean, var = draws.mean(0), draws.var(0, unbiased=False)
        else:
            mean, var = in_chunks(lambda x: torch.cat(self.network(x, self.input_variance), -1), x_train).chunk(2, -1)
        self.noise_precision.copy_(likelihoods.type2_ml_precision(y_train, mean, var))

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Classification: predictive probabilities [N, C]; regression: [S, N, D] samples of the mean function
        (two points carrying N(E f, var f) exactly for the sampling-free methods)."""
        return predictive_in_chunks(self._predict_chunk, x, self.task)

    def _predict_chunk(self, x: torch.Tensor) -> torch.Tensor:
        if self.sampled_pass:
            draws = self._draws(x, self.eval_samples)
            return draws.softmax(-1).mean(0) if self.task == "classification" else draws
        mean, var = self.network(x, self.input_variance)
        if self.task == "regression":
            return likelihoods.two_point_samples(mean, var)
        if self.likelihood is MultiLabelProbit:
            return MultiLabelProbit.class_probabilities(probit_predictive(mean, var))
        return likelihoods.sampled_predictive(mean, var, self.eval_samples)

    @torch.no_grad()
    def output_moments(self, x: torch.Tensor) -> Moments:
        """The moments (g, h) of the outputs f^L [N, C] (RAL's state, thesis §4.2.2)."""
        if self.sampled_pass:
            raise ValueError("VarOut samples its outputs: it has no output moments")
        stacked = in_chunks(lambda chunk: torch.cat(self.network(chunk, self.input_variance), -1), x)
        return Moments(*stacked.chunk(2, -1))

    @torch.no_grad()
    def acquisition_probabilities(self, x: torch.Tensor, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The likelihood's probabilities under the predictive [N, C] (the probit's in closed form, eq. 4.4) and
        under `num_samples` draws of the outputs [S, N, C] (BALD's second term, thesis §4.3)."""
        mean, var = self.output_moments(x)
        if self.likelihood is MultiLabelProbit:
            return probit_predictive(mean, var), probit_draws(mean, var, num_samples)
        draws = likelihoods.logit_samples(mean, var, num_samples).softmax(-1)
        return draws.mean(0), draws

    def noise_variance(self) -> float:
        return 1.0 / float(self.noise_precision) if self.task == "regression" else 0.0

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        values = {"kl": float(self.network.kl(self.prior_precision))}
        if self.task == "regression":
            values["noise_precision"] = float(self.noise_precision)
        return values


def build(run_cfg: DictConfig, spec: DataSpec) -> GaussianWeightVI:
    """VBP, DVI or VarOut from the Hydra `method` group, on regression or classification data."""
    cfg = run_cfg.method
    if cfg.noise_precision_update not in ("type2_ml", "fixed"):
        raise ValueError(f"method.noise_precision_update must be type2_ml or fixed, got {cfg.noise_precision_update!r}")
    if cfg.variance not in ("learned", "dropout"):
        raise ValueError(f"method.variance must be learned or dropout, got {cfg.variance!r}")
    num_outputs = spec.num_classes if spec.task == "classification" else 1
    options = {"sharpness": cfg.gate_sharpness} if cfg.name == "vbp" else {}
    layer = GaussianAffine if cfg.variance == "learned" else partial(DropoutVarianceAffine, dropout=cfg.dropout)
    network = MomentNetwork(
        network_shapes(cfg, spec.input_shape, num_outputs), activation_moments(ACTIVATIONS[cfg.name], **options), layer
    )
    return GaussianWeightVI(
        network,
        spec.task,
        sampled_pass=cfg.name == "varout",
        softmax_expectation=cfg.softmax_expectation,
        prior_precision=cfg.prior_precision,
        noise_precision=cfg.noise_precision,
        update_noise_precision=cfg.noise_precision_update == "type2_ml",
        num_samples=cfg.num_samples,
        eval_samples=cfg.eval_samples,
        input_variance=cfg.input_variance,
        likelihood=cfg.likelihood,
    )

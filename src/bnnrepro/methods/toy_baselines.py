"""The toy-regression comparison models of the SDE-BNN paper's Fig. 10 (App. C.6): an exact Gaussian process, a deep
ensemble of K = 8 MLPs and a mean-field Gaussian BNN (MFVI). The paper states neither kernel, architectures nor
training settings; the choices are documented in config/train/method/{gp,deep_ensemble,mfvi}.yaml.

`predict(x)` returns S samples of the predictive mean function [S, N, 1]: joint posterior draws of the GP's
latent f, the K ensemble members, or the BNN under S weight samples from q(w).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood, gaussian_kl, gaussian_sample
from bnnrepro.inference.heteroscedastic_gaussian import (
    OUTPUTS_PER_TARGET,
    gaussian_nll_without_constant,
    heteroscedastic_log_likelihood,
    mean_and_variance,
)
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.batched_mlp import batched_mlp, layer_sizes, uniform_linear_init
from bnnrepro.models.weight_sde import ACTIVATIONS, negative_elbo
from bnnrepro.optim import Optimizer

METHODS = ("gp", "deep_ensemble", "mfvi")
"""The Hydra method names (config/train/method/*.yaml `name`) this module builds: the toy-regression comparison
models of SDE-BNN Fig. 10."""
TASKS = ("regression",)
"""The data tasks (config/train/dataset/*.yaml `task`) they take; the workflow checks a study's pairs against them
before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"classification": "the GP, deep ensemble and MFVI baselines of SDE-BNN Fig. 10 are 1-D regression models"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""

# Added to the diagonal of the GP's predictive covariance before its Cholesky factor is taken for sampling (a
# dense grid makes it numerically singular); relative to the signal variance, i.e. 0.1% of the prior std.
SAMPLING_JITTER = 1e-6


class GaussianProcessRegression(LossMinimiser, FixedArchitectureMethod):
    """Exact GP regression, zero mean, kernel s^2 exp(-|x - x'|^2 / (2 l^2)) plus N(0, noise_variance) noise;
    the loss is the negative log marginal likelihood per datum (type-II maximum likelihood of log l, log s^2 and
    log noise_variance). All linear algebra is float64 Cholesky (Rasmussen & Williams 2006, Alg. 2.1).

    The GP conditions on the data it was trained on: its training step stores its batch, which must be the whole
    training set, in the buffers x_train / y_train (`condition_on`), so that they are in the state_dict and a
    reloaded checkpoint predicts the same. (The batch is stored in the loop's shuffled order: the order enters the
    rounding of the Cholesky factor.) Before any step the GP holds no data and `predict` draws from the prior
    (the "untrained" method of an evaluation gives the prior predictive)."""

    def __init__(
        self, num_features: int, lengthscale: float, signal_variance: float, noise_variance: float, eval_samples: int
    ):
        super().__init__()
        float64 = {"dtype": torch.float64}
        self.log_lengthscale = nn.Parameter(torch.tensor(math.log(lengthscale), **float64))
        self.log_signal_variance = nn.Parameter(torch.tensor(math.log(signal_variance), **float64))
        self.log_noise_variance = nn.Parameter(torch.tensor(math.log(noise_variance), **float64))
        self.register_buffer("x_train", torch.zeros(0, num_features, **float64))
        self.register_buffer("y_train", torch.zeros(0, **float64))
        self.eval_samples = eval_samples

    def kernel(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """RBF kernel matrix [N, M] between inputs a [N, D] and b [M, D]."""
        squared_distances = (a[:, None, :] - b[None, :, :]).pow(2).sum(-1)
        return self.log_signal_variance.exp() * torch.exp(-0.5 * squared_distances / self.log_lengthscale.exp() ** 2)

    def _training_cholesky(self, x: torch.Tensor) -> torch.Tensor:
        """Lower Cholesky factor of K(x, x) + noise_variance I."""
        identity = torch.eye(len(x), dtype=x.dtype, device=x.device)
        return torch.linalg.cholesky(self.kernel(x, x) + self.log_noise_variance.exp() * identity)

    def log_marginal_likelihood(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log N(y | 0, K + noise_variance I) for inputs x [N, D] and targets y [N], float64."""
        cholesky = self._training_cholesky(x)
        alpha = torch.cholesky_solve(y[:, None], cholesky)[:, 0]
        return -0.5 * y @ alpha - cholesky.diagonal().log().sum() - 0.5 * len(y) * math.log(2 * math.pi)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """-log p(y | x) / num_train on the whole training set (an exact GP has no minibatch objective)."""
        if len(x) != num_train:
            raise ValueError(
                f"the exact GP needs the whole training set in each batch, got {len(x)} of {num_train} points: "
                "set train.batch_size >= the number of training points"
            )
        return -self.log_marginal_likelihood(x.double(), y.double()[:, 0]) / num_train

    def condition_on(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """Store the training data (x [N, D], y [N, 1]) that the posterior conditions on, in float64."""
        self.x_train, self.y_train = x.detach().double(), y.detach().double()[:, 0]

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """One type-II maximum-likelihood step on the whole training set (x, y), then condition on it."""
        value = super().training_step(x, y, num_train, optimizer)
        self.condition_on(x, y)
        return value

    def posterior(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean [N] and covariance [N, N] of the latent f at inputs x [N, D] (float64) given the stored
        training data (R&W eqs. 2.25-2.26); the prior N(0, K(x, x)) when there is none."""
        prior_covariance = self.kernel(x, x)
        if len(self.x_train) == 0:
            return x.new_zeros(len(x)), prior_covariance
        cholesky = self._training_cholesky(self.x_train)
        cross = self.kernel(self.x_train, x)
        mean = cross.T @ torch.cholesky_solve(self.y_train[:, None], cholesky)[:, 0]
        whitened = torch.linalg.solve_triangular(cholesky, cross, upper=False)
        return mean, prior_covariance - whitened.T @ whitened

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """`eval_samples` joint draws of the latent f from the posterior at x: [S, N, 1] in x's dtype."""
        mean, covariance = self.posterior(x.double())
        identity = torch.eye(len(x), dtype=mean.dtype, device=mean.device)
        cholesky = torch.linalg.cholesky(covariance + SAMPLING_JITTER * self.log_signal_variance.exp() * identity)
        noise = torch.randn(len(x), self.eval_samples, dtype=mean.dtype, device=mean.device)
        return (mean[:, None] + cholesky @ noise).T[..., None].to(x.dtype)

    def noise_variance(self) -> float:
        """The learned noise variance of y = f + N(0, noise_variance) (R&W eq. 2.20's sigma_n^2)."""
        return float(self.log_noise_variance.detach().exp())

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        return {
            "lengthscale": float(self.log_lengthscale.exp()),
            "signal_std": float(self.log_signal_variance.exp().sqrt()),
            "noise_std": float(self.log_noise_variance.exp().sqrt()),
        }

    def prepare_resume(self, state: dict) -> None:
        """Size the training-data buffers like the checkpoint's, so that its state_dict loads."""
        self.x_train = torch.zeros_like(state["x_train"])
        self.y_train = torch.zeros_like(state["y_train"])


class DeepEnsemble(LossMinimiser, FixedArchitectureMethod):
    """K independently initialised MLPs (Lakshminarayanan et al. 2017) held as stacked weights, each trained on its
    own loss and the losses summed: member k's gradient is that of its own loss, so with Adam's per-parameter
    updates each member trains exactly as it would alone.

    Three noise models. Without variance heads or learned noise (SDE-BNN Fig. 10) a member outputs a mean and trains
    on its squared error; the predictive is the members' spread. With `variance_heads` (Lakshminarayanan et al. 2017
    §2.2.1, their UCI benchmark) a member outputs a mean mu_k(x) and a variance sigma_k^2(x)
    (bnnrepro.inference.heteroscedastic_gaussian) and trains on the Gaussian negative log-likelihood; the predictive
    is the uniform mixture over members, moment-matched (their §2.4): `predict`'s spread plus `noise_variance_at`.
    With `learned_noise` the members share one homoscedastic Gaussian noise N(0, s^2), its log s learned with the
    weights, and each trains on its Gaussian NLL under it: the other methods' learned constant noise
    (`RegressionLikelihood`), so that an ensemble compares with them on the noise model too."""

    INITIAL_NOISE_SCALE = 1.0
    """The learned noise's initial s: that of the other methods' learned noise on standardised targets."""

    def __init__(
        self,
        num_features: int,
        num_members: int,
        hidden_widths: Sequence[int],
        activation: str,
        variance_heads: bool = False,
        learned_noise: bool = False,
    ):
        super().__init__()
        if variance_heads and learned_noise:
            raise ValueError(
                "method.variance_heads (an input-dependent noise) and method.learned_noise (a constant one) are two "
                "noise models: set at most one true"
            )
        outputs = OUTPUTS_PER_TARGET if variance_heads else 1
        layers = [uniform_linear_init(num_members, *size) for size in layer_sizes(num_features, hidden_widths, outputs)]
        self.weights = nn.ParameterList(weight for weight, _ in layers)
        self.biases = nn.ParameterList(bias for _, bias in layers)
        self.activation, self.variance_heads = ACTIVATIONS[activation], variance_heads
        self.noise = RegressionLikelihood(self.INITIAL_NOISE_SCALE, "gaussian") if learned_noise else None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Member means [K, B, 1] for inputs x [B, D], and their variances [K, B, 1] (None without variance heads)."""
        outputs = batched_mlp(x.expand(len(self.weights[0]), *x.shape), self.weights, self.biases, self.activation)
        return mean_and_variance(outputs) if self.variance_heads else (outputs, None)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        means, variances = self(x)
        if variances is not None:  # per member and datum, without log(2 pi)/2
            return gaussian_nll_without_constant(means, variances, y).mean(dim=(1, 2)).sum()
        if self.noise is not None:
            return -self.noise(means, y).mean(1).sum()
        return (means - y).pow(2).mean(dim=(1, 2)).sum()

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The K member means [K, N, 1]."""
        return self(x)[0]

    def noise_variance(self) -> float:
        """The learned noise's s^2; else 0: without variance heads the predictive's spread is the members'
        disagreement alone, with them it adds `noise_variance_at`."""
        return self.noise.variance if self.noise is not None else 0.0

    @torch.no_grad()
    def noise_variance_at(self, x: torch.Tensor) -> torch.Tensor | float:
        """The mean over members of their variances at x [N, 1]; without variance heads `noise_variance()`."""
        variances = self(x)[1]
        return self.noise_variance() if variances is None else variances.mean(0)

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        """The learned noise's scale s (nothing without it)."""
        return {} if self.noise is None else {"likelihood_scale": float(self.noise.log_scale.exp())}


class MeanFieldBNN(LossMinimiser, FixedArchitectureMethod):
    """Bayes by backprop (Blundell et al. 2015): a fully factorised Gaussian q(w) over all weights and biases of
    an MLP, prior N(0, prior_variance) per weight, a Gaussian likelihood, and the per-datum negative ELBO
    (-N/B sum_b E_q log p(y_b | x_b, w) + KL(q || p)) / N with S reparameterised weight samples per step and the
    closed-form KL. Every sample holds one weight set for the whole batch, so predictions are function draws.

    `likelihood`: a constant noise (`RegressionLikelihood`); None: a heteroscedastic head, the output layer giving a
    mean mu_w(x) and a variance sigma_w^2(x) per target (bnnrepro.inference.heteroscedastic_gaussian), the ELBO's
    data term log N(y | mu_w(x), sigma_w^2(x)); the predictive is the mixture over weight samples, moment-matched
    (Lakshminarayanan et al. 2017 §2.4): `predict`'s spread of mu_w plus `noise_variance_at`."""

    def __init__(
        self,
        num_features: int,
        hidden_widths: Sequence[int],
        activation: str,
        prior_variance: float,
        initial_log_std: float,
        likelihood: RegressionLikelihood | None,
        num_samples: int,
        eval_samples: int,
    ):
        super().__init__()
        outputs = 1 if likelihood is not None else OUTPUTS_PER_TARGET
        layers = [uniform_linear_init(1, *size) for size in layer_sizes(num_features, hidden_widths, outputs)]
        self.weight_means = nn.ParameterList(weight for weight, _ in layers)
        self.bias_means = nn.ParameterList(bias for _, bias in layers)
        self.weight_log_stds = nn.ParameterList(torch.full_like(weight, initial_log_std) for weight, _ in layers)
        self.bias_log_stds = nn.ParameterList(torch.full_like(bias, initial_log_std) for _, bias in layers)
        self.activation, self.prior_variance, self.likelihood = ACTIVATIONS[activation], prior_variance, likelihood
        self.num_samples, self.eval_samples = num_samples, eval_samples

    def kl(self) -> torch.Tensor:
        """KL(q(w) || p(w)) over all weights and biases."""
        means = [*self.weight_means, *self.bias_means]
        log_stds = [*self.weight_log_stds, *self.bias_log_stds]
        return sum(gaussian_kl(m, s, self.prior_variance) for m, s in zip(means, log_stds, strict=True))

    def forward(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        """Outputs [S, B, 1] (with the heteroscedastic head [S, B, 2]) under S weight samples w = mean + std * eps
        (plain reparameterisation)."""

        def draw(means: nn.ParameterList, log_stds: nn.ParameterList) -> list[torch.Tensor]:
            return [gaussian_sample(m, s, (num_samples, *m.shape[1:])) for m, s in zip(means, log_stds, strict=True)]

        weights = draw(self.weight_means, self.weight_log_stds)
        biases = draw(self.bias_means, self.bias_log_stds)
        return batched_mlp(x.expand(num_samples, *x.shape), weights, biases, self.activation)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        outputs = self(x, self.num_samples)
        if self.likelihood is None:
            log_likelihood = heteroscedastic_log_likelihood(outputs, y)
        else:
            log_likelihood = self.likelihood(outputs, y)
        return negative_elbo(log_likelihood, self.kl(), num_train)

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The network's mean function under `eval_samples` weight samples from q: [S, N, 1]."""
        outputs = self(x, self.eval_samples)
        return outputs if self.likelihood is not None else mean_and_variance(outputs)[0]

    def noise_variance(self) -> float:
        """The Gaussian likelihood's scale^2; 0 with the heteroscedastic head, whose noise is `noise_variance_at`."""
        return self.likelihood.variance if self.likelihood is not None else 0.0

    @torch.no_grad()
    def noise_variance_at(self, x: torch.Tensor) -> torch.Tensor | float:
        """With the heteroscedastic head the mean of sigma_w^2(x) [N, 1] over `eval_samples` weight samples from q
        (drawn apart from `predict`'s); else the constant `noise_variance()`."""
        if self.likelihood is not None:
            return self.noise_variance()
        return mean_and_variance(self(x, self.eval_samples))[1].mean(0)

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        if self.likelihood is None:
            return {"kl": float(self.kl())}
        return {"kl": float(self.kl()), "likelihood_scale": float(self.likelihood.log_scale.exp())}


def build(run_cfg: DictConfig, spec: DataSpec) -> FixedArchitectureMethod:
    """The GP, deep ensemble or MFVI BNN named by the Hydra `method` group; regression only."""
    cfg = run_cfg.method
    if cfg.name == "gp":
        return GaussianProcessRegression(
            spec.num_features, cfg.lengthscale, cfg.signal_variance, cfg.noise_variance, cfg.eval_samples
        )
    if cfg.name == "deep_ensemble":
        return DeepEnsemble(
            spec.num_features, cfg.num_members, cfg.hidden_widths, cfg.activation, cfg.variance_heads, cfg.learned_noise
        )
    if cfg.name == "mfvi":
        likelihood = None
        if not cfg.heteroscedastic:
            likelihood = RegressionLikelihood(cfg.likelihood.scale, "gaussian", cfg.likelihood.learn_scale)
        return MeanFieldBNN(
            spec.num_features,
            cfg.hidden_widths,
            cfg.activation,
            cfg.prior_variance,
            cfg.initial_log_std,
            likelihood,
            cfg.num_samples,
            cfg.eval_samples,
        )
    raise ValueError(f"unknown toy-regression method {cfg.name!r}")

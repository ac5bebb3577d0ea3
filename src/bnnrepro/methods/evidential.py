"""Evidential networks of thesis ch. 5 (Haußmann 2021; Haußmann et al. 2020a): a Dirichlet over the class
probabilities, lambda_n ~ Dir(alpha_n(x_n)), y_n ~ Cat(lambda_n).

- `bedl`: Bayesian evidential deep learning. Local weights w_n ~ N(mu, diag sigma^2) per data point (the BLNN,
  eq. 5.4) are integrated out by moment matching (`MomentNetwork` with CLT ReLU moments, §5.1.1), alpha = exp(f^L)
  (footnote 2), so alpha_c / alpha_0 = softmax(f^L)_c, and theta = (mu, sigma^2) is fitted by type-II maximum
  likelihood of the marginal (eqs. 5.7-5.8, its Gaussian expectation over f^L by `num_samples` draws). Objectives
  (config `objective`, §5.3-5.4):
  `type2_ml` (BEDL)       -(1/N) sum_n log p(y_n | x_n);
  `pac` (BEDL-PAC)        that + sqrt((KL(Q || P) - log delta + log B) / N), eq. (5.10);
  `hyper` (BEDL-Hyper)    that - log p(theta) / N with p(mu_i) = N(0, 1/alpha_0), p(sigma_i^2) = InvGamma(a_0, b_0).
  Regression (§5.4): two outputs (f_1, f_2), lambda ~ N(f_1, exp(f_2)) and y ~ N(lambda, 1/beta) with beta fixed, so
  p(y_n | x_n) = N(y_n | m_1, 1/beta + s_1^2 + exp(m_2 + s_2^2 / 2)), sampling-free.
- `edl`: evidential deep learning (Sensoy et al. 2018), the deterministic baseline: alpha = ReLU(f) + 1, the
  expected Brier score under Dir(alpha) plus the annealed KL(Dir(alpha~) || Dir(1)) with
  alpha~ = y + (1 - y) alpha (§5.2.1).
"""

from __future__ import annotations

import math

import torch
from omegaconf import DictConfig
from torch.nn import functional as F

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import dirichlet_kl_to_uniform, normal_kl
from bnnrepro.inference import moment_likelihoods as likelihoods
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.moment_layers import (
    MomentNetwork,
    PlainNetwork,
    activation_moments,
    in_chunks,
    network_shapes,
    predictive_in_chunks,
)

METHODS = ("bedl", "edl")
"""The Hydra method names (config/train/method/*.yaml `name`) this module builds; BEDL-PAC and BEDL-Hyper are
`bedl` with another `objective` (config/train/method/bedl_pac.yaml, bedl_hyper.yaml)."""
TASKS = {"bedl": ("classification", "regression"), "edl": ("classification",)}
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {
    "regression": "EDL's Dirichlet evidence is over classes (Sensoy et al. 2018); BEDL (thesis ch. 5) takes regression"
}
"""Why its methods do not take a task, for the error a study that pairs them gets."""

OBJECTIVES = ("type2_ml", "pac", "hyper")
LOG_BOUND_RULES = ("thesis", "authors_code")


def log_bound_constant(rule: str, task: str, num_train: int, noise_precision: float) -> float:
    """log max B of eq. (5.9)'s bound for N training points. `thesis` (§5.3): log B <= N for a likelihood in
    [0, 1] (classification) and N beta / (2 pi) for a Gaussian of precision beta (regression); `authors_code`:
    log N, what the authors' BEDL code adds."""
    if rule == "authors_code":
        return math.log(num_train)
    return float(num_train) if task == "classification" else num_train * noise_precision / (2 * math.pi)


class BayesianEvidential(LossMinimiser, FixedArchitectureMethod):
    """BEDL, BEDL-PAC and BEDL-Hyper on a `MomentNetwork` (see the module docstring)."""

    def __init__(
        self,
        network: MomentNetwork,
        task: str,
        objective: str,
        num_samples: int,
        eval_samples: int,
        noise_precision: float,
        delta: float,
        log_bound_rule: str,
        prior_precision: float,
        hyperprior: DictConfig | None,
    ):
        super().__init__()
        if objective not in OBJECTIVES:
            raise ValueError(f"method.objective must be one of {OBJECTIVES}, got {objective!r}")
        if not 0 < delta <= 1:
            raise ValueError(f"method.delta is the bound's confidence parameter in (0, 1], got {delta}")
        if log_bound_rule not in LOG_BOUND_RULES:
            raise ValueError(f"method.log_bound_rule must be one of {LOG_BOUND_RULES}, got {log_bound_rule!r}")
        self.network, self.task, self.objective = network, task, objective
        self.num_samples, self.eval_samples, self.noise_precision = num_samples, eval_samples, noise_precision
        self.delta, self.log_bound_rule, self.prior_precision = delta, log_bound_rule, prior_precision
        self.hyperprior = hyperprior

    def _regression_marginal(self, outputs: Moments) -> Moments:
        """lambda_n ~ N(m_1, s_1^2 + exp(m_2 + s_2^2 / 2)) (§5.4's second moment matching)."""
        mean, var = outputs
        return Moments(mean[:, :1], var[:, :1] + torch.exp(mean[:, 1:] + var[:, 1:] / 2))

    def log_marginal_and_kl(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """log p(y_n | x_n) [B] and the per-point KL(Q_n || P_n) [B] of the PAC term (§5.3, §5.4): against
        Dir(1) by the same draws of f^L (classification), against N(0, 1/alpha) in closed form (regression)."""
        outputs = self.network(x)
        if self.task == "regression":
            latent = self._regression_marginal(outputs)
            log_marginal = likelihoods.gaussian_log_marginal(y, latent.mean, latent.var + 1 / self.noise_precision)
            prior_std = torch.tensor(self.prior_precision, dtype=x.dtype, device=x.device).rsqrt()
            kl = normal_kl(latent.mean, latent.var.sqrt(), torch.zeros_like(latent.mean), prior_std).sum(-1)
            return log_marginal, kl
        logits = likelihoods.logit_samples(*outputs, self.num_samples)
        return likelihoods.log_mean_softmax(y, logits), dirichlet_kl_to_uniform(logits.exp()).mean(0)

    def log_hyperprior(self) -> torch.Tensor:
        """log p(theta) = sum_i log N(mu_i | 0, 1/alpha_0) + log InvGamma(sigma_i^2 | a_0, b_0) (§5.3.1)."""
        alpha_0, a_0, b_0 = self.hyperprior.alpha_0, self.hyperprior.a_0, self.hyperprior.b_0
        total = torch.zeros(())
        for mean, log_variance in self.network.weight_pairs():
            log_normal = 0.5 * (math.log(alpha_0 / (2 * math.pi)) - alpha_0 * mean.square())
            log_inverse_gamma = (
                a_0 * math.log(b_0) - math.lgamma(a_0) - (a_0 + 1) * log_variance - b_0 / log_variance.exp()
            )
            total = total + (log_normal + log_inverse_gamma).sum()
        return total

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        log_marginal, kl = self.log_marginal_and_kl(x, y)
        loss = -log_marginal.mean()
        if self.objective == "pac":
            # KL(Q || P) of the product over the N training points, divided by N: the batch mean of the points' KLs
            log_b = log_bound_constant(self.log_bound_rule, self.task, num_train, self.noise_precision)
            loss = loss + torch.sqrt(kl.mean() + (log_b - math.log(self.delta)) / num_train)
        elif self.objective == "hyper":
            loss = loss - self.log_hyperprior().to(loss) / num_train
        return loss

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Classification: the mean of softmax(f^L) over `eval_samples` draws [N, C]; regression: two points
        carrying N(m_1, s_1^2 + exp(m_2 + s_2^2 / 2)) exactly, the observation noise 1/beta beside them."""
        return predictive_in_chunks(self._predict_chunk, x, self.task)

    def _predict_chunk(self, x: torch.Tensor) -> torch.Tensor:
        outputs = self.network(x)
        if self.task == "regression":
            return likelihoods.two_point_samples(*self._regression_marginal(outputs))
        return likelihoods.sampled_predictive(*outputs, self.eval_samples)

    def noise_variance(self) -> float:
        return 1.0 / self.noise_precision if self.task == "regression" else 0.0


class EvidentialClassifier(LossMinimiser, FixedArchitectureMethod):
    """EDL (Sensoy et al. 2018) on a `PlainNetwork`: alpha = ReLU(f) + 1, per datum
    sum_c (y_c - p_c)^2 + p_c (1 - p_c) / (S + 1) with p = alpha / S, S = sum_c alpha_c (the expected squared error
    under Dir(alpha)), plus min(1, t / annealing_epochs) KL(Dir(alpha~) || Dir(1)) after t finished epochs."""

    def __init__(self, network: PlainNetwork, num_classes: int, annealing_epochs: int):
        super().__init__()
        self.network, self.num_classes, self.annealing_epochs = network, num_classes, annealing_epochs
        self.register_buffer("epochs_done", torch.zeros((), dtype=torch.long))

    def evidence(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.network(x)) + 1

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        alpha = self.evidence(x)
        strength = alpha.sum(-1, keepdim=True)
        p = alpha / strength
        one_hot = F.one_hot(y, self.num_classes).to(alpha)
        brier = ((one_hot - p).square() + p * (1 - p) / (strength + 1)).sum(-1)
        annealing = min(1.0, float(self.epochs_done) / self.annealing_epochs)
        kl = dirichlet_kl_to_uniform(one_hot + (1 - one_hot) * alpha)
        return (brier + annealing * kl).mean()

    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Count the epoch for the KL annealing."""
        self.epochs_done += 1

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The Dirichlet's mean alpha / S [N, C]."""
        return in_chunks(lambda chunk: F.normalize(self.evidence(chunk), p=1, dim=-1), x)

    def noise_variance(self) -> float:
        return 0.0


def build(run_cfg: DictConfig, spec: DataSpec) -> BayesianEvidential | EvidentialClassifier:
    """BEDL (with its objective) or EDL from the Hydra `method` group."""
    cfg = run_cfg.method
    if cfg.name == "edl":
        network = PlainNetwork(network_shapes(cfg, spec.input_shape, spec.num_classes))
        return EvidentialClassifier(network, spec.num_classes, cfg.annealing_epochs)
    num_outputs = spec.num_classes if spec.task == "classification" else 2
    network = MomentNetwork(network_shapes(cfg, spec.input_shape, num_outputs), activation_moments("relu"))
    return BayesianEvidential(
        network,
        spec.task,
        cfg.objective,
        cfg.num_samples,
        cfg.eval_samples,
        cfg.noise_precision,
        cfg.delta,
        cfg.log_bound_rule,
        cfg.prior_precision,
        cfg.hyperprior,
    )

"""What the particle methods (repulsive ensembles) and HMC share (D'Angelo & Fortuin 2021): `WeightSamples`, a method
whose state is a set of samples of a target, and `build_target`, a run's target from its config."""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.inference.posterior_targets import (
    SAMPLING_DENSITIES,
    GaussianLogLikelihood,
    NetworkPosterior,
    SamplingTarget,
    Target,
    categorical_log_likelihood,
    member_prior_variances,
)
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.models.posterior_networks import posterior_network


def build_target(run_cfg: DictConfig, spec: DataSpec, splits: Splits | None, function_space: bool = False) -> Target:
    """The target of a run: its dataset's density for a sampling dataset, otherwise the posterior of the method
    config's network (`posterior_network`) under prior_variance (one per member with member_prior_variances), and
    likelihood_std for regression, the dataset's entropy_grid for 2D classification. `function_space`: the
    network ends in a softmax when a function-space rule repels class probabilities (function_values)."""
    cfg = run_cfg.method
    if spec.task == "sampling":
        if splits is None:
            raise ValueError(
                f"method {cfg.name!r} on a sampling dataset starts from its samples: pass the run's splits "
                "(build_method(cfg, spec, splits))"
            )
        start, reference = (torch.as_tensor(splits.x(s)) for s in ("train", "test"))
        return SamplingTarget(SAMPLING_DENSITIES[run_cfg.dataset.name], start, reference)
    prior_variance = cfg.prior_variance
    if cfg.get("member_prior_variances"):  # a hyper-deep ensemble, on either task
        prior_variance = member_prior_variances(cfg.member_prior_variances, cfg.num_particles)
    if spec.task == "regression":
        network = posterior_network(cfg, spec, 1)
        return NetworkPosterior(network, GaussianLogLikelihood(cfg.likelihood_std), prior_variance, spec.task)
    if spec.task != "classification":
        raise ValueError(f"method {cfg.name!r} supports regression, classification and sampling, got {spec.task!r}")
    probabilities = function_space and cfg.function_values == "probabilities"
    network = posterior_network(cfg, spec, spec.num_classes)
    if probabilities:
        network = nn.Sequential(network, nn.Softmax(-1))
    log_likelihood = categorical_log_likelihood(probabilities)
    grid = run_cfg.dataset.get("entropy_grid", 0)
    return NetworkPosterior(network, log_likelihood, prior_variance, spec.task, probabilities, grid)


class WeightSamples(FixedArchitectureMethod):
    """A method whose state is a set of samples [n, d] of a target (the particles of an ensemble, or HMC draws):
    predictions and diagnostics come from `weights()`."""

    def __init__(self, target: Target):
        super().__init__()
        self.target = target

    def weights(self) -> torch.Tensor:
        raise NotImplementedError

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.target.predict(self.weights().detach(), x)

    def noise_variance(self) -> float:
        """The target's: its Gaussian likelihood's std^2 for regression, 0 otherwise."""
        return self.target.noise_variance()

    @torch.no_grad()
    def member_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Classification: each sample's class probabilities on x [n, N, C]."""
        return self.target.member_probabilities(self.weights().detach(), x)

    def diagnostics(self) -> dict[str, float]:
        return self.target.diagnostics(self.weights())

    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Nothing to refit between epochs: the samples are the whole state."""

    def fit_posterior(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """The samples, which the steps move, are the whole posterior: nothing to fit after them."""

"""Helpers of the Bayesian neural SDE tests (tests/test_bnsde*.py): the method `bnsde` built from its config, a short
Lorenz series (a module-scoped fixture, which each test module makes its own), linear drifts without prior
knowledge, the weight KL by torch.distributions, and a module's parameters."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from bnnrepro.data import dynamics
from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.methods.bnsde import BNSDEMethod, build
from bnnrepro.models.bayesian_drift import BayesianDrift
from bnnrepro.models.prior_knowledge import KnowledgeDrift
from bnnrepro.train_configs import compose_config

STATE = {"lorenz": 3, "lotka_volterra": 2}
SMALL_DRIFT = "method.drift.widths=[8]"


@functools.cache
def method_config(dataset: str, overrides: tuple[str, ...]):
    return compose_config(["method=bnsde", f"dataset={dataset}", "dataset.path=unused", "run_dir=unused", *overrides])


def make_method(*overrides: str, dataset: str = "lorenz", length: int = 24, seed: int = 0) -> BNSDEMethod:
    """The method `bnsde` on windows of `length` observations of `dataset`, its weights drawn after
    torch.manual_seed(seed)."""
    spec = DataSpec("forecasting", length, 0, (length, STATE[dataset] + 1))
    torch.manual_seed(seed)
    return build(method_config(dataset, (SMALL_DRIFT, *overrides)), spec)


@pytest.fixture(scope="module")
def lorenz() -> Splits:
    """A short stochastic Lorenz series (200 observations, dt = 0.01): four training windows of 24."""
    return dynamics.generate_lorenz(0, n_steps=20_000, n_train=4, n_test=2, test_start=120)


def linear_drift(weight: list[list[float]], bias: list[float]) -> BayesianDrift:
    """f(h) = W h + b: a BayesianDrift with no hidden layer, its posterior means set to (W, b), in float64."""
    drift = BayesianDrift(len(bias), [], "tanh").double()
    with torch.no_grad():
        drift.layers[0].weight_mean.copy_(torch.tensor(weight, dtype=torch.float64))
        drift.layers[0].bias_mean.copy_(torch.tensor(bias, dtype=torch.float64))
    return drift.requires_grad_(False)


def no_knowledge(state_size: int) -> KnowledgeDrift:
    return KnowledgeDrift(None, [0.0] * state_size, state_size, 0.0, 0).double()


def weight_kl_by_hand(drift: BayesianDrift, alpha: float) -> float:
    """KL(N(mu, sigma^2) || N(0, 1/alpha)) summed over every weight and bias of every layer, by torch.distributions."""
    prior_std = 1.0 / math.sqrt(alpha)
    total = 0.0
    for layer in drift.layers:
        for mean, log_variance in (
            (layer.weight_mean, layer.weight_log_variance),
            (layer.bias_mean, layer.bias_log_variance),
        ):
            q = torch.distributions.Normal(mean.detach().double(), log_variance.detach().double().exp().sqrt())
            total += float(torch.distributions.kl_divergence(q, torch.distributions.Normal(0.0, prior_std)).sum())
    return total


def parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}

"""The closed forms of bnnrepro.distributions against torch.distributions on the same inputs."""

import math

import pytest
import torch
from torch.distributions import Categorical, Normal, kl_divergence

from bnnrepro.distributions import (
    RegressionLikelihood,
    categorical_log_likelihood,
    gaussian_kl,
    gaussian_sample,
    normal_kl,
    probabilities_log_likelihood,
    unit_variance_gaussian_kl,
)
from bnnrepro.inference import posterior_targets


def test_gaussian_kl_closed_form():
    torch.manual_seed(0)
    mean, log_std, prior_variance = torch.randn(4, 3), 0.5 * torch.randn(4, 3), 0.49
    expected = kl_divergence(Normal(mean, log_std.exp()), Normal(0.0, prior_variance**0.5)).sum()
    torch.testing.assert_close(gaussian_kl(mean, log_std, prior_variance), expected)
    torch.testing.assert_close(gaussian_kl(mean, log_std, prior_variance, std=log_std.exp()), expected)


def test_gaussian_kl_vanishes_at_the_prior():
    prior_variance = 0.3
    log_std = torch.full((5,), 0.5 * torch.tensor(prior_variance).log().item())
    assert gaussian_kl(torch.zeros(5), log_std, prior_variance).item() == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("prior_variance", [0.25, 1.0, 9.0])
def test_unit_variance_gaussian_kl_matches_torch(prior_variance):
    torch.manual_seed(0)
    means = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2) * 3]
    prior = Normal(0.0, prior_variance**0.5)
    expected = sum(kl_divergence(Normal(nu, torch.ones_like(nu)), prior).sum() for nu in means)
    torch.testing.assert_close(unit_variance_gaussian_kl(means, prior_variance), expected, rtol=1e-5, atol=1e-5)


def test_unit_variance_gaussian_kl_empty_and_standard_prior():
    assert float(unit_variance_gaussian_kl([], 1.0)) == 0.0
    assert float(unit_variance_gaussian_kl([], 4.0)) == 0.0
    nu = torch.tensor([1.0, -2.0, 0.5])
    assert float(unit_variance_gaussian_kl([nu], 1.0)) == pytest.approx(0.5 * (1 + 4 + 0.25))  # ||nu||^2 / 2


def test_normal_kl_elementwise():
    torch.manual_seed(0)
    mean_p, mean_q = torch.randn(6), torch.randn(6)
    std_p, std_q = torch.rand(6) + 0.1, torch.rand(6) + 0.1
    expected = kl_divergence(Normal(mean_p, std_p), Normal(mean_q, std_q))
    torch.testing.assert_close(normal_kl(mean_p, std_p, mean_q, std_q), expected)


def test_categorical_log_likelihood_of_sampled_logits():
    """Logits [S, B, K] of S samples share the targets [B]."""
    torch.manual_seed(0)
    logits, targets = 3 * torch.randn(4, 6, 5), torch.randint(0, 5, (6,))
    expected = Categorical(logits=logits).log_prob(targets)
    assert categorical_log_likelihood(logits, targets).shape == (4, 6)
    torch.testing.assert_close(categorical_log_likelihood(logits, targets), expected)


def test_probabilities_log_likelihood_is_finite_at_zero():
    torch.manual_seed(0)
    probabilities, targets = torch.randn(6, 5).softmax(-1), torch.randint(0, 5, (6,))
    expected = Categorical(probs=probabilities).log_prob(targets)
    torch.testing.assert_close(probabilities_log_likelihood(probabilities, targets), expected)
    vanished = torch.tensor([[0.0, 1.0]])
    assert probabilities_log_likelihood(vanished, torch.tensor([0])).item() == pytest.approx(-87.3, abs=0.1)


def test_posterior_targets_probabilities_likelihood_is_this_one():
    """inference/posterior_targets.categorical_log_likelihood(True) computes, bit for bit,
    probabilities_log_likelihood: it may replace it."""
    generator = torch.Generator().manual_seed(3)
    theirs = posterior_targets.categorical_log_likelihood(True)
    for dtype in (torch.float32, torch.float64):
        outputs = (4 * torch.randn(200, 10, generator=generator, dtype=dtype)).softmax(-1)
        outputs = outputs * (torch.rand(200, 10, generator=generator, dtype=dtype) > 0.1)
        targets = torch.randint(0, 10, (200,), generator=generator)
        torch.testing.assert_close(
            probabilities_log_likelihood(outputs, targets), theirs(outputs, targets), rtol=0, atol=0
        )


def test_posterior_targets_logits_likelihood_agrees_up_to_rounding():
    """inference/posterior_targets.categorical_log_likelihood(False) normalises by log_softmax, this module by
    logits - logsumexp(logits) (torch's Categorical): the same value up to float rounding, not bit for bit."""
    generator = torch.Generator().manual_seed(3)
    logits, targets = 4 * torch.randn(200, 10, generator=generator), torch.randint(0, 10, (200,), generator=generator)
    theirs = posterior_targets.categorical_log_likelihood(False)(logits, targets)
    torch.testing.assert_close(categorical_log_likelihood(logits, targets), theirs)


def test_gaussian_sample_is_the_reparameterised_draw():
    mean, log_std = torch.randn(3), torch.randn(3)
    torch.manual_seed(4)
    draws = gaussian_sample(mean, log_std, (1000, 3))
    torch.manual_seed(4)
    torch.testing.assert_close(draws, mean + log_std.exp() * torch.randn(1000, 3), rtol=0, atol=0)
    torch.testing.assert_close(draws.mean(0), mean, rtol=0, atol=0.2 * log_std.exp().max().item())


@pytest.mark.parametrize("family", ["gaussian", "laplace", "cauchy"])
def test_a_non_finite_prediction_gives_a_non_finite_log_likelihood_not_an_argument_error(family: str) -> None:
    """The training step's finite check names the divergence (torch's argument check would raise a ValueError that
    prints the whole tensor)."""
    likelihood = RegressionLikelihood(0.1, family)
    value = likelihood(torch.tensor([[[math.nan], [0.0]]]), torch.zeros(2, 1))
    assert value.shape == (1, 2) and value[0, 0].isnan() and value[0, 1].isfinite()

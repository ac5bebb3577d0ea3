"""The UCI benchmark's two noise tracks: the shared heteroscedastic Gaussian
(bnnrepro.inference.heteroscedastic_gaussian) against torch.distributions and the mixture's closed form; MC dropout's
and MFVI's variance heads learn a noise that grows with |x| where their constant noise cannot (the negative control);
the deep ensemble's shared learned noise finds a constant noise; without a head MC dropout's loss is the
constant-noise formula, exactly."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal

from bnnrepro.data.spec import DataSpec
from bnnrepro.inference.heteroscedastic_gaussian import (
    MINIMUM_VARIANCE,
    gaussian_log_likelihood,
    gaussian_nll_without_constant,
    heteroscedastic_log_likelihood,
    mean_and_variance,
    moment_matched_mixture,
)
from bnnrepro.methods import build_method
from bnnrepro.methods.protocol import observation_variance
from bnnrepro.metrics import gaussian_predictive_nll
from bnnrepro.optim import Adam
from bnnrepro.train import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SPEC = DataSpec("regression", 1, 0, (1,))
HEADS = {
    "mc_dropout": ["method=mc_dropout", "method.heteroscedastic=true", "method.dropout=0.05", "method.num_samples=2",
                   "method.eval_samples=20"],
    "mfvi": ["method=mfvi", "method.heteroscedastic=true", "method.hidden_widths=[50]", "method.num_samples=2",
             "method.eval_samples=20"],
}  # fmt: skip
CONSTANT_NOISE = {
    "mc_dropout": ["method.heteroscedastic=false"],
    "mfvi": ["method.heteroscedastic=false", "method.likelihood.learn_scale=true"],
}


def method(*overrides: str):
    cfg = compose_config(["dataset=uci_boston", "run_dir=unused", "scale=smoke", *overrides])
    torch.manual_seed(0)
    return build_method(cfg, SPEC)


def train(model, x: torch.Tensor, y: torch.Tensor, steps: int) -> None:
    optimizer = Adam(model.parameter_groups(0.01, 1.0))
    for _ in range(steps):
        model.training_step(x, y, len(x), optimizer)


def test_the_log_likelihood_is_torchs_normal_on_the_same_tensors() -> None:
    generator = torch.Generator().manual_seed(0)
    outputs, targets = torch.randn(3, 5, 4, generator=generator, dtype=torch.float64), torch.randn(5, 2)
    means, variances = mean_and_variance(outputs)
    assert means.shape == variances.shape == (3, 5, 2)
    torch.testing.assert_close(means, outputs[..., :2])
    torch.testing.assert_close(variances, torch.nn.functional.softplus(outputs[..., 2:]) + MINIMUM_VARIANCE)
    reference = Normal(means, variances.sqrt()).log_prob(targets.double())
    torch.testing.assert_close(gaussian_log_likelihood(means, variances, targets.double()), reference)
    torch.testing.assert_close(gaussian_nll_without_constant(means, variances, targets.double()),
                               -reference - 0.5 * math.log(2 * math.pi))  # fmt: skip
    torch.testing.assert_close(heteroscedastic_log_likelihood(outputs, targets.double()), reference.sum(-1))
    with pytest.raises(ValueError, match="a mean and a variance per target: got 3 outputs"):
        mean_and_variance(outputs[..., :3])


def test_the_mixture_has_the_closed_form_moments_of_two_gaussians() -> None:
    """An equal mixture of N(m1, v1) and N(m2, v2): mean (m1 + m2) / 2, variance (v1 + v2) / 2 + (m1 - m2)^2 / 4;
    and the evaluation's predictive of `predict`'s means plus `noise_variance_at`'s mean variance is that mixture."""
    means, variances = torch.tensor([[1.0], [4.0]], dtype=torch.float64), torch.tensor([[0.5], [2.0]]).double()
    mean, variance = moment_matched_mixture(means, variances)
    torch.testing.assert_close(mean, torch.tensor([2.5], dtype=torch.float64))
    torch.testing.assert_close(variance, torch.tensor([1.25 + 2.25], dtype=torch.float64))
    y = torch.tensor([[0.3]], dtype=torch.float64)
    expected = -Normal(mean, variance.sqrt()).log_prob(y).mean()
    got = gaussian_predictive_nll(means[:, None], y, variances.mean(0)[None])
    assert got == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("name", HEADS)
def test_with_a_head_the_evaluations_predictive_is_the_mixture_of_the_draws(name: str) -> None:
    """`predict` gives each draw's mean [S, N, 1], `noise_variance_at` the mean of the variances of its own draws
    (the evaluation calls it first): replaying the generator, the evaluation's NLL is that of the block's mixture."""
    model = method(*HEADS[name])
    x, y = torch.linspace(-2, 2, 11)[:, None], torch.randn(11, 1)
    draw = model._draws if name == "mc_dropout" else lambda inputs, samples: model(inputs, samples)
    torch.manual_seed(5)
    noise = observation_variance(model, x)
    samples = model.predict(x)
    assert samples.shape == (20, 11, 1) and noise.shape == (11, 1) and model.noise_variance() == 0.0
    got = gaussian_predictive_nll(samples, y, noise)
    torch.manual_seed(5)
    with torch.no_grad():
        variances = mean_and_variance(draw(x, 20))[1]
        means = mean_and_variance(draw(x, 20))[0]
    mean, variance = moment_matched_mixture(means.double(), variances.double())
    assert got == pytest.approx(float(-Normal(mean, variance.sqrt()).log_prob(y.double()).mean()), rel=1e-6)


@pytest.mark.parametrize("name", HEADS)
def test_a_head_learns_a_noise_that_grows_with_x_and_the_constant_noise_cannot(name: str) -> None:
    """y = x + (0.1 + 0.5 |x|) e: the true noise variance is 0.01 at x = 0 and 1.21 at |x| = 2. The head's
    `noise_variance_at` at |x| = 1.8 exceeds that at x = 0 by a clear factor; the same method with its constant
    learned noise gives one value everywhere (the negative control)."""
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(400, 1, generator=generator) * 4 - 2
    y = x + (0.1 + 0.5 * x.abs()) * torch.randn(400, 1, generator=generator)
    far, near = torch.tensor([[-1.8], [1.8]]), torch.tensor([[-0.1], [0.0], [0.1]])
    ratios = {}
    for head in (True, False):
        model = method(*HEADS[name], *([] if head else CONSTANT_NOISE[name]))
        train(model, x, y, 400)
        noise_far, noise_near = (torch.as_tensor(model.noise_variance_at(points)).mean() for points in (far, near))
        ratios[head] = float(noise_far / noise_near)
    assert ratios[True] > 5.0, ratios
    assert ratios[False] == 1.0


def test_the_ensembles_shared_learned_noise_finds_a_constant_noise() -> None:
    """On y = x + 0.5 e the members' one learned s^2 approaches 0.25 (from 1), each member trains on its Gaussian NLL
    under it, and setting both noise models is an error naming them."""
    generator = torch.Generator().manual_seed(2)
    x = torch.rand(300, 1, generator=generator) * 2 - 1
    y = x + 0.5 * torch.randn(300, 1, generator=generator)
    model = method("method=deep_ensemble", "method.learned_noise=true", "method.num_members=3")
    means = model(x)[0]
    per_member = [-Normal(means[k], 1.0).log_prob(y).mean() for k in range(3)]
    torch.testing.assert_close(model.loss(x, y, 300), sum(per_member))
    assert model.noise_variance() == pytest.approx(1.0)
    train(model, x, y, 300)
    assert model.noise_variance() == pytest.approx(0.25, rel=0.2)
    assert model.noise_variance_at(x) == model.noise_variance()
    assert model.diagnostics()["likelihood_scale"] == pytest.approx(math.sqrt(model.noise_variance()))
    with pytest.raises(ValueError, match="variance_heads .* and method.learned_noise .*: set at most one true"):
        method("method=deep_ensemble", "method.learned_noise=true", "method.variance_heads=true")


def test_without_the_head_mc_dropouts_loss_is_the_constant_noise_formula_exactly() -> None:
    """Seeded: the default loss is -mean_{s,b} log N(y_b; f_s(x_b), scale^2) over `num_samples` masks plus the weight
    decay, bit for bit; the predictive's noise is the constant scale^2 at every input."""
    model = method("method=mc_dropout", "method.dropout=0.2", "method.prior_precision=0.5", "method.noise.scale=0.7")
    x, y = torch.randn(16, 1), torch.randn(16, 1)
    torch.manual_seed(3)
    loss = model.loss(x, y, 16)
    torch.manual_seed(3)
    draws = torch.stack([model.network(x, sample_dropout=True) for _ in range(model.num_samples)])
    data_term = -Normal(draws, model.noise.log_scale.exp(), validate_args=False).log_prob(y).sum(-1).mean()
    squared_norm = sum(parameter.square().sum() for parameter in model.network.parameters())
    assert torch.equal(loss, data_term + 0.5 * 0.5 * squared_norm / 16)
    assert model.network.layers[-1].out_features == 1 and not model.heteroscedastic
    assert observation_variance(model, x) == model.noise_variance() == pytest.approx(0.49)

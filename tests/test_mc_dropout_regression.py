"""MC dropout on regression data (Gal & Ghahramani 2016's UCI experiments): a Gaussian likelihood N(f(x), 1/tau) whose
noise is learned with the weights, the predictive's samples of f over dropout masks and its noise variance 1/tau."""

from __future__ import annotations

import math

import torch

from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import build_method
from bnnrepro.optim import Adam
from bnnrepro.train import compose_config

SPEC = DataSpec("regression", 1, 0, (1,))


def mc_dropout(*overrides: str):
    cfg = compose_config(["method=mc_dropout", "dataset=uci_boston", "run_dir=unused", "scale=smoke", *overrides])
    torch.manual_seed(0)
    return build_method(cfg, SPEC)


def test_without_dropout_the_loss_is_the_gaussian_nll_of_the_network() -> None:
    """With no dropout every mask gives the plain network: the loss is -log N(y; f(x), scale^2) per datum, the
    predictive's samples are all f(x), and the noise variance is scale^2."""
    method = mc_dropout("method.dropout=0.0", "method.noise.scale=0.5")
    x, y = torch.randn(16, 1), torch.randn(16, 1)
    f = method.network(x)
    expected = -torch.distributions.Normal(f, 0.5).log_prob(y).mean()
    torch.testing.assert_close(method.loss(x, y, 16), expected)
    samples = method.predict(x)
    assert samples.shape == (method.eval_samples, 16, 1)
    torch.testing.assert_close(samples, f.detach().expand_as(samples))
    assert math.isclose(method.noise_variance(), 0.25, rel_tol=1e-6)


def test_dropout_masks_make_the_predictive_samples_differ_and_the_inputs_are_dropped_when_asked() -> None:
    method = mc_dropout("method.dropout=0.5", "method.input_dropout=0.5")
    x = torch.randn(8, 1)
    samples = method.predict(x)
    assert (samples - samples[0]).abs().max() > 0
    assert method.network.input_dropout == 0.5


def test_the_learned_noise_finds_the_datas_noise_and_the_untrained_does_not() -> None:
    """On y = 2x + e, e ~ N(0, 0.3^2), a few hundred Adam steps take the learned noise standard deviation near 0.3;
    the untrained model's (its initial 1.0) is far from it (the check's negative control)."""
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(256, 1, generator=generator) * 2 - 1
    y = 2 * x + 0.3 * torch.randn(256, 1, generator=generator)
    method = mc_dropout("method.dropout=0.05", "method.hidden_widths=[50]")
    untrained = math.sqrt(method.noise_variance())
    optimizer = Adam(method.parameter_groups(0.01, 1.0))
    for _ in range(600):
        method.training_step(x, y, len(x), optimizer)
    learned = math.sqrt(method.noise_variance())
    assert abs(learned - 0.3) < 0.08, learned
    assert abs(untrained - 0.3) > 0.5

"""The moment-propagating building block of thesis ch. 3 and 5: every activation's and layer's moments against
Monte Carlo, the Frey-Hinton ReLU moments against numerical integration, the limits and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from torch.nn import functional as F

from bnnrepro.inference import gaussian_moments as moments
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.inference.moment_likelihoods import (
    gaussian_expected_log_likelihood,
    logit_samples,
    taylor_expected_log_softmax,
    two_point_samples,
    type2_ml_precision,
)
from bnnrepro.models.moment_layers import (
    GaussianAffine,
    LayerShape,
    MomentNetwork,
    PlainNetwork,
    activation_moments,
    independent_draws,
    layer_shapes,
)

NUM_SAMPLES = 200_000
"""Monte Carlo draws per check (at least 1e5 everywhere)."""
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _inputs(seed: int = 0, size: int = 6) -> Moments:
    generator = torch.Generator().manual_seed(seed)
    mean = 2.0 * torch.randn(size, generator=generator, dtype=torch.float64)
    var = 0.05 + 2.0 * torch.rand(size, generator=generator, dtype=torch.float64)
    return Moments(mean, var)


def _gaussian_draws(inputs: Moments, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn((NUM_SAMPLES, *inputs.mean.shape), generator=generator, dtype=torch.float64)
    return inputs.mean + inputs.var.sqrt() * noise


def _bernoulli(p: torch.Tensor, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand((NUM_SAMPLES, *p.shape), generator=generator, dtype=torch.float64) < p).double()


def _assert_matches_samples(result: Moments, draws: torch.Tensor) -> None:
    """Within 5 Monte Carlo standard errors of the sample mean and variance (and 1e-5: a unit far below 0 has
    moments ~1e-7 that no draw reaches)."""
    sample_mean, sample_var = draws.mean(0), draws.var(0)
    mean_error = (draws.var(0) / NUM_SAMPLES).sqrt()
    fourth = (draws - sample_mean).pow(4).mean(0)
    var_error = ((fourth - sample_var.square()) / NUM_SAMPLES).sqrt()
    assert torch.all((result.mean - sample_mean).abs() <= 5 * mean_error + 1e-5)
    assert torch.all((result.var - sample_var).abs() <= 5 * var_error + 1e-5)


@pytest.mark.parametrize(
    ("name", "function", "reference"),
    [
        ("relu", moments.relu, torch.relu),
        ("elu", lambda m: moments.elu(m, 1.0, 1.0), F.elu),
        ("selu", lambda m: moments.elu(m, SELU_ALPHA, SELU_SCALE), torch.selu),
    ],
)
def test_moment_matched_activations_agree_with_monte_carlo(name, function, reference):
    inputs = _inputs()
    _assert_matches_samples(function(inputs), reference(_gaussian_draws(inputs)))


def test_frey_hinton_relu_moments_agree_with_numerical_integration():
    for mu, sigma in [(-1.3, 0.4), (0.0, 1.0), (2.1, 0.7), (-4.0, 2.5)]:
        density = stats.norm(mu, sigma).pdf
        first = integrate.quad(lambda f, pdf=density: f * pdf(f), 0, np.inf)[0]
        second = integrate.quad(lambda f, pdf=density: f * f * pdf(f), 0, np.inf)[0]
        result = moments.relu(
            Moments(torch.tensor([mu], dtype=torch.float64), torch.tensor([sigma**2], dtype=torch.float64))
        )
        assert result.mean.item() == pytest.approx(first, abs=1e-9)
        assert result.var.item() == pytest.approx(second - first**2, abs=1e-9)


def test_heaviside_gates_agree_with_monte_carlo_of_their_model():
    """f ~ N(m, v) and the gates drawn independently from q(z) = Ber(sigmoid(C ...)) of E[f] (Proposition 1)."""
    inputs, sharpness, slope = _inputs(), 3.0, 0.1
    f = _gaussian_draws(inputs)
    z = _bernoulli(torch.sigmoid(sharpness * inputs.mean), seed=2)
    _assert_matches_samples(moments.heaviside_gate(inputs, sharpness), f * z)
    _assert_matches_samples(moments.leaky_relu_gate(inputs, sharpness, slope), f * (slope + (1 - slope) * z))
    u = _bernoulli(torch.sigmoid(sharpness * (inputs.mean - 1)), seed=3)
    v = _bernoulli(torch.sigmoid(-sharpness * (inputs.mean + 1)), seed=4)
    _assert_matches_samples(moments.hard_tanh_gate(inputs, sharpness), u - v + f * (1 - u) * (1 - v))


def test_hard_tanh_gate_tends_to_hard_tanh_of_the_mean_for_a_sharp_gate_and_no_variance():
    mean = torch.linspace(-3, 3, 13, dtype=torch.float64)
    result = moments.hard_tanh_gate(Moments(mean, torch.zeros_like(mean)), 1e4)
    torch.testing.assert_close(result.mean, F.hardtanh(mean))


def test_max_pooling_passes_the_moments_of_the_input_with_the_largest_mean():
    generator = torch.Generator().manual_seed(0)
    mean = torch.randn(2, 3, 4, 4, generator=generator, dtype=torch.float64)
    var = torch.rand(2, 3, 4, 4, generator=generator, dtype=torch.float64)
    result = moments.max_pool(Moments(mean, var), 2)
    # Proposition 3: z is decided by the means, so c is the input of largest mean: draw every input and pick it
    draws = mean + var.sqrt() * torch.randn((NUM_SAMPLES // 2, *mean.shape), generator=generator, dtype=torch.float64)
    windows = draws.unfold(3, 2, 2).unfold(4, 2, 2).flatten(-2)  # [S, B, C, 2, 2, 4]
    winner = mean.unfold(2, 2, 2).unfold(3, 2, 2).flatten(-2).argmax(-1)
    picked = windows.gather(-1, winner.expand(windows.shape[:-1])[..., None]).squeeze(-1)
    torch.testing.assert_close(result.mean, picked.mean(0), atol=0.03, rtol=0)
    torch.testing.assert_close(result.var, picked.var(0), atol=0.05, rtol=0)
    torch.testing.assert_close(result.mean, F.max_pool2d(mean, 2))


@pytest.mark.parametrize("shape", [LayerShape(5, 3), LayerShape(2, 3, kernel=3, stride=2)])
def test_gaussian_layer_moments_agree_with_monte_carlo_over_weights_and_inputs(shape):
    torch.manual_seed(0)
    layer = GaussianAffine(shape).double()
    with torch.no_grad():
        layer.weight_log_variance.uniform_(-3, 0)
        layer.bias_log_variance.uniform_(-3, 0)
    input_shape = (1, shape.in_size, 5, 5) if shape.kernel else (1, shape.in_size)
    inputs = Moments(torch.randn(input_shape, dtype=torch.float64), torch.rand(input_shape, dtype=torch.float64))
    result = layer.moments(inputs)
    count = NUM_SAMPLES

    def draw(mean, log_variance):
        return mean + (0.5 * log_variance).exp() * torch.randn((count, *mean.shape), dtype=torch.float64)

    weights = draw(layer.weight_mean, layer.weight_log_variance).detach()
    biases = draw(layer.bias_mean, layer.bias_log_variance).detach()
    x = inputs.mean + inputs.var.sqrt() * torch.randn((count, *input_shape[1:]), dtype=torch.float64)
    if shape.kernel:  # one convolution per draw: the draws as groups of one grouped convolution
        grouped = F.conv2d(
            x.reshape(1, -1, *input_shape[2:]),
            weights.flatten(0, 1),
            biases.flatten(),
            stride=shape.stride,
            groups=count,
        )
        outputs = grouped.view(count, shape.out_size, *grouped.shape[2:])
    else:
        outputs = torch.einsum("soi,si->so", weights, x) + biases
    torch.testing.assert_close(result.mean[0].detach(), outputs.mean(0), atol=0.03, rtol=0.02)
    torch.testing.assert_close(result.var[0].detach(), outputs.var(0), atol=0.03, rtol=0.03)


def test_local_reparameterisation_draws_have_the_layer_moments():
    torch.manual_seed(0)
    layer = GaussianAffine(LayerShape(4, 3)).double()
    with torch.no_grad():
        layer.weight_log_variance.fill_(-1.0)
    x = torch.randn(1, 4, dtype=torch.float64)
    draws = layer.sample(x.expand(NUM_SAMPLES, -1)).detach()  # one local draw per row
    result = layer.moments(x)
    torch.testing.assert_close(draws.mean(0), result.mean[0].detach(), atol=0.03, rtol=0)
    torch.testing.assert_close(draws.var(0), result.var[0].detach(), atol=0.03, rtol=0.05)


def test_independent_draws_pass_at_most_a_chunk_of_rows_and_keep_each_input_in_its_place():
    passes = []

    def doubled(inputs: torch.Tensor) -> torch.Tensor:
        passes.append(len(inputs))
        return 2 * inputs

    x = torch.arange(300.0).unsqueeze(1)
    torch.testing.assert_close(independent_draws(doubled, x, 7), (2 * x).expand(7, -1, -1))
    assert passes == [900, 900, 300]  # 3 copies per pass of at most EVALUATION_CHUNK = 1000 rows, then the 7th
    passes.clear()
    assert independent_draws(doubled, torch.zeros(1500, 2), 2).shape == (2, 1500, 2)
    assert passes == [1500, 1500]  # a batch above a chunk: one pass per draw, as a loop


@pytest.mark.parametrize("shared_noise", [False, True], ids=["per-row noise", "control: one noise per pass"])
def test_the_copies_of_a_repeated_batch_are_independent_draws(shared_noise: bool):
    torch.manual_seed(0)
    layer = GaussianAffine(LayerShape(3, 1)).double()
    with torch.no_grad():
        layer.weight_log_variance.fill_(-1.0)
    x = torch.randn(20, 3, dtype=torch.float64)

    def one_noise_per_pass(inputs: torch.Tensor) -> torch.Tensor:  # what a sampler drawing weights, not units, does
        return layer.mean_forward(inputs) + torch.randn((), dtype=torch.float64)

    draws = independent_draws(one_noise_per_pass if shared_noise else layer.sample, x, 4000).detach()[..., 0]
    across_inputs = np.corrcoef(draws[:, 0], draws[:, 1])[0, 1]
    across_draws = np.corrcoef(draws[:-1, 0], draws[1:, 0])[0, 1]
    independent = abs(across_inputs) < 0.1 and abs(across_draws) < 0.1  # 4000 draws: s.e. of a correlation 0.016
    assert independent is not shared_noise


def test_gaussian_layer_kl_equals_torch_distributions():
    torch.manual_seed(0)
    layer = GaussianAffine(LayerShape(3, 2, kernel=2))
    precision = 10.0
    expected = sum(
        torch.distributions.kl_divergence(
            torch.distributions.Normal(mean, (0.5 * log_variance).exp()),
            torch.distributions.Normal(0.0, precision**-0.5),
        ).sum()
        for mean, log_variance in (
            (layer.weight_mean, layer.weight_log_variance),
            (layer.bias_mean, layer.bias_log_variance),
        )
    )
    torch.testing.assert_close(layer.kl(precision), expected)


def test_vbp_network_without_variance_and_a_sharp_gate_is_the_deterministic_relu_network():
    torch.manual_seed(0)
    shapes = layer_shapes((1, 12, 12), [(4, 3, 2)], [8], 3)
    network = MomentNetwork(shapes, activation_moments("heaviside_relu", sharpness=1e6)).double()
    plain = PlainNetwork(shapes).double()
    with torch.no_grad():
        for gaussian, layer in zip(network.layers, plain.layers, strict=True):
            layer.weight.copy_(gaussian.weight_mean)
            layer.bias.copy_(gaussian.bias_mean)
            gaussian.weight_log_variance.fill_(-math.inf)
            gaussian.bias_log_variance.fill_(-math.inf)
    x = torch.randn(5, 12, 12, dtype=torch.float64)  # the datasets store grey images as [N, H, W]
    mean, var = network(x)
    torch.testing.assert_close(mean, plain(x))
    assert torch.all(var == 0)


def test_type2_ml_precision_maximises_the_expected_log_likelihood():
    generator = torch.Generator().manual_seed(0)
    y, mean = torch.randn(50, 1, generator=generator), torch.randn(50, 1, generator=generator)
    var = torch.rand(50, 1, generator=generator)
    best = type2_ml_precision(y, mean, var)
    grid = best * torch.linspace(0.5, 1.5, 101)
    values = torch.stack([gaussian_expected_log_likelihood(y, mean, var, beta).sum() for beta in grid])
    assert grid[values.argmax()] == pytest.approx(float(best), rel=0.011)


def test_taylor_expected_log_softmax_is_exact_without_variance_and_close_for_small_variance():
    generator = torch.Generator().manual_seed(0)
    mean, y = torch.randn(4, 5, generator=generator, dtype=torch.float64), torch.tensor([0, 1, 2, 3])
    exact = mean.log_softmax(-1).gather(-1, y[:, None]).squeeze(-1)
    torch.testing.assert_close(taylor_expected_log_softmax(y, mean, torch.zeros_like(mean)), exact)
    var = torch.full_like(mean, 0.1)
    draws = mean + var.sqrt() * torch.randn((NUM_SAMPLES, 4, 5), generator=generator, dtype=torch.float64)
    sampled = draws.log_softmax(-1).gather(-1, y[None, :, None].expand(NUM_SAMPLES, -1, 1)).squeeze(-1).mean(0)
    taylor_error = (taylor_expected_log_softmax(y, mean, var) - sampled).abs()
    assert torch.all(taylor_error < 0.2 * (exact - sampled).abs())  # the variance term removes >= 80% of the gap


def test_two_point_samples_carry_the_moments_exactly():
    mean, var = torch.tensor([[0.5], [-1.0]]), torch.tensor([[0.25], [4.0]])
    samples = two_point_samples(mean, var)
    torch.testing.assert_close(samples.mean(0), mean)
    torch.testing.assert_close(samples.var(0, unbiased=False), var)


def test_layer_shapes_of_the_strided_lenet5_flatten_to_800_and_4800():
    assert layer_shapes((1, 28, 28), [(20, 5, 2), (50, 5, 2)], [500], 10)[2].in_size == 800
    assert layer_shapes((3, 32, 32), [(192, 5, 2), (192, 5, 2)], [1000], 10)[2].in_size == 4800


def test_bad_activation_name_and_sharpness_are_named():
    with pytest.raises(ValueError, match="unknown activation 'tanh'"):
        activation_moments("tanh")
    with pytest.raises(ValueError, match="sharpness C must be positive"):
        activation_moments("heaviside_relu", sharpness=0.0)
    with pytest.raises(ValueError, match="shrink the input"):
        layer_shapes((1, 8, 8), [(4, 5, 2), (4, 5, 2)], [], 2)


def test_logit_draws_are_gaussian_not_uniform():
    """The authors' VBP code (`manuelhaussmann/vbp`, `architectures.py`) draws its sampled-logit noise with
    `rand_like` (uniform on [0, 1)); ours must be N(mean, var): the draws' mean, variance and a tail probability
    against the Gaussian's."""
    torch.manual_seed(0)
    mean, var = torch.tensor([[0.5, -1.0]]), torch.tensor([[4.0, 0.25]])
    draws = logit_samples(mean, var, 100_000)
    torch.testing.assert_close(draws.mean(0), mean, atol=0.02, rtol=0)
    torch.testing.assert_close(draws.var(0), var, atol=0.03, rtol=0.01)
    below = (draws[:, 0, 0] < 0.5 - 2 * 2.0).float().mean()
    assert below == pytest.approx(stats.norm.cdf(-2), abs=0.003)

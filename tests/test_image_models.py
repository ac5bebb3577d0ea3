"""Image models of the SDE-BNN reproduction (Xu et al. 2022, Table 1): convolutional hidden dynamics vectorised
over weight samples, the invertible squeeze, multi-scale SDE-BNN / ODEnet / HyperODEnet, ResNet32 and mean-field
layers."""

from dataclasses import replace

import pytest
import torch
from torch import nn
from torch.distributions import Normal, kl_divergence
from torch.nn import functional as F
from torch.nn.utils import parameters_to_vector

from bnnrepro.distributions import gaussian_kl
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.methods.continuous_depth import ODENet
from bnnrepro.models.conv_dynamics import (
    TABLE2,
    ConvHiddenDynamics,
    InvertibleDownsampling,
    SDEBlock,
    image_sdebnn,
    image_weight_odenet,
)
from bnnrepro.models.hyper_ode import WeightODEBlock
from bnnrepro.models.mean_field import (
    MeanField,
    MeanFieldConv2d,
    MeanFieldLinear,
    SampledNetwork,
    mean_field_kl,
    to_mean_field,
)
from bnnrepro.models.resnet import ResNet, resnet32
from bnnrepro.models.weight_sde import SDEBNN, DriftNet, MLPHiddenDynamics
from bnnrepro.models.weight_sde_solver import SolverSettings

TINY = {"width": 4, "num_steps": 4}


def random_weights(dynamics, num_samples):
    return torch.randn(num_samples, dynamics.num_weights) * 0.2


# --- convolutional hidden dynamics --------------------------------------------------------------------------


@pytest.mark.parametrize("state_shape", [(3, 8, 8), (5, 7, 6)])
def test_conv_dynamics_samples_match_single_sample_calls(state_shape):
    """Sample s of one vectorised call (S folded into grouped convolutions) uses exactly its own weights w[s]."""
    torch.manual_seed(0)
    dynamics = ConvHiddenDynamics(state_shape, width=4)
    h, w, t = torch.randn(3, 2, *state_shape), random_weights(dynamics, 3), torch.tensor(0.4)
    together = dynamics(t, h, w)
    assert together.shape == h.shape
    for s in range(3):
        torch.testing.assert_close(together[s : s + 1], dynamics(t, h[s : s + 1], w[s : s + 1]))


def test_conv_dynamics_equal_a_torch_conv_stack():
    """Copying the flat weights into nn.Conv2d / nn.ConvTranspose2d layers (time as an extra input channel)
    gives the same dh/dt: the layout, strides, paddings and activations of SDE-BNN paper §5.2 and the authors'
    `arch.build_fx` (bayeSDE)."""
    torch.manual_seed(0)
    channels, width = 3, 4
    dynamics = ConvHiddenDynamics((channels, 8, 8), width=width)
    w, h, t = random_weights(dynamics, 1), torch.randn(1, 2, channels, 8, 8), torch.tensor(0.7)
    layers = [
        nn.Conv2d(channels + 1, width, 3, padding=1),
        nn.Conv2d(width + 1, width, 3, stride=2, padding=1),
        nn.ConvTranspose2d(width + 1, width, 3, stride=2, padding=1, output_padding=1),
        nn.Conv2d(width + 1, channels, 3, padding=1),
    ]
    offset = 0
    for layer in layers:
        for param in (layer.weight, layer.bias):
            param.data.copy_(w[0, offset : offset + param.numel()].view_as(param))
            offset += param.numel()
    assert offset == dynamics.num_weights
    x = h[0]
    for i, layer in enumerate(layers):
        x = torch.tanh(x) if i else x
        x = layer(torch.cat([x, t.expand(x.shape[0], 1, *x.shape[2:])], dim=1))
    torch.testing.assert_close(dynamics(t, h, w)[0], x)


# --- the squeeze ---------------------------------------------------------------------------------------------


def unsqueeze(y: torch.Tensor) -> torch.Tensor:
    """The squeeze's inverse: [..., 4C, H/2, W/2] -> [..., C, H, W]."""
    y = y.unflatten(-3, (y.shape[-3] // 4, 2, 2)).movedim((-4, -3), (-3, -1))  # [..., C, H/2, 2, W/2, 2]
    return y.flatten(-2, -1).flatten(-3, -2)


def test_squeeze_is_an_invertible_norm_preserving_space_to_depth():
    squeeze = InvertibleDownsampling()
    x = torch.randn(2, 3, 5, 8, 6)
    y = squeeze(x)
    assert y.shape == (2, 3, 20, 4, 3)
    assert torch.equal(unsqueeze(y), x)
    torch.testing.assert_close(y.norm(), x.norm())
    torch.testing.assert_close(y[0, 0, :4, 1, 2], x[0, 0, 0, 2:4, 4:6].flatten())  # one 2x2 patch -> 4 channels


# --- ResNet32 and mean-field layers ------------------------------------------------------------------------


def test_resnet32_has_32_weighted_layers_and_the_published_size():
    model = resnet32()
    weighted = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    assert len(weighted) == 6 * 5 + 2
    assert 0.45e6 < sum(p.numel() for p in model.parameters()) < 0.47e6  # He et al. 2016, Table 6: 0.46M
    small = ResNet(in_channels=1, blocks_per_stage=1, width_multiplier=0.5)
    assert len([m for m in small.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]) == 8
    assert small(torch.randn(2, 1, 28, 28)).shape == (2, 10)


def test_mean_field_kl_is_the_gaussian_kl():
    torch.manual_seed(0)
    mean, log_std = torch.randn(7), torch.randn(7) * 0.5 - 2
    expected = kl_divergence(Normal(mean, log_std.exp()), Normal(0.0, 0.3)).sum()
    torch.testing.assert_close(gaussian_kl(mean, log_std, 0.09), expected)
    layer = MeanFieldLinear(3, 2, prior_variance=0.09, initial_log_std=-1.0)
    params = torch.cat([layer.weight.flatten(), layer.bias])
    expected = kl_divergence(Normal(params, torch.full_like(params, -1.0).exp()), Normal(0.0, 0.3)).sum()
    torch.testing.assert_close(layer.kl(), expected)


@pytest.mark.parametrize(
    "layer, x",
    [(nn.Linear(5, 3), torch.randn(4, 5)), (nn.Conv2d(2, 3, 3, stride=2, padding=1), torch.randn(4, 2, 7, 7))],
)
def test_mean_field_layer_without_noise_is_the_deterministic_layer(layer, x):
    model = to_mean_field(nn.Sequential(layer), initial_log_std=-30.0)
    assert isinstance(model[0], MeanField)
    torch.testing.assert_close(model(x), layer(x))
    noisy = to_mean_field(nn.Sequential(layer), initial_log_std=-1.0)
    assert not torch.allclose(noisy(x), layer(x))


def test_mean_field_resnet_converts_every_layer_and_samples():
    torch.manual_seed(0)
    model = to_mean_field(ResNet(in_channels=1, blocks_per_stage=1, width_multiplier=0.25))
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    assert len(layers) == 8 and all(isinstance(m, (MeanFieldConv2d, MeanFieldLinear)) for m in layers)
    torch.testing.assert_close(mean_field_kl(model), sum(m.kl() for m in layers))
    logits, kl = SampledNetwork(model)(torch.randn(3, 1, 28, 28), num_samples=2)
    assert logits.shape == (2, 3, 10) and kl.shape == (2,)
    assert not torch.allclose(logits[0], logits[1])  # independent draws of q
    point_logits, point_kl = SampledNetwork(ResNet(1, blocks_per_stage=1))(torch.randn(3, 1, 28, 28), 5)
    assert point_logits.shape == (1, 3, 10) and point_kl.item() == 0


# --- ODEnet, HyperODEnet ---------------------------------------------------------------------------------


def test_hypernetwork_drift_is_the_drift_net():
    """The per-sample MLP that evaluates the HyperODEnet drift equals DriftNet with the same parameters, and the
    block starts from DriftNet's initialisation (last layer zero)."""
    torch.manual_seed(0)
    net = DriftNet(6, (2, 5, 2))
    nn.init.normal_(net.layers[-1].weight)
    w, t = torch.randn(3, 6), torch.tensor(0.2)
    phi = parameters_to_vector(net.parameters()).expand(3, -1)
    torch.testing.assert_close(MLPHiddenDynamics(6, (2, 5, 2), "tanh")(t, w[:, None], phi)[:, 0], net(t, w))
    block = WeightODEBlock(ConvHiddenDynamics((1, 2, 2), 1), drift_widths=(2, 5, 2))
    phi0, _ = block.drift_weights(3)
    w = torch.randn(3, 1, block.dynamics.num_weights)
    assert torch.equal(block.hypernet(t, w, phi0), torch.zeros_like(w))


def test_hyperodenet_with_zero_drift_is_the_odenet():
    torch.manual_seed(0)
    dynamics = ConvHiddenDynamics((3, 6, 6), width=3)
    hyper = WeightODEBlock(dynamics, 5, drift_widths=(1, 8, 1))
    plain = WeightODEBlock(dynamics, 5)
    plain.initial_weights.load_state_dict(hyper.initial_weights.state_dict())
    h = torch.randn(1, 2, 3, 6, 6)
    torch.testing.assert_close(hyper(h)[0], plain(h)[0])  # the drift net's last layer starts at zero
    reference = ODENet(nn.Identity(), dynamics, nn.Identity(), 5)
    reference.w0.data.copy_(plain.initial_weights.w0)
    torch.testing.assert_close(plain(h)[0], reference(h[0])[0])
    with torch.no_grad():
        hyper.drift_weights.w0.normal_()
    assert not torch.allclose(hyper(h)[0], plain(h)[0])


# --- image SDE-BNN ---------------------------------------------------------------------------------------


def test_sde_block_is_the_sdebnn_started_per_sample():
    torch.manual_seed(0)
    dynamics = ConvHiddenDynamics((3, 4, 4), width=2)
    solver = SolverSettings(num_steps=4)
    block = SDEBlock(dynamics, OrnsteinUhlenbeckPrior(0.5), (1, 4, 1), solver=solver)
    nn.init.normal_(block.sde.posterior.net.layers[-1].weight, std=0.5)  # q != p: a non-zero KL
    reference = SDEBNN(nn.Identity(), dynamics, nn.Identity(), OrnsteinUhlenbeckPrior(0.5), (1, 4, 1), solver=solver)
    reference.load_state_dict(block.state_dict())
    h0 = torch.randn(2, 3, 4, 4)
    h1, kl = block(h0.expand(3, -1, -1, -1, -1), entropy=7)
    expected_h1, expected_kl = reference(h0, num_samples=3, entropy=7)
    torch.testing.assert_close(h1, expected_h1)
    torch.testing.assert_close(kl, expected_kl)
    assert (kl > 0).all()


@pytest.mark.parametrize(
    "setting, shape",
    [
        (replace(TABLE2["sdebnn"]["mnist"], drift_widths=(1, 8, 1), **TINY), (4, 1, 28, 28)),
        (replace(TABLE2["sdebnn"]["cifar10"], blocks=(1, 1), drift_widths=(2, 8, 2), **TINY), (4, 3, 32, 32)),
    ],
)
def test_image_sdebnn_runs_forward_backward_with_zero_kl_at_init(setting, shape):
    torch.manual_seed(0)
    model = image_sdebnn(setting)
    logits, kl = model(torch.randn(shape), num_samples=2)
    assert logits.shape == (2, 4, 10) and torch.isfinite(logits).all()
    assert not torch.allclose(logits[0], logits[1])  # two weight paths
    assert torch.equal(kl, torch.zeros(2))  # the drift net starts at zero: q = p
    (F.cross_entropy(logits.flatten(0, 1), torch.arange(8) % 10) + kl.mean()).backward()
    first = model.stages[0][0]
    assert first.initial_weights.w0.grad.abs().sum() > 0
    assert first.sde.posterior.net.layers[-1].weight.grad.abs().sum() > 0
    assert len(model.stages) == len(setting.blocks)


def test_point_estimate_networks_run_one_sample_and_mean_field_ones_have_a_kl():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 32, 32)
    setting = replace(TABLE2["hyperodenet"]["cifar10"], blocks=(1, 1), drift_widths=(1, 4, 1), **TINY)
    logits, kl = image_weight_odenet(setting, hyper=True)(x, num_samples=3)
    assert logits.shape == (1, 2, 10) and kl.item() == 0
    logits, kl = image_weight_odenet(setting, hyper=True, mean_field=True)(x, num_samples=3)
    assert logits.shape == (3, 2, 10) and (kl > 0).all()
    assert not torch.allclose(logits[0], logits[1])
    logits, kl = image_weight_odenet(replace(TABLE2["odenet"]["mnist"], **TINY), hyper=False, mean_field=True)(
        x[:, :1, :28, :28], 2
    )
    assert logits.shape == (2, 2, 10) and (kl > 0).all()

"""Layers with mean-field Gaussian weights that carry (mean, variance) through a network, and the networks built
from them: the shared building block of VBP, DVI, VarOut (thesis ch. 3) and BEDL (ch. 5).

A `GaussianAffine` layer (linear or convolution) has q(w) = N(mu, sigma^2) per weight and per bias (biases are
weights, §2.2), and three ways through it:
- `moments`: the mean and variance of its outputs given those of its inputs, exact for independent weights and
  inputs (eqs. 3.6-3.7; §5.1.1): E[f] = mu E[h] + mu_b and
  var[f] = (mu^2 + sigma^2) var[h] + sigma^2 E[h]^2 + sigma_b^2, summed over the inputs (three matrix products per
  layer, two for a deterministic input);
- `sample`: one draw of the outputs by local reparameterisation (Kingma et al. 2015), VarOut's pass;
- `mean_forward`: the network at the posterior means.

`MomentNetwork` alternates these layers with an activation's moments (bnnrepro.inference.gaussian_moments); its
`kl` is KL(q || N(0, 1/alpha)) summed over every weight. `DropoutVarianceAffine` fixes the variances to those of
Gaussian dropout (thesis ch. 4's CLT-BNN-Fix).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.inference import gaussian_moments
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.models.image_layout import channels_first

INITIAL_LOG_VARIANCE = (-9.0, 1e-3)
"""log sigma^2 ~ N(-9, 1e-3) at initialisation (thesis §3.5.4 and §5.8.2.1, after Louizos & Welling 2017). Whether
1e-3 is a variance or a standard deviation is not stated; as the authors' code (`manuelhaussmann/vbp` `VBPLayer.py`,
`manuelhaussmann/bedl` `CLTLayer.py`), the standard deviation."""


@dataclass(frozen=True)
class LayerShape:
    """One affine layer: a convolution (kernel > 0, no padding) or a linear map (kernel == 0)."""

    in_size: int
    out_size: int
    kernel: int = 0
    stride: int = 1

    @property
    def fan_in(self) -> int:
        """Inputs per output unit: in_size for a linear map, in_channels * k * k for a k x k convolution (the
        authors' VBP code, `manuelhaussmann/vbp` `VBPLayer.py`, uses in_channels * prod(1..k-1), a bug we do not
        copy)."""
        return self.in_size * max(self.kernel, 1) ** 2


def layer_shapes(
    input_shape: Sequence[int],
    convolutions: Sequence[Sequence[int]],
    hidden_widths: Sequence[int],
    num_outputs: int,
    width_multiplier: float = 1.0,
) -> list[LayerShape]:
    """The affine layers of a strided convolutional net or an MLP: `convolutions` as (channels, kernel, stride)
    with padding 0, flattened into `hidden_widths` and `num_outputs` (e.g. the strided LeNet5 of thesis Table 3.4:
    convolutions [(20, 5, 2), (50, 5, 2)], hidden [500]). Channels and hidden widths are scaled by
    `width_multiplier` (1.0 is the thesis' net)."""

    def scaled(size: int) -> int:
        return max(1, round(size * width_multiplier))

    shapes, channels, spatial = [], input_shape[0], list(input_shape[1:])
    for out_channels, kernel, stride in convolutions:
        out_channels = scaled(out_channels)
        spatial = [(size - kernel) // stride + 1 for size in spatial]
        if min(spatial) < 1:
            raise ValueError(f"the convolutions {list(convolutions)} shrink the input {tuple(input_shape)} to nothing")
        shapes.append(LayerShape(channels, out_channels, kernel, stride))
        channels = out_channels
    features = channels * math.prod(spatial)
    for width in [*map(scaled, hidden_widths), num_outputs]:
        shapes.append(LayerShape(features, width))
        features = width
    return shapes


def he_normal_(weight: torch.Tensor, fan_in: int) -> torch.Tensor:
    """N(0, 2 / fan_in): He et al. (2015), the thesis' initialisation of the means (§3.5.4)."""
    with torch.no_grad():
        return weight.normal_(0.0, math.sqrt(2.0 / fan_in))


class GaussianAffine(nn.Module):
    """A linear map or convolution whose weights and biases have q = N(mean, exp(log_variance))."""

    def __init__(self, shape: LayerShape):
        super().__init__()
        self.shape = shape
        weight_shape = (
            (shape.out_size, shape.in_size, shape.kernel, shape.kernel)
            if shape.kernel
            else (shape.out_size, shape.in_size)
        )
        self.weight_mean = nn.Parameter(he_normal_(torch.empty(weight_shape), shape.fan_in))
        self.bias_mean = nn.Parameter(torch.zeros(shape.out_size))
        location, spread = INITIAL_LOG_VARIANCE
        self.weight_log_variance = nn.Parameter(torch.empty(weight_shape).normal_(location, spread))
        self.bias_log_variance = nn.Parameter(torch.empty(shape.out_size).normal_(location, spread))

    def _affine(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if self.shape.kernel:
            return F.conv2d(x, weight, bias, stride=self.shape.stride)
        return F.linear(x, weight, bias)

    def mean_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._affine(x, self.weight_mean, self.bias_mean)

    def variances(self) -> tuple[torch.Tensor, torch.Tensor]:
        """sigma^2 of the weights and of the biases."""
        return self.weight_log_variance.exp(), self.bias_log_variance.exp()

    def moments(self, inputs: Moments | torch.Tensor) -> Moments:
        """Output moments from input moments (or a deterministic input, whose variance is 0: §5.1.1's first layer)."""
        weight_var, bias_var = self.variances()
        if isinstance(inputs, torch.Tensor):
            return Moments(self.mean_forward(inputs), self._affine(inputs.square(), weight_var, bias_var))
        # var[f] = sum_i mu^2 var[h_i] + sigma^2 E[h_i^2] + sigma_b^2 (eq. 3.7 rearranged), both sums as one affine map
        # of the inputs stacked along the channels: one matrix product (or convolution) of twice the width
        mean, var = inputs
        stacked = torch.cat([var, var + mean.square()], 1)
        out_var = self._affine(stacked, torch.cat([self.weight_mean.square(), weight_var], 1), bias_var)
        return Moments(self.mean_forward(mean), out_var)

    def sample(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs N(mu x + mu_b, sigma^2 x^2 + sigma_b^2) drawn per unit and input: local reparameterisation."""
        return self.sampler()(x)

    def sampler(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """`sample` with sigma^2 and sigma_b^2 computed once, for a layer applied many times with the same q (the
        Euler-Maruyama steps of a BNSDE's drift, bnnrepro.models.bayesian_drift)."""
        weight_var, bias_var = self.variances()

        def draw(x: torch.Tensor) -> torch.Tensor:
            mean = self.mean_forward(x)
            return mean + self._affine(x.square(), weight_var, bias_var).sqrt() * torch.randn_like(mean)

        return draw

    def posterior_pairs(self) -> tuple[tuple[nn.Parameter, nn.Parameter], ...]:
        """(mean, log_variance) of the weights and of the biases."""
        return (self.weight_mean, self.weight_log_variance), (self.bias_mean, self.bias_log_variance)

    def kl(self, prior_precision: float) -> torch.Tensor:
        """KL(q || N(0, 1/alpha)) over this layer's weights and biases, closed form:
        1/2 sum_i [alpha (sigma_i^2 + mu_i^2) - 1 - log sigma_i^2 - log alpha], written with three reductions per
        tensor (the elementwise form took an eighth of a LeNet5 step's time on a CPU)."""
        total = torch.zeros(())
        for mean, log_variance in self.posterior_pairs():
            flat = mean.flatten()
            expected_square = log_variance.exp().sum() + flat.dot(flat)
            constant = mean.numel() * (1.0 + math.log(prior_precision))
            total = total + 0.5 * (prior_precision * expected_square - log_variance.sum() - constant)
        return total


class DropoutVarianceAffine(GaussianAffine):
    """A `GaussianAffine` layer whose variances are fixed by its means, sigma^2 = p / (1 - p) mu^2, and biases
    deterministic: Gaussian dropout of rate p on the layer's inputs (Srivastava et al. 2014; Wang & Manning 2013),
    thesis §4.6.2's CLT-BNN-Fix, "fixed variance parameters, to mimic a Gaussian dropout with an equivalent rate as
    the binary dropout". Only the means are parameters."""

    def __init__(self, shape: LayerShape, dropout: float):
        super().__init__(shape)
        del self.weight_log_variance, self.bias_log_variance
        self.variance_ratio = dropout / (1 - dropout)

    def variances(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.variance_ratio * self.weight_mean.square(), torch.zeros_like(self.bias_mean)

    def posterior_pairs(self) -> tuple[tuple[nn.Parameter, nn.Parameter], ...]:
        raise TypeError("a DropoutVarianceAffine layer has no variance parameters")

    def kl(self, prior_precision: float) -> torch.Tensor:
        """With no variational variances there is no KL to take: in its place, -log N(mu | 0, 1/alpha) up to a
        constant, alpha/2 ||mu||^2, the weight decay of the dropout networks the variant is compared with (§4.6.2:
        the BNNs' prior precision "balanced with the weight decay of the Dropout-BNNs")."""
        return 0.5 * prior_precision * (self.weight_mean.square().sum() + self.bias_mean.square().sum())


def plain_layer(shape: LayerShape) -> nn.Module:
    """The deterministic layer of this shape (EDL, MC dropout), initialised as `GaussianAffine`'s means."""
    if shape.kernel:
        layer = nn.Conv2d(shape.in_size, shape.out_size, shape.kernel, stride=shape.stride)
    else:
        layer = nn.Linear(shape.in_size, shape.out_size)
    he_normal_(layer.weight, shape.fan_in)
    nn.init.zeros_(layer.bias)
    return layer


ACTIVATION_MOMENTS: dict[str, Callable[..., Moments]] = {
    "heaviside_relu": gaussian_moments.heaviside_gate,
    "heaviside_leaky_relu": gaussian_moments.leaky_relu_gate,
    "heaviside_hard_tanh": gaussian_moments.hard_tanh_gate,
    "relu": gaussian_moments.relu,
    "elu": gaussian_moments.elu,
}
"""Activation names -> their moments; `activation_moments` binds their options (sharpness C, slope, alpha,
scale)."""


def activation_moments(name: str, **options: float) -> Callable[[Moments], Moments]:
    """The moments of activation `name` with its options, e.g. ("heaviside_relu", sharpness=100)."""
    if name not in ACTIVATION_MOMENTS:
        raise ValueError(f"unknown activation {name!r}; choose one of {', '.join(ACTIVATION_MOMENTS)}")
    if options.get("sharpness", 1.0) <= 0:
        raise ValueError(f"the gate sharpness C must be positive, got {options['sharpness']}")
    return functools.partial(ACTIVATION_MOMENTS[name], **options)


def _reshaped(value: Moments | torch.Tensor, reshape: Callable) -> Moments | torch.Tensor:
    """`reshape` applied to a tensor, or to both moments."""
    return reshape(value) if isinstance(value, torch.Tensor) else Moments(reshape(value.mean), reshape(value.var))


def _flatten_input(x: Moments | torch.Tensor, first: LayerShape) -> Moments | torch.Tensor:
    """A convolutional net's images channels first (the datasets store [N, H, W] or [N, H, W, C]); an MLP's inputs
    as vectors (an image into a fully connected net, e.g. thesis Table 3.3's online MLPs)."""
    return _reshaped(x, channels_first if first.kernel else _vectors)


def _flatten(value: Moments | torch.Tensor, shape: LayerShape, next_shape: LayerShape) -> Moments | torch.Tensor:
    """Flatten after the last convolution."""
    return _reshaped(value, _vectors) if shape.kernel and not next_shape.kernel else value


def _vectors(x: torch.Tensor) -> torch.Tensor:
    return x.flatten(1)


class MomentNetwork(nn.Module):
    """Gaussian affine layers with `activation` between them (none after the last): the output moments of f^L
    (`forward`), a local-reparameterisation draw of f^L with ReLUs between the layers (`sample`), or f^L at the
    posterior means with ReLUs (`mean_forward`)."""

    def __init__(
        self,
        shapes: Sequence[LayerShape],
        activation: Callable[[Moments], Moments],
        layer: Callable[[LayerShape], GaussianAffine] = GaussianAffine,
    ):
        super().__init__()
        self.shapes = list(shapes)
        self.layers = nn.ModuleList(layer(shape) for shape in shapes)
        self.activation = activation

    def _pass(self, x, through: Callable, between: Callable):
        value = _flatten_input(x, self.shapes[0])
        for index, layer in enumerate(self.layers):
            value = through(layer, value)
            if index + 1 < len(self.layers):
                value = _flatten(between(value), self.shapes[index], self.shapes[index + 1])
        return value

    def forward(self, x: torch.Tensor | Moments, input_variance: float = 0.0) -> Moments:
        """Moments of f^L from inputs x, or from Gaussian inputs' moments (RAL's policy takes its state's, thesis
        §4.2.2); `input_variance` > 0 injects known input noise var[x] (§3.1.3)."""
        inputs = Moments(x, torch.full_like(x, input_variance)) if input_variance > 0 else x
        return self._pass(inputs, lambda layer, value: layer.moments(value), self.activation)

    def sample(self, x: torch.Tensor) -> torch.Tensor:
        return self._pass(x, lambda layer, value: layer.sample(value), F.relu)

    def mean_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._pass(x, lambda layer, value: layer.mean_forward(value), F.relu)

    def kl(self, prior_precision: float) -> torch.Tensor:
        return sum(layer.kl(prior_precision) for layer in self.layers)

    def weight_pairs(self) -> list[tuple[nn.Parameter, nn.Parameter]]:
        """(mean, log_variance) of every weight and bias tensor: BEDL-Hyper's hyperprior reads them."""
        return [pair for layer in self.layers for pair in layer.posterior_pairs()]


class PlainNetwork(nn.Module):
    """The deterministic network of the same shapes, ReLU between layers and optional dropout after each hidden
    activation and on the inputs (MC dropout, Gal & Ghahramani 2016; kept active when `sample_dropout`)."""

    def __init__(self, shapes: Sequence[LayerShape], dropout: float = 0.0, input_dropout: float = 0.0):
        super().__init__()
        self.shapes = list(shapes)
        self.layers = nn.ModuleList(plain_layer(shape) for shape in shapes)
        self.dropout, self.input_dropout = dropout, input_dropout

    def forward(self, x: torch.Tensor, sample_dropout: bool = False) -> torch.Tensor:
        value = _flatten_input(x, self.shapes[0])
        if self.input_dropout:
            value = F.dropout(value, self.input_dropout, training=sample_dropout)
        for index, layer in enumerate(self.layers):
            value = layer(value)
            if index + 1 < len(self.layers):
                value = F.dropout(F.relu(value), self.dropout, training=sample_dropout)
                value = _flatten(value, self.shapes[index], self.shapes[index + 1])
        return value


def network_shapes(cfg, input_shape: Sequence[int], num_outputs: int) -> list[LayerShape]:
    """The layers a method config names: `convolutions` [(channels, kernel, stride), ...], `hidden_widths` and
    `width_multiplier` (bnnrepro.models.moment_layers.layer_shapes), on inputs of the dataset's `input_shape` (an
    image's [H, W] or [H, W, C], taken channels first)."""
    if len(input_shape) == 2:
        input_shape = (1, *input_shape)
    elif len(input_shape) == 3:
        input_shape = (input_shape[2], input_shape[0], input_shape[1])
    return layer_shapes(input_shape, cfg.convolutions, cfg.hidden_widths, num_outputs, cfg.width_multiplier)


EVALUATION_CHUNK = 1000
"""Inputs per evaluation pass: a whole split at once would hold e.g. 10,000 x 192 x 14 x 14 moments of a CIFAR
convolution (3 GB) per tensor."""


def in_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """function(x) evaluated on chunks of EVALUATION_CHUNK inputs, concatenated along `dim` of the outputs."""
    return torch.cat([function(chunk) for chunk in x.split(EVALUATION_CHUNK)], dim)


def independent_draws(draw: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, num_samples: int) -> torch.Tensor:
    """`num_samples` draws [S, B, ...] of a network whose noise is drawn per input row (a local-reparameterisation
    pass, a dropout mask), in as few passes as EVALUATION_CHUNK rows allow: each pass takes the inputs repeated, whose
    copies are independent draws. One pass over S x B rows costs a CPU less than S passes over B: 1.6x less for a
    VarOut step on a UCI batch of 16 with five draws, 2x for MC dropout's 10,000-mask predictive
    (benchmarks/independent_draws.py)."""
    per_pass = max(1, EVALUATION_CHUNK // max(1, len(x)))
    counts = [per_pass] * (num_samples // per_pass) + ([num_samples % per_pass] if num_samples % per_pass else [])
    return torch.cat([draw(x.repeat(count, *[1] * (x.ndim - 1))).unflatten(0, (count, len(x))) for count in counts])


def predictive_in_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, task: str) -> torch.Tensor:
    """`in_chunks` for a method's `predict`: probabilities [N, C] join along the inputs, regression samples
    [S, N, D] along their second axis."""
    return in_chunks(function, x, dim=0 if task == "classification" else 1)

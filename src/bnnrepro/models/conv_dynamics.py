"""Continuous-depth image classifiers: SDE-BNN, ODEnet and HyperODEnet with convolutional hidden dynamics
(Xu et al. 2022, §5, §5.2, Tables 1 and 2).

The network is x -> 2 zero channels (ANODE augmentation) -> stages of continuous-depth blocks, an invertible
space-to-depth squeeze between stages -> flatten -> linear logits. "# blocks" in Table 2 lists the blocks per
stage: MNIST "1" (one block at 28x28x3), CIFAR-10 "2-2-2" (3 stages of 2 blocks: 32x32x5 -> 16x16x20 ->
8x8x80), read as the authors' JAX code (`xwinxu/bayeSDE`, `examples/jax/sdebnn_classification.py`) does: each block has
its own weight process over t in [0, 1] (its own w_0, drift net and path KL, the KLs summed), and the "-" between stages
is the squeeze of Dinh et al. (2016) named in §5.2, not a learned convolution (the Table 2 caption's alternative; the
paper is ambiguous). The head is flatten + linear (the authors' JAX code, `xwinxu/bayeSDE`
`examples/jax/sdebnn_classification.py`: Flatten -> Dense(10)), a point estimate in every model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.models.hyper_ode import WeightODEBlock
from bnnrepro.models.weight_sde import ACTIVATIONS, SDEBNN, HiddenDynamics, ZeroAugment
from bnnrepro.models.weight_sde_solver import SolverSettings, brownian_motion, integrate


def with_time_channel(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """[x, t]: the depth t appended as one more constant channel (dim -3 of [..., C, H, W]; SDE-BNN paper §5)."""
    t = torch.as_tensor(t, dtype=x.dtype, device=x.device)
    return torch.cat([x, t.expand(*x.shape[:-3], 1, *x.shape[-2:])], dim=-3)


@dataclass(frozen=True)
class TimeConv:
    """A 'same'-padded (transposed) convolution of [h, t] whose filters come from the flat weight vector."""

    in_channels: int  # without the time channel
    out_channels: int
    kernel_size: int = 3
    stride: int = 1
    transposed: bool = False
    output_padding: tuple[int, int] = (0, 0)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """torch's layouts: (out, in + 1, k, k) for conv2d, (in + 1, out, k, k) for conv_transpose2d."""
        k, c_in = self.kernel_size, self.in_channels + 1
        return (c_in, self.out_channels, k, k) if self.transposed else (self.out_channels, c_in, k, k)

    @property
    def fan_in(self) -> int:
        return (self.in_channels + 1) * self.kernel_size**2

    def __call__(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """[B, S, out, H', W'] from x [B, S, in + 1, H, W], weight [S, *weight_shape] and bias [S, out]: sample s
        convolved with its own filters, S folded into the channels of one grouped convolution."""
        samples = x.shape[1]
        x, weight, bias = x.flatten(1, 2), weight.flatten(0, 1), bias.flatten()
        padding = self.kernel_size // 2
        if self.transposed:
            y = F.conv_transpose2d(x, weight, bias, self.stride, padding, self.output_padding, groups=samples)
        else:
            y = F.conv2d(x, weight, bias, self.stride, padding, groups=samples)
        return y.unflatten(1, (samples, self.out_channels))


class ConvHiddenDynamics(HiddenDynamics):
    """f_h(t, h, w) for images (SDE-BNN paper §5.2; the authors' code, `xwinxu/bayeSDE`
    `brax/_impl/arch.py` `build_fx` block type 0):

        conv 3x3 (C -> width) -> act -> conv 3x3 stride 2 -> act -> transposed conv 3x3 stride 2 -> act
        -> conv 3x3 (width -> C)

    every convolution time-conditional (t one more input channel), no normalisation (SDE-BNN paper §6), tanh
    (Table 2).
    `width` is Table 2's "Drift f_x dim." (MNIST 32, CIFAR-10 64). w holds each layer's filters then bias, layer
    after layer. The transposed convolution's output padding restores H and W of either parity.
    """

    def __init__(self, state_shape: Sequence[int], width: int = 32, activation: str = "tanh", kernel_size: int = 3):
        super().__init__()
        channels, height, breadth = state_shape
        restore = tuple(1 - n % 2 for n in (height, breadth))  # stride-2 'same' conv: n -> ceil(n / 2)
        self.convs = (
            TimeConv(channels, width, kernel_size),
            TimeConv(width, width, kernel_size, stride=2),
            TimeConv(width, width, kernel_size, stride=2, transposed=True, output_padding=restore),
            TimeConv(width, channels, kernel_size),
        )
        self.state_shape = (channels, height, breadth)
        self.num_weights = sum(math.prod(conv.weight_shape) + conv.out_channels for conv in self.convs)
        self.activation = ACTIVATIONS[activation]

    def layers(self, w: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(filters [S, *weight_shape], bias [S, out]) of each convolution, views into w [S, P]."""
        sizes = [n for conv in self.convs for n in (math.prod(conv.weight_shape), conv.out_channels)]
        chunks = w.split(sizes, dim=-1)
        return [(chunks[2 * i].unflatten(-1, c.weight_shape), chunks[2 * i + 1]) for i, c in enumerate(self.convs)]

    def forward(self, t: torch.Tensor, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        x = h.transpose(0, 1)  # [B, S, C, H, W]: the samples next to the channels they are folded into
        for i, (conv, (weight, bias)) in enumerate(zip(self.convs, self.layers(w), strict=True)):
            x = conv(with_time_channel(self.activation(x) if i else x, t), weight, bias)
        return x.transpose(0, 1)

    def initial_weights(self) -> torch.Tensor:
        """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for filters and biases, fan_in = (in + 1) k^2 (torch.nn.Conv2d's
        default; the paper states no initialisation)."""
        parts = []
        for conv in self.convs:
            bound = 1 / math.sqrt(conv.fan_in)
            parts += [torch.empty(n).uniform_(-bound, bound) for n in (math.prod(conv.weight_shape), conv.out_channels)]
        return torch.cat(parts)


class InvertibleDownsampling(nn.Module):
    """The squeeze of Dinh et al. (2016, §3.6): [..., C, H, W] -> [..., 4C, H/2, W/2], each 2x2 patch moved into
    the channels. A permutation of the entries: exactly invertible, norm-preserving and without parameters."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, breadth = x.shape[-2:]
        if height % 2 or breadth % 2:
            raise ValueError(f"the squeeze needs an even height and width, got {height}x{breadth}")
        x = x.unflatten(-1, (breadth // 2, 2)).unflatten(-3, (height // 2, 2))  # [..., C, H/2, 2, W/2, 2]
        return x.movedim((-3, -1), (-4, -3)).flatten(-5, -3)  # [..., C, 2, 2, H/2, W/2] -> [..., 4C, H/2, W/2]


class SDEBlock(SDEBNN):
    """One SDE-BNN block of a multi-scale network: `SDEBNN`'s weight SDE, drift net and w_0 without its input and
    output layers, started from one hidden state per weight sample (the previous block's output).
    `forward(h [S, B, *state_shape])` -> (h_1 [S, B, ...], KL [S])."""

    stochastic = True

    def __init__(self, dynamics: HiddenDynamics, prior: OrnsteinUhlenbeckPrior, drift_widths: Sequence[int], **options):
        super().__init__(nn.Identity(), dynamics, nn.Identity(), prior, drift_widths, **options)

    def forward(self, h: torch.Tensor, entropy: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        num_samples = h.shape[0]
        w0, kl_w0 = self.initial_weights(num_samples)
        # AugmentedWeightSDE's state [w, h, KL = 0, clock = 0], with sample s's own h
        y0 = torch.cat([w0, h.flatten(1), w0.new_zeros(num_samples, 2)], dim=-1)
        y1 = integrate(self.sde, y0, self.solver, brownian_motion(self.sde, y0, self.solver, entropy))
        state = self.sde.split(y1)
        return state.h.view_as(h), state.kl.squeeze(-1) + kl_w0


Block = SDEBlock | WeightODEBlock


class MultiScaleNetwork(nn.Module):
    """x [B, C, H, W] -> `augment` zero channels -> stages of blocks with a squeeze between stages -> flatten ->
    `head`. `forward(x, num_samples, entropy)` -> (logits [S, B, K], KL [S]), SDEBNN's interface; a network
    of point estimates only runs one sample. `entropy` fixes the Brownian motions (block k uses entropy + k)."""

    def __init__(self, stages: Sequence[Sequence[Block]], head: nn.Module, augment: int = 2):
        super().__init__()
        self.augment = ZeroAugment(augment, dim=1)
        self.stages = nn.ModuleList(nn.ModuleList(blocks) for blocks in stages)
        self.squeeze = InvertibleDownsampling()
        self.head = head
        self.stochastic = any(block.stochastic for blocks in stages for block in blocks)

    def forward(
        self, x: torch.Tensor, num_samples: int = 1, entropy: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        samples = num_samples if self.stochastic else 1
        h = self.augment(x).expand(samples, -1, -1, -1, -1)
        kl = h.new_zeros(samples)
        index = 0
        for i, blocks in enumerate(self.stages):
            h = self.squeeze(h) if i else h
            for block in blocks:
                h, block_kl = block(h, None if entropy is None else entropy + index)
                kl, index = kl + block_kl, index + 1
        return self.head(h.flatten(2)), kl


@dataclass(frozen=True)
class ImageSetting:
    """A Table 2 column of an image model (SDE-BNN paper App. B); shrink `blocks`, `width` and `drift_widths` for
    CPU runs."""

    image_shape: tuple[int, int, int]  # (C, H, W) of the data
    blocks: tuple[int, ...] = (1,)  # "# blocks" per stage
    width: int = 32  # "Drift f_x dim."
    drift_widths: tuple[int, ...] = ()  # "Drift f_w dim."
    sigma: float = 0.0  # "Diffusion sigma"
    num_steps: int = 20  # "# Solver Steps"
    augment: int = 2  # "Augment dim."
    activation: str = "tanh"  # "Activation"
    num_classes: int = 10

    def stage_shapes(self) -> list[tuple[int, int, int]]:
        """The state (C + augment, H, W) of each stage, each squeeze giving (4C, H/2, W/2)."""
        channels, height, breadth = self.image_shape
        shapes = [(channels + self.augment, height, breadth)]
        for _ in self.blocks[1:]:
            c, h, w = shapes[-1]
            shapes.append((4 * c, h // 2, w // 2))
        return shapes


MNIST, CIFAR10 = (1, 28, 28), (3, 32, 32)
# Table 2. ODEnet's f_x width is not listed (not stated in the paper); our choice: the SDE-BNN's.
TABLE2 = {
    "sdebnn": {
        "mnist": ImageSetting(MNIST, (1,), 32, (1, 64, 1), sigma=0.1),
        "cifar10": ImageSetting(CIFAR10, (2, 2, 2), 64, (2, 128, 2), sigma=0.1),
    },
    "odenet": {
        "mnist": ImageSetting(MNIST, (1,), 32),
        "cifar10": ImageSetting(CIFAR10, (2, 2, 2), 64),
    },
    "hyperodenet": {
        "mnist": ImageSetting(MNIST, (1,), 32, (1, 64, 1)),
        "cifar10": ImageSetting(CIFAR10, (2, 2, 2), 64, (1, 128, 1)),
    },
}


def multiscale(setting: ImageSetting, block: Callable[[ConvHiddenDynamics], Block]) -> MultiScaleNetwork:
    """The network of `setting` with `block(dynamics)` for every block (each with its own weights)."""
    shapes = setting.stage_shapes()
    stages = [
        [block(ConvHiddenDynamics(shape, setting.width, setting.activation)) for _ in range(count)]
        for shape, count in zip(shapes, setting.blocks, strict=True)
    ]
    return MultiScaleNetwork(stages, nn.Linear(math.prod(shapes[-1]), setting.num_classes), setting.augment)


def image_sdebnn(
    setting: ImageSetting = TABLE2["sdebnn"]["mnist"],
    *,
    solver: SolverSettings | None = None,
    kl_estimator: str = "ckl",
    infer_w0: bool = False,
    w0_prior_variance: float = 0.1,
) -> MultiScaleNetwork:
    """SDE-BNN (SDE-BNN paper §5.2) with OU prior sigma = `setting.sigma` and drift net `setting.drift_widths` (tanh) in
    every block. `solver` defaults to fixed-step Euler-Maruyama with `setting.num_steps` steps; `infer_w0` as
    in Table 3."""
    solver = SolverSettings(num_steps=setting.num_steps) if solver is None else solver
    prior = OrnsteinUhlenbeckPrior(setting.sigma)
    options = {"solver": solver, "kl_estimator": kl_estimator, "infer_w0": infer_w0}
    return multiscale(
        setting,
        lambda dynamics: SDEBlock(
            dynamics, prior, setting.drift_widths, drift_activation=setting.activation,
            w0_prior_variance=w0_prior_variance, **options,
        ),
    )  # fmt: skip


def image_weight_odenet(
    setting: ImageSetting,
    *,
    hyper: bool,
    mean_field: bool = False,
    prior_variance: float = 0.01,
    initial_log_std: float = -4.0,
) -> MultiScaleNetwork:
    """ODEnet (`hyper=False`; SDE-BNN paper §5): constant weights w_0 in every block; HyperODEnet (`hyper=True`;
    Tables 1, 2): dw/dt = NN_phi(w, t) with drift net `setting.drift_widths`, no noise. `mean_field`: their MFVI
    variants (§5), q(w_0) (and q(phi) for HyperODEnet) mean-field against N(0, prior_variance I)."""
    return multiscale(
        setting,
        lambda dynamics: WeightODEBlock(
            dynamics, setting.num_steps, setting.drift_widths if hyper else None, setting.activation,
            mean_field_w0=mean_field, mean_field_drift=mean_field and hyper,
            prior_variance=prior_variance, initial_log_std=initial_log_std,
        ),
    )  # fmt: skip

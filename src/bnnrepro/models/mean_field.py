"""Mean-field variational inference over a network's layers (Bayes by backprop, Blundell et al. 2015): the
MFVI ResNet32 baseline of SDE-BNN Table 1 (Xu et al. 2022, §5).

Each weight and bias has q = N(mean, std^2), independent of the others, against the prior N(0, prior_variance).
Neither the prior nor q's initialisation is stated in the paper; the defaults are the authors' `brax.MeanField`:
prior N(0, 0.1^2) and log-std starting at -4, with the closed-form KL instead of their single-sample
log q - log p (same expectation, no variance). Each forward pass of a layer draws its weights anew by
reparameterisation (weight = mean + std * eps, eps ~ N(0, I)), so one pass of a network is one sample of q.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from bnnrepro.distributions import gaussian_kl, gaussian_sample

PRIOR_VARIANCE = 0.01  # N(0, 0.1^2), the authors' code (`xwinxu/bayeSDE`, `brax/_impl/brax.py` brax.MeanField)
INITIAL_LOG_STD = -4.0  # the authors' code (`xwinxu/bayeSDE`, `brax/_impl/brax.py` brax.MeanField)


class MeanField:
    """Mixin for a torch layer whose `weight` and `bias` become the means of q, with log-stds beside them."""

    weight: nn.Parameter
    bias: nn.Parameter | None

    def init_posterior(self, prior_variance: float, initial_log_std: float) -> None:
        self.prior_variance = prior_variance
        self.weight_log_std = nn.Parameter(torch.full_like(self.weight, initial_log_std))
        log_std = None if self.bias is None else nn.Parameter(torch.full_like(self.bias, initial_log_std))
        self.register_parameter("bias_log_std", log_std)

    def sample(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight, bias) ~ q by reparameterisation."""
        weight = gaussian_sample(self.weight, self.weight_log_std, self.weight.shape)
        if self.bias is None:
            return weight, None
        return weight, gaussian_sample(self.bias, self.bias_log_std, self.bias.shape)

    def kl(self) -> torch.Tensor:
        """KL(q || p) of this layer's weights and bias."""
        kl = gaussian_kl(self.weight, self.weight_log_std, self.prior_variance)
        return kl if self.bias is None else kl + gaussian_kl(self.bias, self.bias_log_std, self.prior_variance)


class MeanFieldLinear(MeanField, nn.Linear):
    """nn.Linear with q(W, b) mean-field Gaussian (means initialised as nn.Linear's weights)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        prior_variance: float = PRIOR_VARIANCE,
        initial_log_std: float = INITIAL_LOG_STD,
    ):
        super().__init__(in_features, out_features, bias)
        self.init_posterior(prior_variance, initial_log_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, *self.sample())


class MeanFieldConv2d(MeanField, nn.Conv2d):
    """nn.Conv2d with q(filters, bias) mean-field Gaussian; `conv_options` are nn.Conv2d's own arguments."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        prior_variance: float = PRIOR_VARIANCE,
        initial_log_std: float = INITIAL_LOG_STD,
        **conv_options,
    ):
        super().__init__(in_channels, out_channels, kernel_size, **conv_options)
        self.init_posterior(prior_variance, initial_log_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv_forward(x, *self.sample())


def mean_field_layer(layer: nn.Linear | nn.Conv2d, prior_variance: float, initial_log_std: float) -> MeanField:
    """The mean-field counterpart of `layer`, its weights and bias as the means."""
    options = {"prior_variance": prior_variance, "initial_log_std": initial_log_std}
    if isinstance(layer, nn.Linear):
        new = MeanFieldLinear(layer.in_features, layer.out_features, layer.bias is not None, **options)
    else:
        conv = {
            "stride": layer.stride, "padding": layer.padding, "dilation": layer.dilation, "groups": layer.groups,
            "bias": layer.bias is not None, "padding_mode": layer.padding_mode,
        }  # fmt: skip
        new = MeanFieldConv2d(layer.in_channels, layer.out_channels, layer.kernel_size, **options, **conv)
    new.load_state_dict(layer.state_dict(), strict=False)  # the means; the log-stds keep initial_log_std
    return new.to(layer.weight)


def to_mean_field(
    model: nn.Module, prior_variance: float = PRIOR_VARIANCE, initial_log_std: float = INITIAL_LOG_STD
) -> nn.Module:
    """Replace every nn.Linear and nn.Conv2d inside `model` (in place) by its mean-field layer, so that the MFVI
    baselines keep the deterministic architecture and its initialisation as q's means; returns `model`."""
    for name, child in model.named_children():
        if isinstance(child, (nn.Linear, nn.Conv2d)) and not isinstance(child, MeanField):
            setattr(model, name, mean_field_layer(child, prior_variance, initial_log_std))
        else:
            to_mean_field(child, prior_variance, initial_log_std)
    return model


def mean_field_layers(model: nn.Module) -> list[MeanField]:
    return [module for module in model.modules() if isinstance(module, MeanField)]


def mean_field_kl(model: nn.Module) -> torch.Tensor:
    """KL(q || p) summed over the mean-field layers of `model` (0 without any)."""
    layers = mean_field_layers(model)
    if not layers:
        return torch.zeros(())
    return torch.stack([layer.kl() for layer in layers]).sum()


class SampledNetwork(nn.Module):
    """A plain network (x -> logits) in SDEBNN's interface `forward(x, num_samples)` -> (logits [S, B, K], KL [S]):
    S passes, each with its own draw of the mean-field layers' weights, and their summed KL. Without mean-field
    layers (a point estimate) one pass and KL 0."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, num_samples: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        samples = num_samples if mean_field_layers(self.model) else 1
        logits = torch.stack([self.model(x) for _ in range(samples)])
        return logits, mean_field_kl(self.model).to(logits).expand(samples)

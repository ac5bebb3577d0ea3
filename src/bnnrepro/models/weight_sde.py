"""SDE-BNN: a continuous-depth network whose weights follow an SDE in depth (Xu et al. 2022, §3, eqs. 9-12).

The pieces, in the order the model uses them: the drift network NN_phi and the posterior drift f_q (eq. 10);
hidden dynamics f_h(t, h, w) that read their weights from the flat weight state (eq. 11); the initial
weights w_0 (a point estimate, or Gaussian as in Table 3); the augmented SDE over [w, h, KL] that one solver
call integrates over t in [0, 1] (eq. 11, §3); the model (input layer -> SDE block -> output layer); and the
per-datum negative ELBO.

Shapes: S weight-path samples and B inputs. All examples of a minibatch share their sample's weight path
(as the authors' code, `xwinxu/bayeSDE` `brax/_impl/brax.py`; not stated in the paper); hidden states are
[S, B, *state_shape] and weights [S, num_weights].
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from bnnrepro.distributions import gaussian_kl
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.models.batched_mlp import batched_mlp, layer_sizes
from bnnrepro.models.weight_sde_solver import SolverSettings, brownian_motion, integrate

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "swish": F.silu,
    "softplus": F.softplus,
    "relu": F.relu,
}
KL_ESTIMATORS = ("ckl", "fmc", "stl")


def with_time(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """[x, t]: the depth t appended as one more feature, the time conditioning of every layer (SDE-BNN paper §5)."""
    t = torch.as_tensor(t, dtype=x.dtype, device=x.device)
    return torch.cat([x, t.expand(*x.shape[:-1], 1)], dim=-1)


class DriftNet(nn.Module):
    """NN_phi(w, t) of eq. 10: an MLP R^P -> widths -> R^P on [w, t] (t appended to every layer's input).

    `widths` is Table 2's "Drift f_w dim.": (1, 64, 1) for MNIST, (2, 128, 2) for CIFAR-10, (32,) for 1D. The
    last layer starts at zero, so NN_phi = 0 and the posterior equals the prior at initialisation (SDE-BNN paper §5).
    """

    def __init__(self, num_weights: int, widths: Sequence[int], activation: str = "tanh"):
        super().__init__()
        sizes = layer_sizes(num_weights, widths, num_weights)
        self.layers = nn.ModuleList(nn.Linear(n_in + 1, n_out) for n_in, n_out in sizes)
        nn.init.zeros_(self.layers[-1].weight)
        nn.init.zeros_(self.layers[-1].bias)
        self.activation = ACTIVATIONS[activation]

    def forward(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        x = w
        for i, layer in enumerate(self.layers):
            x = layer(with_time(self.activation(x) if i else x, t))
        return x


class PosteriorDrift(nn.Module):
    """f_q(w, t) = NN_phi(w, t) + f_p(w, t) = NN_phi(w, t) - w, the approximate posterior's drift.

    The SDE-BNN paper's eq. 10 prints NN - f_p; the sign above (the workshop paper's eq. 11, the authors' code,
    `xwinxu/bayeSDE` `brax/_impl/brax.py`) is the one for which q equals the prior when NN_phi = 0, as the paper's §3
    says. The diffusion is the prior's sigma I (eq. 4).
    """

    def __init__(self, prior: OrnsteinUhlenbeckPrior, net: nn.Module):
        super().__init__()
        self.prior, self.net = prior, net

    def forward(self, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self.drift_and_control(t, w)[0]

    def drift_and_control(self, t: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(f_q, u) with u = (f_q - f_p) / sigma = NN_phi / sigma (eq. 6 with the sign of App. A.1, eq. 20)."""
        residual = self.net(t, w)
        return residual + self.prior.drift(t, w), residual / self.prior.sigma

    def control(self, t: torch.Tensor, w: torch.Tensor, stop_gradient: bool = False) -> torch.Tensor:
        """u(w, t, phi), or u(w, t, stop_gradient(phi)) of eq. 12: phi held constant, gradients still flow
        through w."""
        if not stop_gradient:
            return self.net(t, w) / self.prior.sigma
        frozen = {name: p.detach() for name, p in self.net.named_parameters()}
        return functional_call(self.net, frozen, (t, w)) / self.prior.sigma


class HiddenDynamics(nn.Module, ABC):
    """f_h(t, h, w) of eq. 11, the hidden units' ODE, with its weights read from the flat weight state w.

    An implementation sets `num_weights` (the length P of w) and `state_shape` (one example's hidden state,
    e.g. (d,) or (C, H, W)) and defines:

    * `forward(t, h, w)`: dh/dt for h [S, B, *state_shape] and w [S, P]; sample s of h uses the weights w[s].
      Vectorise over S (batched matmuls, grouped convolutions), no Python loop over samples.
      Time-conditional: t (a 0-dim tensor) enters every layer (appended feature or channel, SDE-BNN paper §5).
    * `initial_weights()`: a [P] initial value for w_0 (learned from there).
    """

    num_weights: int
    state_shape: tuple[int, ...]

    @abstractmethod
    def forward(self, t: torch.Tensor, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor: ...

    @abstractmethod
    def initial_weights(self) -> torch.Tensor: ...


class MLPHiddenDynamics(HiddenDynamics):
    """Fully connected f_h: dim -> widths -> dim on [h, t] at every layer (Table 2, 1D: one hidden layer of
    32 units, swish). Each layer's weights sit in w as [W (out x (in + 1)), b (out)], layer after layer."""

    def __init__(self, dim: int, widths: Sequence[int] = (32,), activation: str = "swish"):
        super().__init__()
        self.shapes = [(n_out, n_in + 1) for n_in, n_out in layer_sizes(dim, widths, dim)]
        self.num_weights = sum(n_out * n_in + n_out for n_out, n_in in self.shapes)
        self.state_shape = (dim,)
        self.activation = ACTIVATIONS[activation]

    def layers(self, w: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(W [S, out, in + 1], b [S, out]) of each layer, views into w [S, P]."""
        chunks = w.split([n for n_out, n_in in self.shapes for n in (n_out * n_in, n_out)], dim=-1)
        return [(chunks[2 * i].unflatten(-1, shape), chunks[2 * i + 1]) for i, shape in enumerate(self.shapes)]

    def forward(self, t: torch.Tensor, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        layers = self.layers(w)
        weights, biases = [weight.mT for weight, _ in layers], [bias.unsqueeze(1) for _, bias in layers]
        return batched_mlp(h, weights, biases, self.activation, lambda x: with_time(x, t))

    def initial_weights(self) -> torch.Tensor:
        """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases, torch.nn.Linear's default."""
        bounds = [1 / math.sqrt(n_in) for _, n_in in self.shapes for _ in range(2)]
        sizes = [n for n_out, n_in in self.shapes for n in (n_out * n_in, n_out)]
        return torch.cat([torch.empty(n).uniform_(-b, b) for n, b in zip(sizes, bounds, strict=True)])


class ZeroAugment(nn.Module):
    """Append `extra` zero features (dim=-1) or channels (dim=1): ANODE augmentation, 2 in every experiment
    (Table 2 "Augment dim."); without it a 1D SDE-BNN can only draw monotonic functions (SDE-BNN paper App. C.1)."""

    def __init__(self, extra: int = 2, dim: int = -1):
        super().__init__()
        self.extra, self.dim = extra, dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = list(x.shape)
        shape[self.dim] = self.extra
        return torch.cat([x, x.new_zeros(shape)], dim=self.dim)


class PointInitialWeights(nn.Module):
    """w_0 as a learned point estimate, the main method (SDE-BNN paper eq. 8, "w_{t0} is learned"); no KL."""

    def __init__(self, w0: torch.Tensor):
        super().__init__()
        self.w0 = nn.Parameter(w0.clone())

    def forward(self, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(w_0 [S, P], KL [S] = 0)."""
        return self.w0.expand(num_samples, -1), self.w0.new_zeros(num_samples)


class GaussianInitialWeights(nn.Module):
    """w_0 inferred (Table 3, App. C.2): q(w_0) = N(mean, diag std^2) against the prior N(0, prior_variance I).

    The log-std starts at -4 (the authors' code, `xwinxu/bayeSDE` `examples/jax/sdebnn_classification.py`; not
    stated in the paper). The KL is the closed form, not the authors' single-sample log q - log p.
    """

    def __init__(self, mean: torch.Tensor, prior_variance: float, log_std: float = -4.0):
        super().__init__()
        self.mean = nn.Parameter(mean.clone())
        self.log_std = nn.Parameter(torch.full_like(mean, log_std))
        self.prior_variance = prior_variance

    def forward(self, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(w_0 ~ q [S, P] by reparameterisation, KL(q(w_0) || p(w_0)) [S])."""
        std = self.log_std.exp()
        w0 = self.mean + std * torch.randn(num_samples, self.mean.numel(), dtype=std.dtype, device=std.device)
        return w0, gaussian_kl(self.mean, self.log_std, self.prior_variance, std).expand(num_samples)


class State(NamedTuple):
    """The augmented state split into weights [S, P], flat hidden units [S, B * prod(state_shape)],
    running KL [S, 1] and clock [S, 1]."""

    w: torch.Tensor
    h: torch.Tensor
    kl: torch.Tensor
    clock: torch.Tensor


class AugmentedWeightSDE(nn.Module):
    """The augmented SDE of eq. 11 plus the KL integrand (SDE-BNN paper §3), integrated in one solver call:

        dw  = f_q(w, t) dt + sigma dB            (eqs. 4, 9, 10)
        dh  = f_h(t, h, w) dt                    (no noise on h, SDE-BNN paper §5.1)
        dKL = 1/2 ||u(w, t)||^2 dt [+ u dB]      (eqs. 5, 6; the bracket for fmc/stl, eqs. 20, 12)
        dc  = dt                                 (a clock: c(1) = 1 checks that the solver reached t = 1)

    with u = (f_q - f_p) / sigma = NN_phi / sigma. `kl_estimator` picks how the KL is estimated (§4, Fig. 4):

    * "ckl": the integrand only (Li et al. 2020). torchsde interface: noise_type "diagonal", sde_type "ito",
      f(t, y) and g(t, y); h, KL and clock get zero diffusion.
    * "fmc": adds the martingale int u(w, t, phi) dB (App. A eq. 20, "full Monte Carlo").
    * "stl": adds int u(w, t, stop_gradient(phi)) dB (eq. 12, sticking the landing); phi is held constant
      there, w is not. Both dB terms are Ito integrals over the SAME increments that drive w, which the
      diagonal noise of torchsde cannot express: these two go through `weight_noise_prod` and the fixed-step
      Euler-Maruyama loop of `bnnrepro.models.weight_sde_solver`.
    """

    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self, posterior: PosteriorDrift, dynamics: HiddenDynamics, kl_estimator: str = "ckl"):
        super().__init__()
        if kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {kl_estimator!r}")
        self.posterior, self.dynamics, self.kl_estimator = posterior, dynamics, kl_estimator
        # drift evaluations in training mode (forward solves, and the adjoint's reverse solves): the NFE, the
        # solvers' cost axis (SDE-BNN paper Figs. 14, 15); a buffer, so that a resumed run keeps counting
        self.register_buffer("training_evaluations", torch.zeros((), dtype=torch.long))
        self.diffusion: torch.Tensor | None = None  # g's value (`g`)

    @property
    def num_weights(self) -> int:
        return self.dynamics.num_weights

    def initial_state(self, w0: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        """y_0 = [w_0, h_0 (the same for every sample), KL = 0, clock = 0] from w0 [S, P] and h0 [B, ...]."""
        zeros = w0.new_zeros(w0.shape[0], 2)
        return torch.cat([w0, h0.flatten().expand(w0.shape[0], -1), zeros], dim=-1)

    def split(self, y: torch.Tensor) -> State:
        hidden = y.shape[-1] - self.num_weights - 2
        return State(*y.split([self.num_weights, hidden, 1, 1], dim=-1))

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Drift [f_q, f_h, 1/2 ||u||^2, 1] of the augmented state."""
        if self.training:
            self.training_evaluations += 1
        state = self.split(y)
        drift_w, u = self.posterior.drift_and_control(t, state.w)
        h = state.h.view(y.shape[0], -1, *self.dynamics.state_shape)
        drift_h = self.dynamics(t, h, state.w).flatten(1)
        kl_rate = 0.5 * u.square().sum(dim=-1, keepdim=True)
        return torch.cat([drift_w, drift_h, kl_rate, torch.ones_like(state.clock)], dim=-1)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Diagonal diffusion [sigma, 0, 0, 0] (the "ckl" estimator). It depends on neither t nor y (eq. 9: g = sigma
        I), so it is built once per state shape, dtype and device and handed out again (nothing writes to it)."""
        cached = self.diffusion
        if cached is None or cached.shape != y.shape or cached.dtype != y.dtype or cached.device != y.device:
            w = y[:, : self.num_weights]
            zeros = y.new_zeros(y.shape[0], y.shape[1] - w.shape[1])
            self.diffusion = cached = torch.cat([self.posterior.prior.diffusion(t, w), zeros], -1)
        return cached

    def weight_noise_prod(self, t: torch.Tensor, y: torch.Tensor, dw_noise: torch.Tensor) -> torch.Tensor:
        """g(y) dB for the weights' increments dB [S, P]: [sigma dB, 0, u . dB (fmc/stl) or 0, 0]."""
        w = y[:, : self.num_weights]
        if self.kl_estimator == "ckl":
            martingale = y.new_zeros(y.shape[0], 1)
        else:
            u = self.posterior.control(t, w, stop_gradient=self.kl_estimator == "stl")
            martingale = (u * dw_noise).sum(dim=-1, keepdim=True)
        diffusion_w = self.posterior.prior.diffusion(t, w) * dw_noise
        hidden = y.new_zeros(y.shape[0], y.shape[1] - w.shape[1] - 2)
        return torch.cat([diffusion_w, hidden, martingale, torch.zeros_like(martingale)], dim=-1)


class SDEBNN(nn.Module):
    """input layer -> SDE-BNN block over depth [0, 1] -> output layer (SDE-BNN paper §3, §5).

    `forward(x, num_samples)` draws S weight paths from q (one per sample, shared by the minibatch) and
    returns the outputs [S, B, out] and the KL [S] (the path KL, plus KL(q(w_0) || p(w_0)) with `infer_w0`).
    """

    def __init__(
        self,
        input_layer: nn.Module,
        dynamics: HiddenDynamics,
        output_layer: nn.Module,
        prior: OrnsteinUhlenbeckPrior,
        drift_widths: Sequence[int],
        drift_activation: str = "tanh",
        solver: SolverSettings | None = None,
        kl_estimator: str = "ckl",
        infer_w0: bool = False,
        w0_prior_variance: float = 0.1,
    ):
        super().__init__()
        self.input_layer, self.output_layer = input_layer, output_layer
        self.solver = SolverSettings() if solver is None else solver
        net = DriftNet(dynamics.num_weights, drift_widths, drift_activation)
        self.sde = AugmentedWeightSDE(PosteriorDrift(prior, net), dynamics, kl_estimator)
        w0 = dynamics.initial_weights()
        self.initial_weights = GaussianInitialWeights(w0, w0_prior_variance) if infer_w0 else PointInitialWeights(w0)

    def forward(
        self, x: torch.Tensor, num_samples: int = 1, entropy: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(outputs [S, B, out], KL [S]); `entropy` fixes the Brownian motion (same entropy, same paths)."""
        h0 = self.input_layer(x)
        w0, kl_w0 = self.initial_weights(num_samples)
        y0 = self.sde.initial_state(w0, h0)
        y1 = integrate(self.sde, y0, self.solver, brownian_motion(self.sde, y0, self.solver, entropy))
        state = self.sde.split(y1)
        outputs = self.output_layer(state.h.reshape(-1, *self.sde.dynamics.state_shape))
        return outputs.unflatten(0, (num_samples, -1)), state.kl.squeeze(-1) + kl_w0


def mlp_sdebnn(
    in_features: int,
    out_features: int,
    *,
    width: int = 32,
    drift_widths: Sequence[int] = (32,),
    sigma: float = 0.2,
    augment: int = 2,
    activation: str = "swish",
    **options,
) -> SDEBNN:
    """An SDE-BNN with fully connected dynamics on the flattened input plus `augment` zero dims and a linear
    readout; the defaults are Table 2's 1D regression column (f_x 32, f_w 32, sigma 0.2, swish, aug 2).
    `options` go to SDEBNN (solver, kl_estimator, infer_w0, ...); the drift net uses `activation` too."""
    dim = in_features + augment
    return SDEBNN(
        nn.Sequential(nn.Flatten(), ZeroAugment(augment)),
        MLPHiddenDynamics(dim, (width,), activation),
        nn.Linear(dim, out_features),
        OrnsteinUhlenbeckPrior(sigma),
        drift_widths,
        drift_activation=activation,
        **options,
    )


def negative_elbo(
    log_likelihood: torch.Tensor, kl: torch.Tensor, num_data: int, kl_weight: float = 1.0
) -> torch.Tensor:
    """-(N/B sum_b E_q log p(y_b | x_b, w) - kl_weight E_q KL) / N: the minibatch negative ELBO per datum
    (ELBO_inf below eq. 11; workshop paper eq. 3) from log-likelihoods [S, B] and KLs [S]. `kl_weight` is Table 2's
    "KL coef." (1 = the true ELBO; not given for SDE-BNN in Table 2; the authors' JAX code, `xwinxu/bayeSDE`
    `examples/jax/sdebnn_classification.py`, uses 1e-3)."""
    return -log_likelihood.mean() + kl_weight * kl.mean() / num_data

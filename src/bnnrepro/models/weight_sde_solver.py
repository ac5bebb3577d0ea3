"""Solving the augmented SDE-BNN state over the whole depth interval [0, 1] in one solver call (SDE-BNN paper,
Xu et al. 2022, §3, eq. 11).

Both integrators are driven by the weights' Brownian motion, with one channel per weight (`brownian_motion`): the
path of a torchsde `BrownianInterval`, sampled by `bnnrepro.models.brownian.BrownianBridgeTree` where no Levy
area is needed; which integrator runs depends on the SDE's KL estimator:

* `ckl` (the KL integrand only, Li et al. 2020): torchsde with diagonal noise, `sdeint` (backprop through
  the solver) or `sdeint_adjoint` (the stochastic adjoint, SDE-BNN paper App. C.8), fixed or adaptive steps, any of
  `euler`, `milstein`, `srk`. The Brownian motion is zero-padded to the whole state (`ZeroPaddedBrownian`).
* `fmc` / `stl` (eq. 20 / eq. 12): the KL state also carries the martingale int u dB, driven by the SAME
  Brownian increments as the weights. torchsde's diagonal noise gives each state component its own
  Brownian motion, and its general-noise path needs the dense (state x weights) diffusion matrix (for its
  shape check and for the adjoint), which is out of reach for 10^4-10^5 weights. These estimators use a
  fixed-step Ito Euler-Maruyama loop instead (the STL term of eq. 12 is an Ito integral; the paper trained
  its final models with fixed steps, SDE-BNN paper §5).

The state carries a clock (dc/dt = 1), so `integrate` checks that the solver really reached t = 1; the
authors' JAX fixed grid (bayeSDE, `jaxsde/jaxsde/sdeint.py`) stops at t ~ 0.53, which this check rejects.

A `BrownianInterval` is a reference cycle that holds the noise it cached: a training loop should call
`gc.collect(1)` after each step (0.1 ms), or that memory (GPU memory on GPU) waits for a full collection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
import torchsde

from bnnrepro.models.brownian import BrownianBridgeTree

METHODS = ("euler", "milstein", "srk")
CLOCK_TOLERANCE = 1e-4
PAIRED_PATH_RESOLUTION = 1e-6  # the dyadic tree locates query times to this precision (torchsde's `tol`)


class AugmentedSDE(Protocol):
    """What the integrators call of the SDE-BNN's augmented SDE (`bnnrepro.models.weight_sde.AugmentedWeightSDE`,
    which imports this module): besides torchsde's `f` and `g`, the weight count, the KL estimator, the weights'
    noise product g(y) dB_w and the split of the state into (weights, hidden units, KL, clock)."""

    num_weights: int
    kl_estimator: str

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor: ...

    def weight_noise_prod(self, t: torch.Tensor, y: torch.Tensor, dw_noise: torch.Tensor) -> torch.Tensor: ...

    def split(self, y: torch.Tensor) -> tuple[torch.Tensor, ...]: ...


@dataclass(frozen=True)
class SolverSettings:
    """How to integrate over t in [0, 1]: `num_steps` fixed steps of 1/num_steps (Table 2: 10 for 1D, 20 for
    images), or, with `adaptive`, step doubling from dt = 1/num_steps within rtol/atol (with `adjoint`, in the
    forward and the reverse solve alike)."""

    method: str = "euler"
    num_steps: int = 20
    adaptive: bool = False
    rtol: float = 1e-3
    atol: float = 1e-3
    adjoint: bool = False
    paired_paths: bool = False  # the Brownian path a function of the entropy alone (`brownian_motion`)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.num_steps < 1:
            raise ValueError(f"num_steps must be >= 1, got {self.num_steps}")

    @property
    def dt(self) -> float:
        return 1.0 / self.num_steps


def brownian_motion(
    sde: AugmentedSDE, y0: torch.Tensor, settings: SolverSettings, entropy: int | None = None
) -> torchsde.BaseBrownian:
    """The weights' Brownian motion B_t on [0, 1], [num_samples, num_weights]; the same `entropy` gives the same
    path (for paired comparisons, e.g. adjoint vs backprop, or one estimator against another). Without one, the
    entropy is drawn from torch's generator, so that `torch.manual_seed` fixes the paths (torchsde would draw it
    from NumPy's global generator, which nothing seeds: a run's seed would not give the same numbers)."""
    if entropy is None:
        entropy = int(torch.randint(2**31 - 1, ()))
    size = (y0.shape[0], sde.num_weights)
    # By default the interval tree is built for this step size (torchsde issue #109: much faster) and split where
    # the solver queries it, so the same entropy gives another path on another time grid. `paired_paths` samples
    # on torchsde's dyadic tree instead, where the path depends on the entropy alone: solves with other step sizes
    # or tolerances see the same path (test-time solver sweeps, SDE-BNN paper Figs. 6a, 11, 12).
    if settings.paired_paths:
        tree = {"halfway_tree": True, "tol": PAIRED_PATH_RESOLUTION}
    elif settings.method != "srk":  # SRK needs the space-time Levy area, which only BrownianInterval samples
        return BrownianBridgeTree(0.0, 1.0, size, y0.dtype, y0.device, entropy, settings.dt)
    else:
        tree = {"dt": settings.dt}
    return torchsde.BrownianInterval(
        t0=0.0,
        t1=1.0,
        size=size,
        dtype=y0.dtype,
        device=y0.device,
        entropy=entropy,
        **tree,
        levy_area_approximation="space-time" if settings.method == "srk" else "none",
    )


class ZeroPaddedBrownian(torchsde.BaseBrownian):
    """The weights' Brownian motion padded with zeros to the whole augmented state, for torchsde's diagonal noise.

    h, KL and clock have zero diffusion, so their channels need no random numbers: padding them keeps the
    Brownian motion (and its cache) at num_weights channels instead of num_weights + B * hidden units.
    """

    def __init__(self, weights: torchsde.BaseBrownian, state_size: int):
        super().__init__()
        self.weights, self.state_size = weights, state_size

    def __call__(self, ta, tb=None, return_U: bool = False, return_A: bool = False):  # torchsde's signature
        if return_A:
            raise NotImplementedError("no solver used here needs the Levy area A")
        out = self.weights(ta, tb, return_U=return_U)
        return tuple(map(self.pad, out)) if return_U else self.pad(out)

    def pad(self, increment: torch.Tensor) -> torch.Tensor:
        return torch.cat([increment, increment.new_zeros(increment.shape[0], self.state_size - increment.shape[1])], -1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(weights={self.weights!r}, state_size={self.state_size})"

    @property
    def dtype(self) -> torch.dtype:
        return self.weights.dtype

    @property
    def device(self) -> torch.device:
        return self.weights.device

    @property
    def shape(self) -> tuple[int, int]:
        return (self.weights.shape[0], self.state_size)

    @property
    def levy_area_approximation(self) -> str:
        return self.weights.levy_area_approximation


def integrate(
    sde: AugmentedSDE,
    y0: torch.Tensor,
    settings: SolverSettings,
    bm: torchsde.BaseBrownian | None = None,
) -> torch.Tensor:
    """y(1) [num_samples, state] from y(0) = y0, integrating over the whole interval ts = [0, 1]; `bm` is the
    weights' Brownian motion (`brownian_motion`), a fresh one by default."""
    bm = brownian_motion(sde, y0, settings) if bm is None else bm
    if sde.kl_estimator == "ckl":
        solve = torchsde.sdeint_adjoint if settings.adjoint else torchsde.sdeint
        ts = torch.tensor([0.0, 1.0], dtype=y0.dtype, device=y0.device)
        options = {"adaptive": settings.adaptive, "rtol": settings.rtol, "atol": settings.atol}
        if settings.adjoint:  # adaptive steps in the reverse (adjoint) solve too (SDE-BNN paper Fig. 14: "both modes")
            options |= {f"adjoint_{key}": value for key, value in options.items()}
        padded = ZeroPaddedBrownian(bm, y0.shape[1])
        y1 = solve(sde, y0, ts, bm=padded, method=settings.method, dt=settings.dt, **options)[-1]
    else:
        if settings.adjoint or settings.adaptive or settings.method != "euler":
            raise ValueError(
                f"the {sde.kl_estimator!r} KL estimator needs the weights' Brownian increments in the KL state: "
                "use fixed-step method='euler' without the adjoint"
            )
        y1 = euler_maruyama(sde, y0, settings.num_steps, bm)
    reached = sde.split(y1).clock
    if not torch.allclose(reached, torch.ones_like(reached), atol=CLOCK_TOLERANCE, rtol=0):
        raise RuntimeError(f"the SDE solver stopped at t = {reached.min().item():.4g} instead of t = 1")
    return y1


def euler_maruyama(sde: AugmentedSDE, y0: torch.Tensor, num_steps: int, bm: torchsde.BaseBrownian) -> torch.Tensor:
    """Ito Euler-Maruyama (App. A eq. 13) on t_i = i / num_steps: y += f dt + g(y) dB_w, with the weights'
    increments dB_w = bm(t_i, t_{i+1}) also driving the KL's martingale term."""
    times = torch.linspace(0.0, 1.0, num_steps + 1, dtype=y0.dtype, device=y0.device)
    y = y0
    for t0, t1 in zip(times[:-1], times[1:], strict=True):
        y = y + sde.f(t0, y) * (t1 - t0) + sde.weight_noise_prod(t0, y, bm(t0, t1))
    return y

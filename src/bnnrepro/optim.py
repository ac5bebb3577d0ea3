"""Adam (Kingma & Ba 2015) and SGD with momentum over parameter groups that may grow during training, and the
epoch-wise learning-rate schedule of the training loop.

The same updates as `torch.optim.Adam` with its defaults and `torch.optim.SGD` (dampening 0, no Nesterov); tests
compare them on the same inputs. We keep our own because every `torch.optim.Optimizer` method imports
`torch._dynamo` on first use, about 1.5 s per training job on 2 cores, which would dominate the start-up of the many
short jobs of a study. Parameters appended to a group's "params" list later (UDN Algorithm 1) get fresh state.
A step updates a group's parameters together with torch's multi-tensor (`_foreach_*`) operations, as torch's own
optimisers do by default: the same arithmetic per tensor, a few dispatches per group instead of per parameter (the
small networks of the UCI and toy studies spent about a sixth of their training in per-parameter updates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

OPTIMIZERS = ("adam", "sgd")
"""The values of optim.name."""


class Optimizer:
    """What Adam and SGD share: the groups (each remembers the lr it was built with as "base_lr", which the
    learning-rate schedule scales), a step that leaves a parameter without a gradient (e.g. a layer beyond the
    support of q(l)) and its state untouched, a state_dict keyed by parameter position, and optional clipping of
    the gradient's norm before each step (`max_grad_norm`, optim.clip_grad_norm)."""

    def __init__(self, param_groups: list[dict], max_grad_norm: float | None = None):
        self.param_groups = [
            {**group, "params": list(group["params"]), "base_lr": group["lr"]} for group in param_groups
        ]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
        self.max_grad_norm = max_grad_norm

    def _parameters(self) -> list[torch.Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self) -> None:
        for p in self._parameters():
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        if self.max_grad_norm is not None:
            self.clip_gradients(self.max_grad_norm)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update(params, group)

    def clip_gradients(self, max_norm: float) -> None:
        """Scale the gradients of all parameters together so that their joint 2-norm is at most `max_norm`, as
        `torch.nn.utils.clip_grad_norm_` (factor max_norm / (norm + 1e-6) when below 1; a non-finite norm makes
        the gradients non-finite, which the training loop reports)."""
        gradients = [p.grad for p in self._parameters() if p.grad is not None]
        if not gradients:
            return
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in gradients]))
        factor = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
        for g in gradients:
            g.mul_(factor)

    def _update(self, params: list[torch.Tensor], group: dict) -> None:
        """One step of `params` (those of `group` that have a gradient); a parameter's state lives in self.state[p]."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """State keyed by the parameter's position across groups (the order survives a resume), and the lrs."""
        positions = {p: i for i, p in enumerate(self._parameters())}
        return {
            "state": {positions[p]: s for p, s in self.state.items()},
            "lrs": [g["lr"] for g in self.param_groups],
        }

    def load_state_dict(self, state_dict: dict) -> None:
        params = self._parameters()
        self.state = {
            params[i]: {k: v.to(params[i].device) for k, v in s.items()} for i, s in state_dict["state"].items()
        }
        for group, lr in zip(self.param_groups, state_dict["lrs"], strict=True):
            group["lr"] = lr


class Adam(Optimizer):
    """Adam with `torch.optim.Adam`'s defaults (Kingma & Ba 2015, Algorithm 1)."""

    def __init__(
        self,
        param_groups: list[dict],
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        max_grad_norm: float | None = None,
    ):
        super().__init__(param_groups, max_grad_norm)
        self.betas, self.eps = betas, eps

    def _update(self, params: list[torch.Tensor], group: dict) -> None:
        beta1, beta2 = self.betas
        for p in params:
            if p not in self.state:
                self.state[p] = {
                    "step": torch.zeros(()),
                    "exp_avg": torch.zeros_like(p),
                    "exp_avg_sq": torch.zeros_like(p),
                }
        states = [self.state[p] for p in params]
        grads = [p.grad for p in params]
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        torch._foreach_add_([s["step"] for s in states], 1)
        # a parameter added later (UDN) is at an earlier step than the group's others: per-parameter corrections
        steps = [float(s["step"]) for s in states]
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        denoms = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denoms, [(1 - beta2**step) ** 0.5 for step in steps])
        torch._foreach_add_(denoms, self.eps)
        torch._foreach_addcdiv_(params, exp_avgs, denoms, [-group["lr"] / (1 - beta1**step) for step in steps])


class SGD(Optimizer):
    """SGD with momentum and L2 weight decay, as `torch.optim.SGD`: d = grad + weight_decay * p, buffer b = d at a
    parameter's first step and momentum * b + d after, p -= lr * b (He et al. 2016 §3.4; UDN §6.2: momentum 0.9,
    weight decay 1e-4). A group's own "weight_decay" key overrides `weight_decay` (e.g. 0.0 to exempt a
    variational parameter)."""

    def __init__(
        self,
        param_groups: list[dict],
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = None,
    ):
        super().__init__(param_groups, max_grad_norm)
        self.momentum, self.weight_decay = momentum, weight_decay

    def _update(self, params: list[torch.Tensor], group: dict) -> None:
        weight_decay = group.get("weight_decay", self.weight_decay)
        grads = [p.grad for p in params]
        directions = torch._foreach_add(grads, params, alpha=weight_decay) if weight_decay else grads
        if self.momentum:
            pairs = list(zip(params, directions, strict=True))
            continuing = [(self.state[p]["momentum_buffer"], d) for p, d in pairs if p in self.state]
            if continuing:
                buffers, continued = (list(column) for column in zip(*continuing, strict=True))
                torch._foreach_mul_(buffers, self.momentum)
                torch._foreach_add_(buffers, continued)
            for p, d in pairs:
                if p not in self.state:  # a parameter's first step: b = d
                    self.state[p] = {"momentum_buffer": d.clone()}
            directions = [self.state[p]["momentum_buffer"] for p in params]
        torch._foreach_add_(params, directions, alpha=-group["lr"])


def build_optimizer(optim_cfg: Mapping, param_groups: list[dict]) -> Optimizer:
    """The optimiser optim.name (adam | sgd) over `param_groups`; sgd reads optim.momentum and optim.weight_decay,
    which adam refuses when nonzero (our Adam has neither, and a setting that silently does nothing is a trap); both
    clip the gradient's norm at optim.clip_grad_norm unless it is null."""
    name, momentum, weight_decay = optim_cfg["name"], optim_cfg["momentum"], optim_cfg["weight_decay"]
    max_grad_norm = optim_cfg.get("clip_grad_norm")
    if max_grad_norm is not None and (
        isinstance(max_grad_norm, bool)
        or not isinstance(max_grad_norm, int | float)
        or not 0 < max_grad_norm < math.inf
    ):
        raise ValueError(
            f"optim.clip_grad_norm={max_grad_norm!r}: give a positive number (the largest gradient norm a step "
            "uses) or null for no clipping"
        )
    if name == "sgd":
        return SGD(param_groups, momentum=momentum, weight_decay=weight_decay, max_grad_norm=max_grad_norm)
    if name == "adam":
        if momentum or weight_decay:
            raise ValueError(
                f"optim.name=adam ignores optim.momentum ({momentum}) and optim.weight_decay ({weight_decay}); set "
                "them to 0.0, or set optim.name=sgd to use them"
            )
        return Adam(param_groups, max_grad_norm=max_grad_norm)
    raise ValueError(f"optim.name={name!r} is not an optimiser; choose one of {', '.join(OPTIMIZERS)}")


def check_learning_rate_schedule(schedule: Sequence[Mapping] | None) -> None:
    """Raise ValueError naming the bad piece unless `schedule` (optim.lr_schedule) is null or a non-empty list of
    pieces {until_epoch: E, factor: f} with positive, strictly increasing integer E and positive finite f."""
    if schedule is None:
        return
    form = "a list of pieces {until_epoch: E, factor: f} (or null for a constant learning rate)"
    if isinstance(schedule, str | Mapping) or not isinstance(schedule, Sequence) or not schedule:
        raise ValueError(f"optim.lr_schedule={schedule!r}: write it as {form}")
    previous = 0
    for i, piece in enumerate(schedule):
        where = f"optim.lr_schedule[{i}]={piece!r}"
        if not isinstance(piece, Mapping) or set(piece) != {"until_epoch", "factor"}:
            raise ValueError(f"{where}: each piece is a mapping with exactly the keys until_epoch and factor; {form}")
        until, factor = piece["until_epoch"], piece["factor"]
        if isinstance(until, bool) or not isinstance(until, int) or until <= previous:
            raise ValueError(
                f"{where}: until_epoch must be an integer greater than {previous} (the previous piece's, or 0); "
                "order the pieces by increasing until_epoch"
            )
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not (0 < factor < math.inf):
            raise ValueError(f"{where}: factor must be a positive number (it multiplies each group's base lr)")
        previous = until


def scaled_learning_rate_schedule(
    schedule: Sequence[Mapping] | None, reference_epochs: int | None, epochs: int
) -> list[dict] | None:
    """`schedule`, written for runs of `reference_epochs` (optim.lr_schedule_epochs), for a run of `epochs`: each
    until_epoch scaled by epochs / reference_epochs and rounded (at least 1); a piece that no longer ends after the
    previous one is dropped. Unchanged when reference_epochs is null (the small scales' shortened runs keep the
    paper's shape of the schedule, UDN §6.2)."""
    if schedule is None or reference_epochs is None:
        return schedule
    scaled, previous = [], 0
    for piece in schedule:
        until = max(1, round(piece["until_epoch"] * epochs / reference_epochs))
        if until > previous:
            scaled.append({"until_epoch": until, "factor": piece["factor"]})
            previous = until
    return scaled


def learning_rate_factor(schedule: Sequence[Mapping] | None, epoch: int) -> float:
    """The factor of epoch `epoch` (1-based): that of the first piece with epoch <= until_epoch; after the last
    piece its factor holds, as in the UDN authors' code (`ANazaret/unbounded-depth-neural-networks`,
    `experiments/supervised-cifar10.py`; UDN §6.2: epochs 401-500 keep the last lr); 1.0 without a schedule."""
    if schedule is None:
        return 1.0
    piece = next((piece for piece in schedule if epoch <= piece["until_epoch"]), schedule[-1])
    return float(piece["factor"])


def apply_learning_rate_schedule(optimizer: Optimizer, schedule: Sequence[Mapping] | None, epoch: int) -> None:
    """Set each group's lr to its base lr times the schedule's factor at `epoch`."""
    factor = learning_rate_factor(schedule, epoch)
    for group in optimizer.param_groups:
        group["lr"] = group["base_lr"] * factor

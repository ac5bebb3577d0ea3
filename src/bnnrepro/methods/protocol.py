"""What the training job (bnnrepro.train) and the evaluation job (bnnrepro.evaluations) call on a method.

A method is an `nn.Module` with every hook of `Method`; `build_method` checks it (`check_method`). The training
loop, for each epoch: `adapt_architecture` and `training_step` on each minibatch, then `end_epoch`; before each
evaluation (every `train.eval_every` epochs and after the last): `adapt_architecture`, `fit_posterior` on the whole
training set, then `predict`, `noise_variance` and `diagnostics`. A resumed run and the evaluation job call
`prepare_resume` with a checkpoint's state_dict before loading it, so whatever a method fits must live in its
state_dict (parameters or buffers).

Who implements what: a method trained by gradient steps on a loss derives from
`bnnrepro.methods.loss_minimiser.LossMinimiser` (the default step, nothing to fit after it) and writes `loss`;
a method with a fixed architecture derives from `bnnrepro.methods.fixed_architecture.FixedArchitectureMethod`
(one Adam group, nothing to grow or rebuild, no diagnostics). Other methods write their own step: HMC samples
(bnnrepro.methods.hmc), the particle methods apply their update (bnnrepro.methods.repulsive_ensembles); the
Laplace approximation fits its posterior in `fit_posterior` (bnnrepro.methods.laplace).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from bnnrepro.errors import DivergedError
from bnnrepro.optim import Optimizer


class Method(Protocol):
    """The hooks of a method (besides those of `nn.Module`: train/eval, to, state_dict, load_state_dict)."""

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        """The optimiser's parameter groups: the weights at `lr`, any depth posterior at lr * depth_lr_ratio."""
        ...

    def adapt_architecture(self, optimizer: Optimizer) -> None:
        """Grow or rebuild the architecture before a step or an evaluation, adding new parameters to `optimizer`."""
        ...

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """Train on the minibatch (x, y) of a training set of num_train points; return the batch's loss per datum
        (for the log: the epoch's `train_loss` is its mean over the batches). Raise `DivergedError` when the loss
        is not finite (`finite_loss`)."""
        ...

    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Update, after each epoch's steps, what a method refits once per epoch on the whole training set (VBP's
        type-II maximum-likelihood noise precision, thesis §3.3.1; EDL's annealing epoch count)."""
        ...

    def fit_posterior(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Fit, on the whole training set, what the posterior needs beyond the steps (called before each
        evaluation, so that every evaluation, intermediate or last, sees the posterior at the current weights)."""
        ...

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Classification: predictive probabilities [N, C]; regression: S samples of the predictive mean
        function [S, N, D]."""
        ...

    def noise_variance(self) -> float:
        """The variance of the observation noise that the predictive adds to `predict`'s mean-function samples, in
        the training data's units (the evaluation's Gaussian predictive NLL, bnnrepro.train.evaluate); 0.0 where
        the predictive has none (classification, or a regression method without a noise model)."""
        ...

    def diagnostics(self) -> dict[str, float]:
        """Scalars recorded with each evaluation."""
        ...

    def prepare_resume(self, state: dict) -> None:
        """Shape the module like the checkpoint's state_dict `state`, so that it loads."""
        ...


@runtime_checkable
class InputDependentNoise(Protocol):
    """An optional hook of a regression method whose observation noise depends on the input (a heteroscedastic
    likelihood: the deep ensemble's variance heads, Lakshminarayanan et al. 2017 §2.2.1); the evaluation adds it to
    the spread of `predict`'s samples in place of `noise_variance()` (`observation_variance`)."""

    def noise_variance_at(self, x: torch.Tensor) -> torch.Tensor:
        """The predictive's observation-noise variance at each input [N, D], in the training data's units."""
        ...


def observation_variance(method: Method, x: torch.Tensor) -> torch.Tensor | float:
    """The observation-noise variance the predictive adds at inputs x: per input for a method with
    `InputDependentNoise`, else its constant `noise_variance()`."""
    return method.noise_variance_at(x) if isinstance(method, InputDependentNoise) else method.noise_variance()


HOOKS = tuple(name for name, value in vars(Method).items() if callable(value) and not name.startswith("_"))
"""The names of `Method`'s hooks, in the order the protocol declares them."""


def check_method(method: object, module: str) -> None:
    """Raise TypeError unless `method`, returned by `module`'s `build`, is an `nn.Module` with every hook."""
    if not isinstance(method, nn.Module):
        raise TypeError(f"{module}.build returned a {type(method).__name__}; a method must be an nn.Module")
    missing = [hook for hook in HOOKS if not callable(getattr(method, hook, None))]
    if missing:
        raise TypeError(
            f"method {type(method).__name__} of {module} lacks the hook(s) {', '.join(missing)} of "
            f"bnnrepro.methods.protocol.Method (hooks: {', '.join(HOOKS)}); define them, or derive from "
            "bnnrepro.methods.loss_minimiser.LossMinimiser for the default step"
        )


def check_finite_gradients(module: nn.Module) -> None:
    """DivergedError naming the first parameter whose gradient is not finite: an optimiser step would write NaN or
    inf into the weights (a finite loss can have such gradients, e.g. through a solver that overflowed)."""
    gradients = {name: p.grad for name, p in module.named_parameters() if p.grad is not None}
    # a tensor is finite exactly when its smallest and largest entries are (NaN propagates through both): one pass
    # per gradient and one synchronisation, where isfinite(g).all() wrote a mask as large as each gradient
    extremes = [extreme for g in gradients.values() for extreme in torch.aminmax(g)]
    if extremes and not torch.isfinite(torch.stack(extremes)).all():
        name = next(name for name, g in gradients.items() if not torch.isfinite(g).all())
        raise DivergedError(f"the gradient of {name} is not finite")


def finite_loss(loss: torch.Tensor) -> float:
    """The scalar `loss` as a float; DivergedError when it is not finite (the loop then names the run and the fix)."""
    value = loss.item()
    if not math.isfinite(value):
        raise DivergedError(f"the loss is {value}")
    return value

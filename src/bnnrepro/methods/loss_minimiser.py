"""The training step of a method trained by gradient steps on a loss (MAP, maximum likelihood, a negative ELBO)."""

from __future__ import annotations

import abc

import torch
from torch import nn

from bnnrepro.methods.protocol import check_finite_gradients, finite_loss
from bnnrepro.optim import Optimizer


class LossMinimiser(nn.Module, metaclass=abc.ABCMeta):
    """A method whose step is loss -> finite check -> zero_grad -> backward -> finite check -> optimizer.step."""

    @abc.abstractmethod
    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """The scalar objective on the minibatch (x, y) of num_train training points, per datum."""

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """One optimiser step on `loss`; DivergedError before the backward pass when the loss is not finite, and
        before the step when a gradient is not (the weights are left as they were)."""
        loss = self.loss(x, y, num_train)
        value = finite_loss(loss)
        optimizer.zero_grad()
        loss.backward()
        check_finite_gradients(self)
        optimizer.step()
        return value

    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Nothing to refit between epochs."""

    def fit_posterior(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """The trained parameters are the whole state: nothing to fit after the steps."""

"""What the methods with a fixed architecture share: one Adam group for all parameters, nothing to grow or
rebuild."""

from __future__ import annotations

from torch import nn

from bnnrepro.optim import Optimizer


class FixedArchitectureMethod(nn.Module):
    """The hooks of `bnnrepro.methods.protocol.Method` that a method whose architecture does not change while it
    trains shares: one Adam group, nothing to grow or rebuild, no diagnostics, nothing to prepare before a
    checkpoint loads. The step and `fit_posterior` are the method's own (or `LossMinimiser`'s)."""

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return [{"params": list(self.parameters()), "lr": lr}]

    def adapt_architecture(self, optimizer: Optimizer) -> None:
        """The architecture is fixed."""

    def diagnostics(self) -> dict[str, float]:
        return {}

    def prepare_resume(self, state: dict) -> None:
        """Nothing to build before loading a checkpoint."""

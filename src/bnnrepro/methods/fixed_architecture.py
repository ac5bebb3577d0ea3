"""What the methods with a fixed architecture share: one Adam group for all parameters, nothing to grow or
rebuild."""

from __future__ import annotations

from torch import nn

from bnnrepro.optim import Adam


class FixedArchitectureMethod(nn.Module):
    """The training-loop interface of a method whose architecture does not change while it trains."""

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return [{"params": list(self.parameters()), "lr": lr}]

    def adapt_architecture(self, optimizer: Adam) -> None:
        """The architecture is fixed."""

    def diagnostics(self) -> dict[str, float]:
        return {}

    def prepare_resume(self, state: dict) -> None:
        """Nothing to build before loading a checkpoint."""

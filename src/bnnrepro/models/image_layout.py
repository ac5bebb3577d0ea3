"""The layout of the datasets' images for convolutions."""

from __future__ import annotations

import torch


def channels_first(x: torch.Tensor) -> torch.Tensor:
    """The datasets' images, [B, H, W] (grey) or [B, H, W, C], as [B, C, H, W]."""
    return x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2)

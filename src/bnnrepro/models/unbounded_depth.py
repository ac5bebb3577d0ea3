"""A network of unbounded depth with an output head after every hidden layer (Nazaret & Blei 2022, §2, §4).

Hidden layers f_l and heads o_l come from generators and are created lazily as the support of q(l)
grows (Algorithm 1). One forward pass computes h_1..h_m and applies the heads, giving the outputs
Omega_l(x) of every truncation l at the cost of the deepest one ("linear complexity in m(q)", §4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

LayerGenerator = Callable[[int], nn.Module]


def fully_connected_layer(in_features: int, width: int) -> LayerGenerator:
    """f_1 = Linear(in -> width) + ReLU and f_l = Linear(width -> width) + ReLU (UDN App. B.1, B.4)."""

    def layer(depth: int) -> nn.Module:
        return nn.Sequential(nn.Linear(in_features if depth == 1 else width, width), nn.ReLU())

    return layer


def linear_head(width: int, out_features: int) -> LayerGenerator:
    """o_l = Linear(width -> outputs), the head of the fully connected UDN."""
    return lambda depth: nn.Linear(width, out_features)


class UnboundedDepthNetwork(nn.Module):
    """Hidden layers f_1, f_2, ... with heads o_1, o_2, ... (`heads="per_depth"`, the UDN) or one
    head o shared by every depth (`heads="shared"`, finite networks and DUN; every depth's hidden state must then
    have the shape of depth `shared_head_depth`'s)."""

    def __init__(
        self, layer: LayerGenerator, head: LayerGenerator, heads: str = "per_depth", shared_head_depth: int = 1
    ):
        super().__init__()
        if heads not in ("per_depth", "shared"):
            raise ValueError(f"heads must be 'per_depth' or 'shared', got {heads!r}")
        self.make_layer, self.make_head, self.head_mode = layer, head, heads
        self.layers = nn.ModuleList()
        # a shared head reads the hidden state of depth `shared_head_depth` (a finite network's L), whose shape it fits
        self.heads = nn.ModuleList([head(shared_head_depth)] if heads == "shared" else [])
        self.register_buffer("device_anchor", torch.empty(0), persistent=False)  # follows .to(device)

    @property
    def depth(self) -> int:
        """Number of instantiated hidden layers."""
        return len(self.layers)

    def grow_to(self, depth: int) -> list[nn.Parameter]:
        """Create f_{L+1}..f_depth (and their heads); return the new parameters in creation order."""
        new: list[nn.Parameter] = []
        while self.depth < depth:
            self.layers.append(self.make_layer(self.depth + 1).to(self.device_anchor.device))
            new += self.layers[-1].parameters()
            if self.head_mode == "per_depth":
                self.heads.append(self.make_head(self.depth).to(self.device_anchor.device))
                new += self.heads[-1].parameters()
        return new

    def weight_parameters(self) -> list[nn.Parameter]:
        """All weights in the order `grow_to` creates them (the optimiser's order, also after resume)."""
        if self.head_mode == "shared":
            return [*self.heads[0].parameters(), *self.layers.parameters()]
        return [
            p
            for layer, head in zip(self.layers, self.heads, strict=True)
            for p in (*layer.parameters(), *head.parameters())
        ]

    def head(self, depth: int) -> nn.Module:
        return self.heads[0] if self.head_mode == "shared" else self.heads[depth - 1]

    def forward(self, x: torch.Tensor, depths: Sequence[int]) -> torch.Tensor:
        """Outputs Omega_l(x) for each l in `depths`, stacked as [len(depths), batch, outputs]."""
        wanted, outputs, h = set(depths), {}, x
        for depth in range(1, max(depths) + 1):
            h = self.layers[depth - 1](h)
            if depth in wanted:
                outputs[depth] = self.head(depth)(h)
        return torch.stack([outputs[d] for d in depths])

    def depth_blocks(self, max_depth: int) -> list[list[nn.Parameter]]:
        """theta_l for l = 1..max_depth: f_l and, with per-depth heads, o_l (the blocks of eq. 10)."""
        blocks = []
        for depth in range(1, max_depth + 1):
            block = list(self.layers[depth - 1].parameters())
            if self.head_mode == "per_depth":
                block += self.heads[depth - 1].parameters()
            blocks.append(block)
        return blocks

    def shared_parameters(self) -> list[nn.Parameter]:
        """The shared head o, part of every truncation (empty with per-depth heads)."""
        return list(self.heads[0].parameters()) if self.head_mode == "shared" else []

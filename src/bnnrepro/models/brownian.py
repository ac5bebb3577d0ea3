"""The weights' Brownian motion B_t of the SDE-BNN (Xu et al. 2022, eqs. 4, 9): torchsde's `BrownianInterval`
path, bit for bit, at half the random numbers.

`torchsde.BrownianInterval` (torchsde 0.2.6, `levy_area_approximation="none"`, a step-size hint `dt`) samples a
path on a binary tree of intervals: the root holds W(t1) - W(t0) ~ N(0, (t1 - t0) I), and splitting an interval
[s, e] with increment W at m draws its children's increments from the Brownian bridge,

    W_left = (m - s) W / (e - s) + sqrt((m - s)(e - m) / (e - s)) Z,    W_right = W - W_left,

with Z ~ N(0, I) from a seed that `numpy.random.SeedSequence` derives from the entropy and the interval's place in
the tree. The tree is split where the solver queries it, plus a dyadic dependency tree set by `dt`. That class
draws Z once for each child (and a space-time Levy area H at the root that the increments never use): on a
fixed Euler grid, two normal tensors per step. `BrownianBridgeTree` builds the same tree in the same order, with
the same seeds and the same floating-point operations, and draws Z once per split, so that its increments are equal
to torchsde's for any query order (tests/test_brownian.py).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import torch
import torchsde

CACHE_SIZE = 45
"""Increments kept (torchsde's default `cache_size`, which also sets the depth of its dependency tree)."""
POOL_SIZE = 8
"""torchsde's default `pool_size` of the `SeedSequence` that seeds each split."""


class Interval:
    """A node [start, end] of the tree; split at `midway` into `left` and `right` once queried inside."""

    __slots__ = ("start", "end", "parent", "spawn_key", "depth", "midway", "left", "right")

    def __init__(self, start: float, end: float, parent: Interval | None = None, is_left: bool = True):
        self.start, self.end, self.parent = start, end, parent
        self.spawn_key = 0 if parent is None else 2 * parent.spawn_key + (0 if is_left else 1)
        self.depth = 0 if parent is None else parent.depth + 1
        self.midway: float | None = None
        self.left: Interval | None = None
        self.right: Interval | None = None

    def split(self, midway: float) -> None:
        self.midway = midway
        self.left, self.right = Interval(self.start, midway, self, True), Interval(midway, self.end, self, False)


class BrownianBridgeTree(torchsde.BaseBrownian):
    """B_t on [t0, t1] of shape `size`, equal to `torchsde.BrownianInterval(t0, t1, size, dtype, device, entropy,
    dt=dt)` (Levy area "none"): `bm(ta, tb)` is the increment B(tb) - B(ta)."""

    def __init__(
        self,
        t0: float,
        t1: float,
        size: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        entropy: int,
        dt: float,
    ):
        self._size, self._dtype, self._device, self._entropy = tuple(size), dtype, torch.device(device), entropy
        self.root = Interval(float(t0), float(t1))
        root_seed = np.random.SeedSequence(entropy=entropy, pool_size=POOL_SIZE).generate_state(1)[0]
        self.root_increment = self._randn(root_seed) * math.sqrt(self.root.end - self.root.start)
        self.cache: OrderedDict[Interval, torch.Tensor] = OrderedDict()
        self.last = self.root  # queries are searched from the last one's interval, as torchsde does
        self._dependency_tree(min(self.root.end - self.root.start, float(dt)))

    def _dependency_tree(self, tree_dt: float) -> None:
        """Split every interval longer than tree_dt * CACHE_SIZE * 0.8 at its middle (torchsde's
        `_create_dependency_tree`), depth first, left before right."""
        piece_length = tree_dt * CACHE_SIZE * 0.8
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.end - node.start > piece_length:
                node.split((node.end + node.start) / 2)
                stack += [node.right, node.left]

    def _randn(self, seed: np.uint32) -> torch.Tensor:
        generator = torch.Generator(self._device).manual_seed(int(seed))
        return torch.randn(self._size, dtype=self._dtype, device=self._device, generator=generator)

    def __call__(self, ta, tb=None, return_U: bool = False, return_A: bool = False) -> torch.Tensor:  # noqa: N803 (torchsde's signature)
        if tb is None or return_U or return_A:
            raise NotImplementedError("BrownianBridgeTree answers interval queries bm(ta, tb) without Levy areas")
        ta, tb = float(ta), float(tb)
        if not self.root.start <= ta <= tb <= self.root.end:
            raise ValueError(f"query [{ta}, {tb}] outside [{self.root.start}, {self.root.end}] or reversed")
        if ta == tb:
            return torch.zeros(self._size, dtype=self._dtype, device=self._device)
        intervals = self._locate(ta, tb)
        self.last = intervals[-1]
        increment = self._increment(intervals[0])
        for interval in intervals[1:]:
            increment = increment + self._increment(interval)
        return increment

    def _locate(self, ta: float, tb: float) -> list[Interval]:
        """The intervals that partition [ta, tb], splitting the tree where needed (torchsde's `_loc`)."""
        node = self.last
        while ta < node.start or tb > node.end:
            node = node.parent
        out: list[Interval] = []
        self._descend(node, ta, tb, out)
        return out

    def _descend(self, node: Interval, ta: float, tb: float, out: list[Interval]) -> None:
        while not (ta == node.start and tb == node.end):
            if node.midway is None:
                node.split(tb if ta == node.start else ta)
            if tb <= node.midway:
                node = node.left
            elif ta >= node.midway:
                node = node.right
            else:
                self._descend(node.left, ta, node.midway, out)
                node, ta = node.right, node.midway
        out.append(node)

    def _increment(self, node: Interval) -> torch.Tensor:
        """W of `node`: from the cache, or bridged down from the nearest ancestor whose W is known."""
        path = []
        while node.parent is not None and node not in self.cache:
            path.append(node)
            node = node.parent
        increment = self.root_increment if node.parent is None else self.cache[node]
        for child in reversed(path):
            increment = self._bridge(child.parent, increment)[0 if child is child.parent.left else 1]
        return increment

    def _bridge(self, parent: Interval, increment: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_left, W_right) of `parent`'s children from its increment, with torchsde's floating-point operations."""
        h_reciprocal = 1 / (parent.end - parent.start)
        left_diff = parent.midway - parent.start
        right_diff = parent.end - parent.midway
        var = left_diff * right_diff * h_reciprocal
        seed = np.random.SeedSequence(
            entropy=self._entropy, spawn_key=(parent.spawn_key, parent.depth), pool_size=POOL_SIZE
        ).generate_state(1)[0]
        # torchsde's left_diff * W * h_reciprocal + sqrt(var) * Z, the same roundings, in place where it can
        left = (increment * left_diff).mul_(h_reciprocal).add_(self._randn(seed).mul_(math.sqrt(var)))
        right = increment - left
        for child, value in ((parent.left, left), (parent.right, right)):
            self.cache[child] = value
            self.cache.move_to_end(child)
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        return left, right

    def __repr__(self) -> str:
        root, name = self.root, type(self).__name__
        return f"{name}(t0={root.start}, t1={root.end}, size={self._size}, dtype={self._dtype})"

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        return self._size

    @property
    def levy_area_approximation(self) -> str:
        return "none"

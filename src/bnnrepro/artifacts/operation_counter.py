"""Counting the arithmetic a piece of PyTorch code runs, operation by operation (thesis Tables 5.4 and 6.3).

`OperationCounter` is a dispatch mode: every aten operation run under it, forward and backward, passes through it once.
It applies `torch.utils.flop_counter`'s own FLOP formulas to matrix products and convolutions (the counts
`FlopCounterMode` gives, without its per-module bookkeeping) and counts elementwise work beside them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

UNTAGGED_ELEMENTWISE = {"mse_loss", "mse_loss_backward", "softplus_backward", "threshold_backward", "tanh_backward"}
"""Elementwise kernels that torch does not tag `pointwise` (fused losses and activation gradients)."""
NO_ARITHMETIC = {
    "detach", "t", "transpose", "view", "_unsafe_view", "expand", "select", "unbind", "slice", "unsqueeze", "squeeze",
    "unflatten", "stack", "cat", "repeat", "clone", "copy_", "_to_copy", "lift_fresh", "_local_scalar_dense",
    "zeros", "zeros_like", "new_zeros", "ones_like", "empty", "new_empty", "full", "select_backward",
    "slice_backward", "expand_copy",
}  # fmt: skip
"""Aten operations that move, copy or create tensors without arithmetic (random draws are told by their tag)."""


class OperationCounter(TorchDispatchMode):
    """Counts the arithmetic of the aten operations run under it, forward and backward, in two sums: `matmul_flops`,
    the FLOPs of matrix products and convolutions by `torch.utils.flop_counter`'s formulas (what `FlopCounterMode`
    counts, without its per-module bookkeeping, which made Table 6.3's sweep 2.2x slower), and `elementwise`, one
    operation per output element of an elementwise kernel (whatever its cost: an exp counts as an add) and one per
    element read by a reduction. Copies, views and random draws are not counted; operations that are none of these
    are listed in `unknown`."""

    def __init__(self) -> None:
        super().__init__()
        self.matmul_flops, self.elementwise, self.unknown = 0, 0, set()
        self.kinds: dict = {}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: torch would wrap `__torch_dispatch__` in `torch._dynamo.disable` (a mode that may run under
        torch.compile must not be traced), which imports torch._dynamo on the first operation (2.3 s) and adds two
        frames to every operation (a third of Table 6.3's sweep). Nothing here runs under torch.compile."""
        return False

    @staticmethod
    def kind(func) -> str:
        name = func.overloadpacket.__name__
        if func.overloadpacket in flop_registry:
            return "matmul"
        if torch.Tag.nondeterministic_seeded in func.tags:
            return "not counted"
        if torch.Tag.reduction in func.tags or name == "dot":
            return "reduction"
        if (torch.Tag.pointwise in func.tags and name not in NO_ARITHMETIC) or name in UNTAGGED_ELEMENTWISE:
            return "elementwise"
        return "not counted" if name in NO_ARITHMETIC else "unknown"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = self.kinds.get(func) or self.kinds.setdefault(func, self.kind(func))
        if kind == "matmul":
            self.matmul_flops += flop_registry[func.overloadpacket](*args, **kwargs, out_val=out)
        elif kind == "reduction":
            self.elementwise += sum(a.numel() for a in args if isinstance(a, torch.Tensor))
        elif kind == "elementwise":
            self.elementwise += sum(o.numel() for o in (out if isinstance(out, tuple | list) else [out]))
        elif kind == "unknown":
            self.unknown.add(func.overloadpacket.__name__)
        return out


def count_matmul_flops(function: Callable, *args) -> int:
    """The FLOPs of the matrix products and convolutions that `function(*args)` runs, forward and backward."""
    with OperationCounter() as counter:
        function(*args)
    return counter.matmul_flops

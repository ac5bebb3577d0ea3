"""The operation counter of thesis Tables 5.4 and 6.3: what it counts, and that its FLOPs are torch's own
(`FlopCounterMode`, the reference) on the models of both tables."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bnnrepro.artifacts.operation_counter import OperationCounter
from bnnrepro.artifacts.thesis_bedl import OOD_METHODS
from bnnrepro.artifacts.thesis_bedl_costs import (
    FLOP_NETWORK,
    MNIST_SPEC,
    MNIST_TRAINING_SET,
    build_model,
    method_config,
)
from bnnrepro.optim import Adam

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_counter_counts_outputs_and_reads_but_not_copies_or_draws_and_products_apart() -> None:
    x = torch.randn(5, 4, requires_grad=True)
    with OperationCounter() as counter:
        y = (x.exp() * 2).sum()  # 20 + 20 outputs, 20 read
        (x @ torch.randn(4, 3)).t().clone()  # a product (2 * 5 * 4 * 3 FLOPs), a view and a copy
        torch.randn_like(x)
        y.backward()  # d/dx: 20 (exp's gradient: grad * exp) + 20 (the product with 2), the expanded ones not counted
    assert counter.unknown == set()
    assert counter.elementwise == 60 + 40
    assert counter.matmul_flops == 2 * 5 * 4 * 3


@pytest.mark.parametrize("method", OOD_METHODS)
def test_the_matmul_flops_of_table_5_4s_models_are_those_flop_counter_mode_counts(method: str) -> None:
    """One training step and one prediction of each model of Table 5.2 on the MNIST LeNet5, counted by the counter
    and by `FlopCounterMode` on the same model and inputs (convolutions and their backward passes included)."""
    counts = []
    for counter in (OperationCounter(), FlopCounterMode(display=False)):
        torch.manual_seed(0)
        model = build_model(method_config(f"{method}{FLOP_NETWORK}"))
        x, y = torch.randn(4, *MNIST_SPEC.input_shape), torch.randint(MNIST_SPEC.num_classes, (4,))
        with counter:
            model.train()
            model.training_step(x, y, MNIST_TRAINING_SET, Adam(model.parameter_groups(1e-3, 0.1)))
            model.eval()
            model.predict(x)
        counts.append(counter.matmul_flops if isinstance(counter, OperationCounter) else counter.get_total_flops())
    assert counts[0] == counts[1] > 0


def test_counting_does_not_import_torch_dynamo() -> None:
    """torch wraps a dispatch mode's `__torch_dispatch__` in `torch._dynamo.disable` unless the mode says it never
    runs under torch.compile: that import alone took 2.3 s of Table 6.3's job, the wrapper a third of its sweep."""
    script = (
        "import sys, torch\n"
        "from bnnrepro.artifacts.operation_counter import count_matmul_flops\n"
        "a, b = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5)\n"
        "assert count_matmul_flops(lambda: (a @ b).sum().backward()) == 2 * (2 * 3 * 4 * 5)  # the product, d/da\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"

"""BrownianBridgeTree gives torchsde.BrownianInterval's increments bit for bit (the weights' Brownian motion of
the SDE-BNN, Xu et al. 2022 eqs. 4, 9), for the solver's queries and any others."""

import random

import pytest
import torch
import torchsde

from bnnrepro.models.brownian import BrownianBridgeTree
from bnnrepro.models.weight_sde import mlp_sdebnn
from bnnrepro.models.weight_sde_solver import SolverSettings, brownian_motion


def pair(num_steps: int, entropy: int, size=(3, 7), dtype=torch.float32):
    dt = 1 / num_steps
    reference = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=size, dtype=dtype, entropy=entropy, dt=dt)
    return reference, BrownianBridgeTree(0.0, 1.0, size, dtype, torch.device("cpu"), entropy, dt)


@pytest.mark.parametrize("num_steps", [1, 3, 10, 20, 36, 37, 100, 300])  # from 37 steps on: a dependency tree
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_same_increments_as_brownian_interval_on_the_solver_grid(num_steps: int, dtype: torch.dtype) -> None:
    """torchsde's fixed-step grid: t_{i+1} = min(t_i + dt, 1) accumulated in the state's dtype."""
    reference, tree = pair(num_steps, entropy=num_steps, dtype=dtype)
    t, end = torch.tensor(0.0, dtype=dtype), torch.tensor(1.0, dtype=dtype)
    while t < end:
        t_next = min(t + 1 / num_steps, end)
        assert torch.equal(tree(t, t_next), reference(t, t_next))
        t = t_next


@pytest.mark.parametrize("num_steps", [10, 100])
def test_same_increments_as_brownian_interval_for_any_queries(num_steps: int) -> None:
    """Backwards (the adjoint's reverse solve), overlapping, nested, repeated and empty intervals."""
    reference, tree = pair(num_steps, entropy=7)
    rng = random.Random(num_steps)
    for i in range(300):
        ta, tb = sorted(rng.random() for _ in range(2))
        if i % 3 == 0:
            ta, tb = round(ta, 1), round(tb, 1)
        assert torch.equal(tree(ta, tb), reference(ta, tb)), (ta, tb)


def test_brownian_motion_of_a_training_solve_is_the_bridge_tree_with_brownian_interval_numbers() -> None:
    """`brownian_motion` hands the Euler and Milstein solvers the bridge tree; a seed still fixes its entropy."""
    sde = mlp_sdebnn(1, 1, width=4, drift_widths=(4,)).sde
    y0 = torch.zeros(5, sde.num_weights + 6)
    settings = SolverSettings(num_steps=20)
    torch.manual_seed(0)
    bm = brownian_motion(sde, y0, settings)
    torch.manual_seed(0)
    entropy = int(torch.randint(2**31 - 1, ()))
    reference = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(5, sde.num_weights), entropy=entropy, dt=0.05)
    assert isinstance(bm, BrownianBridgeTree)
    assert torch.equal(bm(0.0, 0.05), reference(0.0, 0.05))
    assert isinstance(brownian_motion(sde, y0, SolverSettings(method="srk")), torchsde.BrownianInterval)
    assert isinstance(brownian_motion(sde, y0, SolverSettings(paired_paths=True)), torchsde.BrownianInterval)


def test_rejects_what_it_does_not_sample() -> None:
    _, tree = pair(10, entropy=0)
    with pytest.raises(NotImplementedError):
        tree(0.0, 0.5, return_U=True)
    with pytest.raises(ValueError, match="outside"):
        tree(0.5, 1.5)

"""Our Adam against torch.optim.Adam, with growing parameter groups, skipped parameters and resume."""

import io

import pytest
import torch

from bnnrepro.optim import Adam


def make_problem(seed=0):
    """Parameters of a small MLP and a quadratic, plus the data; returns (params, loss_fn)."""
    g = torch.Generator().manual_seed(seed)
    params = {
        "w1": torch.randn(4, 3, generator=g),
        "b1": torch.randn(4, generator=g),
        "w2": torch.randn(2, 4, generator=g),
        "quad": torch.randn(5, generator=g),
        "late": torch.randn(4, generator=g),  # appended to group 0 after step 10
        "sometimes": torch.randn(3, generator=g),  # gradient only on even steps
    }
    x = torch.randn(32, 3, generator=g)
    y = torch.randn(32, 2, generator=g)
    curvature = torch.rand(5, generator=g) * 3 + 0.1
    return params, (x, y, curvature)


def loss_fn(p, data, step, use_late):
    x, y, curvature = data
    h = torch.tanh(x @ p["w1"].T + p["b1"])
    if use_late:
        h = h * (1 + p["late"])
    loss = ((h @ p["w2"].T - y) ** 2).mean() + (curvature * (p["quad"] - 1) ** 2).sum()
    if step % 2 == 0:
        loss = loss + (p["sometimes"] ** 4).sum()
    return loss


def leaves(params):
    return {k: v.clone().requires_grad_(True) for k, v in params.items()}


def groups(p):
    return [
        {"params": [p["w1"], p["b1"], p["sometimes"]], "lr": 0.01},
        {"params": [p["w2"], p["quad"]], "lr": 0.003},
    ]


def run(optimizer_cls, params, data, steps, start=0, optimizer=None):
    optimizer = optimizer or optimizer_cls(groups(params))
    for step in range(start, start + steps):
        if step == 10:
            optimizer.param_groups[0]["params"].append(params["late"])
        optimizer.zero_grad()
        loss_fn(params, data, step, use_late=step >= 10).backward()
        if step % 2 == 1:
            assert params["sometimes"].grad is None
        optimizer.step()
    return optimizer


def test_adam_matches_torch_adam():
    initial, data = make_problem()
    ours, theirs = leaves(initial), leaves(initial)
    run(Adam, ours, data, 50)
    run(torch.optim.Adam, theirs, data, 50)
    for name in initial:
        assert not torch.equal(ours[name].detach(), initial[name]), name  # every parameter moved
        torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=1e-6, msg=name)


def test_adam_skips_parameters_without_gradient():
    initial, data = make_problem()
    p = leaves(initial)
    optimizer = Adam(groups(p))
    # "late" is not in any group and "sometimes" has no gradient on odd steps
    optimizer.zero_grad()
    loss_fn(p, data, step=1, use_late=False).backward()
    optimizer.step()
    assert torch.equal(p["sometimes"].detach(), initial["sometimes"])
    assert p["sometimes"] not in optimizer.state
    assert torch.equal(p["late"].detach(), initial["late"])
    # the first update has size lr for every coordinate with a non-tiny gradient (bias correction)
    step = (p["quad"].detach() - initial["quad"]).abs()
    torch.testing.assert_close(step, torch.full_like(step, 0.003), rtol=1e-4, atol=0)


def test_adam_state_dict_round_trip():
    initial, data = make_problem()
    uninterrupted = leaves(initial)
    run(Adam, uninterrupted, data, 20)

    first = leaves(initial)
    optimizer = run(Adam, first, data, 10)
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)  # as in a checkpoint
    buffer.seek(0)
    state = torch.load(buffer)

    resumed = {k: v.detach().clone().requires_grad_(True) for k, v in first.items()}
    new_optimizer = Adam([{**g, "lr": 0.5} for g in groups(resumed)])
    new_optimizer.load_state_dict(state)
    assert [g["lr"] for g in new_optimizer.param_groups] == [0.01, 0.003]  # restored from the checkpoint
    run(Adam, resumed, data, 10, start=10, optimizer=new_optimizer)
    for name in initial:
        torch.testing.assert_close(resumed[name], uninterrupted[name], rtol=0, atol=1e-7, msg=name)

    # without the loaded state the continuation differs (the test above is not vacuous)
    fresh = {k: v.detach().clone().requires_grad_(True) for k, v in first.items()}
    run(Adam, fresh, data, 10, start=10)
    assert not torch.allclose(fresh["w1"], uninterrupted["w1"], atol=1e-5)


def test_adam_state_dict_after_growth_and_lrs():
    initial, data = make_problem()
    p = leaves(initial)
    optimizer = run(Adam, p, data, 12)  # "late" appended at step 10
    state = optimizer.state_dict()
    assert state["lrs"] == [0.01, 0.003]
    order = [*groups(p)[0]["params"], p["late"], *groups(p)[1]["params"]]
    assert len(state["state"]) == len(order)
    for i, param in enumerate(order):
        assert state["state"][i] is optimizer.state[param]
    assert float(state["state"][3]["step"]) == 2  # "late" got fresh state at step 10
    assert float(state["state"][2]["step"]) == 6  # "sometimes": even steps only


@pytest.mark.parametrize("lr", [1e-3, 0.1])
def test_adam_single_tensor_closed_form(lr):
    # constant gradient g: m_t / (1 - b1^t) = g and v_t / (1 - b2^t) = g^2, so every step is -lr * g / (|g| + eps)
    p = torch.zeros(3, requires_grad=True)
    optimizer = Adam([{"params": [p], "lr": lr}])
    g = torch.tensor([2.0, -0.5, 1e-3])
    for _ in range(5):
        optimizer.zero_grad()
        (p * g).sum().backward()
        optimizer.step()
    expected = -5 * lr * g / (g.abs() + 1e-8)
    torch.testing.assert_close(p.detach(), expected, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("max_norm", [0.05, 1e3])
def test_clipping_matches_torch_clip_grad_norm_then_adam(max_norm):
    """optim.clip_grad_norm: the joint norm over all groups is clipped before the step, as clip_grad_norm_ does;
    at 0.05 the gradients are clipped on every step, at 1e3 never (then the steps are plain Adam's)."""
    initial, data = make_problem()
    ours, theirs, unclipped = leaves(initial), leaves(initial), leaves(initial)
    run(None, ours, data, 30, optimizer=Adam(groups(ours), max_grad_norm=max_norm))

    class ClippedAdam(torch.optim.Adam):
        def step(self):
            torch.nn.utils.clip_grad_norm_([p for g in self.param_groups for p in g["params"]], max_norm)
            return super().step()

    run(ClippedAdam, theirs, data, 30)
    run(Adam, unclipped, data, 30)
    for name in initial:
        torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=1e-6, msg=name)
    moved_as_unclipped = all(torch.allclose(ours[n], unclipped[n], atol=1e-6) for n in initial)
    assert moved_as_unclipped == (max_norm == 1e3)


@pytest.mark.parametrize("value", [0, -1.0, "10", True, float("inf")])
def test_a_bad_clip_grad_norm_is_named(value):
    from bnnrepro.optim import build_optimizer

    cfg = {"name": "adam", "momentum": 0.0, "weight_decay": 0.0, "clip_grad_norm": value}
    with pytest.raises(ValueError, match="optim.clip_grad_norm"):
        build_optimizer(cfg, groups(leaves(make_problem()[0])))

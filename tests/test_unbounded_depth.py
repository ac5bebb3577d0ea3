"""The unbounded-depth network: one-pass outputs, finite networks, and Algorithm 1's growth and shrinkage."""

import io
import math

import pytest
import torch
from torch import nn

from bnnrepro.inference.depth_posteriors import (
    FixedDepth,
    PointMassPrior,
    ShiftedPoissonPrior,
    TruncatedPoisson,
)
from bnnrepro.inference.poisson import poisson_quantile
from bnnrepro.methods.depth_networks import DepthNetworkMethod
from bnnrepro.models.unbounded_depth import UnboundedDepthNetwork, fully_connected_layer, linear_head
from bnnrepro.optim import Adam

IN, WIDTH, OUT = 2, 6, 3


def make_network(heads, depth, seed=0):
    torch.manual_seed(seed)
    network = UnboundedDepthNetwork(fully_connected_layer(IN, WIDTH), linear_head(WIDTH, OUT), heads=heads)
    network.grow_to(depth)
    return network


def make_udn(initial_rate, seed=0):
    torch.manual_seed(seed)
    network = UnboundedDepthNetwork(fully_connected_layer(IN, WIDTH), linear_head(WIDTH, OUT))
    return DepthNetworkMethod(network, TruncatedPoisson(initial_rate), ShiftedPoissonPrior(0.5), 1.0)


def make_data(n=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, IN, generator=g), torch.randint(0, OUT, (n,), generator=g)


def separate_output(network, x, depth):
    """Omega_l(x) by its own pass: h_k = relu(W_k h_{k-1} + b_k) for k <= l, then o_l (or the shared o)."""
    h = x
    for k in range(depth):
        linear = network.layers[k][0]
        h = torch.relu(h @ linear.weight.T + linear.bias)
    head = network.heads[0] if network.head_mode == "shared" else network.heads[depth - 1]
    return h @ head.weight.T + head.bias


def set_rate(method, rate):
    with torch.no_grad():
        method.depth_posterior.rho.copy_(torch.tensor(rate + math.log(-math.expm1(-rate))))
    assert float(method.depth_posterior.rate.detach()) == pytest.approx(rate, rel=1e-5)


def next_jump(rate, step=1e-3):
    """A rate a little above the first point beyond `rate` where the support grows."""
    depth = max(poisson_quantile(rate, 0.95), math.floor(rate) + 1) + 1
    while max(poisson_quantile(rate, 0.95), math.floor(rate) + 1) + 1 == depth:
        rate += step
    return rate + 5 * step


def snapshot(params):
    return [p.detach().clone() for p in params]


def contains(params, p):
    return any(p is q for q in params)


# --- forward ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("heads", ["per_depth", "shared"])
def test_one_pass_outputs_equal_separate_truncations(heads):
    network = make_network(heads, depth=6)
    assert network.depth == 6
    assert len(network.heads) == (6 if heads == "per_depth" else 1)
    x, _ = make_data()
    outputs = network(x, list(range(1, 7)))
    assert outputs.shape == (6, len(x), OUT)
    for depth in range(1, 7):
        torch.testing.assert_close(outputs[depth - 1], separate_output(network, x, depth))
    # a subset of depths, in any order
    subset = network(x, [5, 2])
    torch.testing.assert_close(subset[0], separate_output(network, x, 5))
    torch.testing.assert_close(subset[1], separate_output(network, x, 2))
    # the truncations do differ (the check above is not vacuous)
    assert not torch.allclose(outputs[0], outputs[-1])


def test_depth_blocks_and_parameter_orders():
    network = make_network("per_depth", depth=3)
    blocks = network.depth_blocks(3)
    assert [len(b) for b in blocks] == [4, 4, 4]  # weight and bias of f_l and of o_l
    for depth, block in enumerate(blocks, 1):
        expected = [*network.layers[depth - 1].parameters(), *network.heads[depth - 1].parameters()]
        assert all(p is q for p, q in zip(block, expected, strict=True))
    assert network.shared_parameters() == []
    shared = make_network("shared", depth=3)
    assert [len(b) for b in shared.depth_blocks(3)] == [2, 2, 2]
    assert all(p is q for p, q in zip(shared.shared_parameters(), shared.heads[0].parameters(), strict=True))
    # weight_parameters covers every parameter exactly once
    for net in (network, shared):
        assert {id(p) for p in net.weight_parameters()} == {id(p) for p in net.parameters()}
        assert len(net.weight_parameters()) == len(list(net.parameters()))


@pytest.mark.parametrize("depth", [1, 3, 5])
def test_finite_network_equals_plain_sequential(depth):
    torch.manual_seed(0)
    network = UnboundedDepthNetwork(fully_connected_layer(IN, WIDTH), linear_head(WIDTH, OUT), heads="shared")
    method = DepthNetworkMethod(network, FixedDepth(depth), PointMassPrior(), 1.0)
    assert network.depth == depth
    modules = []
    for k in range(depth):
        modules += [nn.Linear(IN if k == 0 else WIDTH, WIDTH), nn.ReLU()]
    modules.append(nn.Linear(WIDTH, OUT))
    plain = nn.Sequential(*modules)
    with torch.no_grad():
        for k in range(depth):
            plain[2 * k].weight.copy_(network.layers[k][0].weight)
            plain[2 * k].bias.copy_(network.layers[k][0].bias)
        plain[-1].weight.copy_(network.heads[0].weight)
        plain[-1].bias.copy_(network.heads[0].bias)
    x, y = make_data()
    torch.testing.assert_close(network(x, [depth])[0], plain(x))
    torch.testing.assert_close(method.predict(x), plain(x).softmax(-1))
    # the MAP objective: -ELBO / n = mean cross-entropy + ||theta||^2 / (2 n)
    squared_norm = sum(p.pow(2).sum() for p in plain.parameters())
    expected_loss = nn.functional.cross_entropy(plain(x), y) + squared_norm / 2 / len(x)
    torch.testing.assert_close(method.loss(x, y, len(x)), expected_loss)


def test_udn_predict_is_q_weighted_mixture():
    method = make_udn(2.2)
    x, _ = make_data()
    network = method.network
    m = method.depth_posterior.max_depth()
    q = method.depth_posterior.log_probs(m).exp().detach()
    expected = sum(q[d - 1] * separate_output(network, x, d).softmax(-1) for d in range(1, m + 1))
    torch.testing.assert_close(method.predict(x), expected.detach())
    torch.testing.assert_close(method.predict(x).sum(-1), torch.ones(len(x)))


# --- Algorithm 1: growth and shrinkage --------------------------------------------------------------------


def test_layer_creation_when_lambda_grows():
    method = make_udn(1.0)
    assert method.network.depth == method.depth_posterior.max_depth() == 4
    optimizer = Adam(method.parameter_groups(lr=0.01, depth_lr_ratio=0.1))
    x, y = make_data()
    for _ in range(3):  # a few ordinary steps first, so the old parameters have Adam state
        optimizer.zero_grad()
        method.loss(x, y, len(x)).backward()
        optimizer.step()
        method.adapt_architecture(optimizer)
    assert method.network.depth == 4

    old_parameters = set(map(id, method.parameters()))
    rate = next_jump(float(method.depth_posterior.rate.detach()))
    set_rate(method, rate)
    assert method.depth_posterior.max_depth() == 5  # exactly one more depth
    method.adapt_architecture(optimizer)
    assert method.network.depth == 5 and len(method.network.heads) == 5
    new = [p for p in method.parameters() if id(p) not in old_parameters]
    expected_new = [*method.network.layers[4].parameters(), *method.network.heads[4].parameters()]
    assert {id(p) for p in new} == {id(p) for p in expected_new}
    assert len(new) == 4
    for p in new:
        assert contains(optimizer.param_groups[0]["params"], p)
        assert not contains(optimizer.param_groups[1]["params"], p)
    method.adapt_architecture(optimizer)  # idempotent
    assert method.network.depth == 5
    assert len(optimizer.param_groups[0]["params"]) == len(method.network.weight_parameters())

    before = snapshot(new)
    optimizer.zero_grad()
    method.loss(x, y, len(x)).backward()
    for p in new:
        assert p.grad is not None and p.grad.abs().sum() > 0
    optimizer.step()
    for p, b in zip(new, before, strict=True):
        assert not torch.equal(p.detach(), b)
        # fresh Adam state: the first step moves every coordinate with a non-tiny gradient by lr
        moved = (p.detach() - b).abs()[p.grad.abs() > 1e-5]
        assert moved.numel() > 0
        torch.testing.assert_close(moved, torch.full_like(moved, 0.01), rtol=1e-3, atol=1e-6)


def test_inactive_layers_when_lambda_shrinks():
    method = make_udn(2.2)
    depth = method.depth_posterior.max_depth()
    assert method.network.depth == depth == 6
    optimizer = Adam(method.parameter_groups(lr=0.01, depth_lr_ratio=0.1))
    x, y = make_data()
    optimizer.zero_grad()
    method.loss(x, y, len(x)).backward()
    optimizer.step()  # every layer now has Adam moments

    set_rate(method, 0.5)
    assert method.depth_posterior.max_depth() == 3
    method.adapt_architecture(optimizer)
    assert method.network.depth == 6  # modules are kept, only inactive
    inactive = [*method.network.layers[3:].parameters(), *method.network.heads[3:].parameters()]
    active = [*method.network.layers[:3].parameters(), *method.network.heads[:3].parameters()]
    before_inactive, before_active = snapshot(inactive), snapshot(active)

    # the ELBO does not depend on the inactive weights (their posterior is the prior)
    elbo = float(method.elbo(x, y, len(x)).detach())
    with torch.no_grad():
        for p in inactive:
            p.add_(1.0)
        assert float(method.elbo(x, y, len(x)).detach()) == elbo
        for p, b in zip(inactive, before_inactive, strict=True):
            p.copy_(b)

    for _ in range(2):
        optimizer.zero_grad()
        method.loss(x, y, len(x)).backward()
        assert all(p.grad is None for p in inactive)
        assert all(p.grad is not None for p in active)
        assert method.depth_posterior.rho.grad is not None
        optimizer.step()
    for p, b in zip(inactive, before_inactive, strict=True):
        assert torch.equal(p.detach(), b)
    assert all(not torch.equal(p.detach(), b) for p, b in zip(active, before_active, strict=True))


def test_prepare_resume_loads_deeper_state():
    x, y = make_data()
    grown = make_udn(1.0, seed=0)
    optimizer = Adam(grown.parameter_groups(lr=0.01, depth_lr_ratio=0.1))
    set_rate(grown, 3.1)
    grown.adapt_architecture(optimizer)
    assert grown.network.depth == 7
    for _ in range(3):
        optimizer.zero_grad()
        grown.loss(x, y, len(x)).backward()
        optimizer.step()
        grown.adapt_architecture(optimizer)

    buffer = io.BytesIO()
    torch.save({"model": grown.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer)

    fresh = make_udn(1.0, seed=5)
    assert fresh.network.depth == 4
    with pytest.raises(RuntimeError):
        fresh.load_state_dict(checkpoint["model"])  # too shallow before prepare_resume
    fresh.prepare_resume(checkpoint["model"])
    assert fresh.network.depth == grown.network.depth
    fresh.load_state_dict(checkpoint["model"])
    fresh_optimizer = Adam(fresh.parameter_groups(lr=0.01, depth_lr_ratio=0.1))
    fresh_optimizer.load_state_dict(checkpoint["optimizer"])

    assert fresh.diagnostics() == grown.diagnostics()
    torch.testing.assert_close(fresh.predict(x), grown.predict(x))
    # continuing training gives the same parameters as the uninterrupted run
    for method, opt in ((grown, optimizer), (fresh, fresh_optimizer)):
        for _ in range(3):
            opt.zero_grad()
            method.loss(x, y, len(x)).backward()
            opt.step()
            method.adapt_architecture(opt)
    for (name, a), (_, b) in zip(grown.named_parameters(), fresh.named_parameters(), strict=True):
        torch.testing.assert_close(a, b, msg=name)

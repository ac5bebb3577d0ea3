"""The UDN's CIFAR-10 layers and heads (bottleneck ResNet, UDN §4.2, §6.2) and the refresh of BatchNorm
statistics that still hold their initial values."""

import pytest
import torch
from torch import nn

from bnnrepro.models.batch_norm_statistics import refresh_batch_norm_statistics, stale_batch_norms
from bnnrepro.models.bottleneck_generator import (
    AUTHORS_MAX_DEPTH,
    bottleneck_resnet_layer,
    check_depth,
    layer_shape,
    pooled_linear_head,
    stage_of,
)
from bnnrepro.models.unbounded_depth import UnboundedDepthNetwork

DEPTHS = range(1, 13)
STRIDE_2_DEPTHS = {2, 5, 10}
SMALL_WIDTH = 1 / 16  # stem 4 channels; B_6, B_7, B_8 with c = 4, 8, 16


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def bottleneck_count(in_channels: int, c: int, shortcut: bool) -> int:
    """conv1x1 in*c + conv3x3 9c^2 + conv1x1 c*4c, BatchNorms 2 per channel (c, c, 4c); a projection shortcut
    adds conv1x1 in*4c and a BatchNorm 2*4c."""
    count = in_channels * c + 9 * c * c + 4 * c * c + 2 * (c + c + 4 * c)
    return count + (in_channels * 4 * c + 2 * 4 * c if shortcut else 0)


@pytest.fixture(scope="module")
def full_width_layers() -> list[nn.Module]:
    torch.manual_seed(0)
    make = bottleneck_resnet_layer(1.0, max_depth=12)
    return [make(depth) for depth in DEPTHS]


# --- the generators -----------------------------------------------------------------------------------------


def test_layer_and_head_shapes_at_width_1(full_width_layers):
    expected = {1: (64, 32), 2: (256, 16), 5: (512, 8), 10: (1024, 4)}  # first layer of each stage
    head = pooled_linear_head(1.0, 10)
    h = torch.randn(2, 32, 32, 3)  # the datasets' channels-last images
    with torch.no_grad():
        for depth, layer in zip(DEPTHS, full_width_layers, strict=True):
            channels, size = expected[max(d for d in expected if d <= depth)]
            h = layer(h)
            assert h.shape == (2, channels, size, size), depth
            assert layer_shape(depth, 1.0) == (channels, size)
            assert head(depth)(h).shape == (2, 10)


@pytest.mark.parametrize(("depth", "in_features"), [(1, 4096), (2, 4096), (4, 4096), (5, 2048), (9, 2048), (10, 1024)])
def test_head_input_sizes(depth, in_features):
    head = pooled_linear_head(1.0, 10)(depth)
    assert head[2].in_features == in_features
    assert count(head) == in_features * 10 + 10


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        (1, 3 * 64 * 9 + 2 * 64),  # stem: conv3x3 3 -> 64, BatchNorm(64): 1856
        (2, bottleneck_count(64, 64, shortcut=True)),  # first B_6: 75008
        (3, bottleneck_count(256, 64, shortcut=False)),  # 70400
        (5, bottleneck_count(256, 128, shortcut=True)),  # first B_7: 379392
        (8, bottleneck_count(512, 128, shortcut=False)),  # 280064
        (10, bottleneck_count(512, 256, shortcut=True)),  # first B_8: 1512448
        (12, bottleneck_count(1024, 256, shortcut=False)),  # 1117184
    ],
)
def test_parameter_counts_at_width_1(full_width_layers, depth, expected):
    assert count(full_width_layers[depth - 1]) == expected


def test_stride_2_exactly_at_the_first_block_of_each_stage(full_width_layers):
    assert full_width_layers[0][1].stride == (1, 1)
    for depth, block in zip(DEPTHS[1:], full_width_layers[1:], strict=True):
        stride = 2 if depth in STRIDE_2_DEPTHS else 1
        assert block.conv2.stride == (stride, stride), depth
        if depth in STRIDE_2_DEPTHS:
            assert block.shortcut[0].stride == (2, 2)
        else:
            assert isinstance(block.shortcut, nn.Identity), depth


def test_stages():
    assert [stage_of(d).name for d in (1, 2, 4, 5, 9, 10, AUTHORS_MAX_DEPTH)] == [
        "stem",
        *("B_6", "B_6"),
        *("B_7", "B_7"),
        *("B_8", "B_8"),
    ]
    assert AUTHORS_MAX_DEPTH == 1 + 3 + 5 + 1000
    with pytest.raises(ValueError, match="start at 1, got 0"):
        stage_of(0)


def test_width_multiplier_rounds_channels():
    assert [layer_shape(d, SMALL_WIDTH) for d in (1, 2, 5, 10)] == [(4, 32), (16, 16), (32, 8), (64, 4)]
    assert layer_shape(1, 0.01) == (1, 32)  # round(0.64) = 1 channel


@pytest.mark.parametrize(
    ("width", "message"),
    [
        (1 / 128, r"width_multiplier 0.0078125 gives 0 channels in the stem \(64 x 0.0078125\)"),
        (0.005, r"width_multiplier 0.005 gives 0 channels in the stem \(64 x 0.005\)"),
        (0.0, r"width_multiplier 0.0 gives 0 channels in the stem \(64 x 0.0\)"),
        (-1.0, r"width_multiplier -1.0 gives -64 channels in the stem \(64 x -1.0\)"),
    ],
)
def test_too_small_width_multiplier_is_refused(width, message):
    hint = r"use more than 1/128 = 0.0078125, e.g. 1/64 = 0.015625 \(1 channel\)"
    for make in (lambda: bottleneck_resnet_layer(width), lambda: pooled_linear_head(width, 10)):
        with pytest.raises(ValueError, match=f"{message}; {hint}"):
            make()


def test_non_finite_width_multiplier_is_refused():
    with pytest.raises(ValueError, match="finite number, got nan"):
        bottleneck_resnet_layer(float("nan"))


def test_depth_beyond_max_depth_is_refused():
    torch.manual_seed(0)
    network = UnboundedDepthNetwork(
        bottleneck_resnet_layer(SMALL_WIDTH, max_depth=10), pooled_linear_head(SMALL_WIDTH, 10)
    )
    network.grow_to(10)
    message = (
        r"layer 11 is deeper than the bottleneck generator's max_depth = 10: raise .*, or check the depth posterior"
    )
    with pytest.raises(ValueError, match=message):
        network.grow_to(11)
    check_depth(AUTHORS_MAX_DEPTH, AUTHORS_MAX_DEPTH)
    with pytest.raises(ValueError, match=f"layer {AUTHORS_MAX_DEPTH + 1} is deeper"):
        check_depth(AUTHORS_MAX_DEPTH + 1, AUTHORS_MAX_DEPTH)
    with pytest.raises(ValueError, match="max_depth must be >= 1, got 0"):
        bottleneck_resnet_layer(1.0, max_depth=0)


def test_unbounded_depth_network_outputs_every_truncation():
    torch.manual_seed(0)
    network = UnboundedDepthNetwork(
        bottleneck_resnet_layer(SMALL_WIDTH, max_depth=12), pooled_linear_head(SMALL_WIDTH, 10)
    )
    network.grow_to(11)
    assert network(torch.randn(2, 32, 32, 3), [1, 2, 5, 10, 11]).shape == (5, 2, 10)


# --- BatchNorm statistics -----------------------------------------------------------------------------------


def train_batches(module: nn.Module, batch_norm: nn.Module, batches: int) -> None:
    module.train()
    with torch.no_grad():
        for _ in range(batches):
            module(torch.randn(8, batch_norm.num_features, 4, 4, dtype=torch.float64))


@pytest.mark.parametrize(("batches", "stale"), [(0, True), (43, True), (44, False), (50, False)])
def test_stale_until_initial_weight_below_tolerance(batches, stale):
    bn = nn.BatchNorm2d(3).double()  # momentum 0.1: 0.9^43 = 0.0108, 0.9^44 = 0.0097
    train_batches(bn, bn, batches)
    assert (stale_batch_norms(bn) == [bn]) is stale


def test_stale_with_cumulative_average_and_without_running_statistics():
    cumulative = nn.BatchNorm2d(3, momentum=None).double()
    assert stale_batch_norms(cumulative) == [cumulative]
    train_batches(cumulative, cumulative, 1)
    assert stale_batch_norms(cumulative) == []
    assert stale_batch_norms(nn.BatchNorm2d(3, track_running_stats=False)) == []


def small_conv_net() -> nn.Sequential:
    """Conv -> BatchNorm a -> ReLU -> Dropout -> Conv -> BatchNorm b -> ReLU; a trained, b stale."""
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Conv2d(4, 5, 3, padding=1),
        nn.BatchNorm2d(5),
        nn.ReLU(),
    ).double()
    net.train()
    with torch.no_grad():
        for batch in range(65):
            net(torch.randn(8, 3, 6, 6, dtype=torch.float64))
            if batch == 59:  # b sees the last 5 batches only
                net[5].reset_running_stats()
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return net


def test_refresh_sets_batch_statistics_average_and_changes_nothing_else():
    net = small_conv_net()
    assert stale_batch_norms(net) == [net[5]] and int(net[5].num_batches_tracked) == 5
    x = torch.randn(20, 3, 6, 6, dtype=torch.float64)
    net.eval()
    with torch.no_grad():  # BatchNorm b's inputs with the rest of the net in eval mode, per batch of 8, 8, 4
        inputs = [net[:5](x[start : start + 8]) for start in (0, 8, 16)]
    mean = torch.stack([h.mean((0, 2, 3)) for h in inputs]).mean(0)
    var = torch.stack([h.var((0, 2, 3), unbiased=True) for h in inputs]).mean(0)
    before = {name: t.clone() for name, t in [*net.named_parameters(), *net[1].named_buffers(prefix="1")]}
    net.train()

    refresh_batch_norm_statistics(net, net, stale_batch_norms(net), x, batch_size=8)

    torch.testing.assert_close(net[5].running_mean, mean, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(net[5].running_var, var, rtol=1e-12, atol=1e-12)
    assert int(net[5].num_batches_tracked) == 3
    after = dict([*net.named_parameters(), *net[1].named_buffers(prefix="1")])
    assert before.keys() == after.keys()
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_refresh_restores_flags_and_momenta():
    net = small_conv_net()
    net[5].momentum = 0.2
    net[3].eval()
    flags = [m.training for m in net.modules()]
    x = torch.randn(4, 3, 6, 6, dtype=torch.float64)
    refresh_batch_norm_statistics(net, net, [net[5]], x, batch_size=2)
    assert [m.training for m in net.modules()] == flags
    assert net[5].momentum == 0.2

    def failing_forward(batch):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        refresh_batch_norm_statistics(net, failing_forward, [net[5]], x, batch_size=2)
    assert [m.training for m in net.modules()] == flags
    assert net[5].momentum == 0.2
    with pytest.raises(ValueError, match="must be a module of `network`"):
        refresh_batch_norm_statistics(net, net, [nn.BatchNorm2d(5)], x, batch_size=2)


def test_layers_grown_before_an_evaluation_are_stale_and_refreshed():
    torch.manual_seed(0)
    network = UnboundedDepthNetwork(
        bottleneck_resnet_layer(SMALL_WIDTH, max_depth=12), pooled_linear_head(SMALL_WIDTH, 10)
    )
    network.grow_to(3)
    network.train()
    with torch.no_grad():
        for _ in range(50):
            network(torch.randn(4, 32, 32, 3), [1, 2, 3])
    network.grow_to(5)  # Algorithm 1 adds layers 4 and 5 just before an evaluation
    new = [m for layer in network.layers[3:] for m in layer.modules() if isinstance(m, nn.BatchNorm2d)]
    stale = stale_batch_norms(network)
    assert [id(m) for m in stale] == [id(m) for m in new]
    trained = {name: t.clone() for name, t in network.layers[:3].named_buffers()}

    x = torch.randn(16, 32, 32, 3)
    refresh_batch_norm_statistics(network, lambda batch: network(batch, [1, 2, 3, 4, 5]), stale, x, batch_size=8)

    assert all(int(m.num_batches_tracked) == 2 for m in new)
    assert all(not torch.equal(m.running_var, torch.ones_like(m.running_var)) for m in new)
    assert all(torch.equal(t, trained[name]) for name, t in network.layers[:3].named_buffers())

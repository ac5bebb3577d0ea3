"""Our SGD against torch.optim.SGD, the optimiser factory, and the learning-rate schedule of the UDN CIFAR-10
experiments (UDN §6.2, after He et al. 2016): the factor at every boundary, its validation, and a training job that
resumes with SGD, the schedule and crop_flip augmentation to the metrics of an uninterrupted run."""

from __future__ import annotations

import io
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.optim import (
    SGD,
    Adam,
    Optimizer,
    apply_learning_rate_schedule,
    build_optimizer,
    check_learning_rate_schedule,
    learning_rate_factor,
)
from tests.test_optim import leaves, make_problem, run

MOMENTUM, WEIGHT_DECAY = 0.9, 1e-4  # UDN §6.2


def sgd_groups(p):
    """test_optim's two groups, the second exempt from weight decay by its own key."""
    return [
        {"params": [p["w1"], p["b1"], p["sometimes"]], "lr": 0.01},
        {"params": [p["w2"], p["quad"]], "lr": 0.003, "weight_decay": 0.0},
    ]


@pytest.mark.parametrize(("momentum", "weight_decay"), [(0.0, 0.0), (0.0, 0.1), (MOMENTUM, 0.0), (MOMENTUM, 0.1)])
def test_sgd_matches_torch_sgd(momentum: float, weight_decay: float) -> None:
    """50 steps with "late" appended to group 0 at step 10 and "sometimes" without a gradient on odd steps."""
    initial, data = make_problem()
    ours, theirs = leaves(initial), leaves(initial)
    run(None, ours, data, 50, optimizer=SGD(sgd_groups(ours), momentum=momentum, weight_decay=weight_decay))
    torch_sgd = torch.optim.SGD(sgd_groups(theirs), lr=0.0, momentum=momentum, weight_decay=weight_decay)
    run(None, theirs, data, 50, optimizer=torch_sgd)
    for name in initial:
        assert not torch.equal(ours[name].detach(), initial[name]), name  # every parameter moved
        torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=1e-6, msg=name)


def test_sgd_first_update_of_an_appended_parameter_is_lr_times_the_decayed_gradient() -> None:
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    late = torch.tensor([3.0, 0.5], requires_grad=True)
    optimizer = SGD([{"params": [p], "lr": 0.1}], momentum=MOMENTUM, weight_decay=0.01)
    for _ in range(3):
        optimizer.zero_grad()
        (p**2).sum().backward()
        optimizer.step()
    optimizer.param_groups[0]["params"].append(late)
    optimizer.zero_grad()
    gradient = torch.tensor([2.0, -1.0])
    ((p**2).sum() + (late * gradient).sum()).backward()
    before = late.detach().clone()
    optimizer.step()
    torch.testing.assert_close(late.detach(), before - 0.1 * (gradient + 0.01 * before))
    assert torch.equal(optimizer.state[late]["momentum_buffer"], gradient + 0.01 * before)


def test_sgd_state_dict_round_trip() -> None:
    initial, data = make_problem()
    make = partial(SGD, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    uninterrupted = leaves(initial)
    run(make, uninterrupted, data, 20)

    first = leaves(initial)
    optimizer = run(make, first, data, 12)  # "late" appended at step 10
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)  # as in a checkpoint
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert set(state["state"]) == set(range(6)) and state["lrs"] == [0.01, 0.003]

    resumed = {k: v.detach().clone().requires_grad_(True) for k, v in first.items()}
    new_optimizer = make([{"params": [resumed["w1"], resumed["b1"], resumed["sometimes"], resumed["late"]], "lr": 0.5},
                          {"params": [resumed["w2"], resumed["quad"]], "lr": 0.5}])  # fmt: skip
    new_optimizer.load_state_dict(state)
    assert [g["lr"] for g in new_optimizer.param_groups] == [0.01, 0.003]  # restored from the checkpoint
    run(None, resumed, data, 8, start=12, optimizer=new_optimizer)
    for name in initial:
        torch.testing.assert_close(resumed[name], uninterrupted[name], rtol=0, atol=1e-7, msg=name)


def optim_cfg(**settings):
    return OmegaConf.create({"name": "adam", "lr": 0.1, "momentum": 0.0, "weight_decay": 0.0, **settings})


def test_build_optimizer_builds_the_named_optimiser() -> None:
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": 0.1}]
    adam = build_optimizer(optim_cfg(), groups)
    sgd = build_optimizer(optim_cfg(name="sgd", momentum=MOMENTUM, weight_decay=WEIGHT_DECAY), groups)
    assert type(adam) is Adam and isinstance(adam, Optimizer)
    assert type(sgd) is SGD and (sgd.momentum, sgd.weight_decay) == (MOMENTUM, WEIGHT_DECAY)
    assert sgd.param_groups[0]["base_lr"] == 0.1


def test_build_optimizer_refuses_an_unknown_name_and_adam_with_sgd_settings() -> None:
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": 0.1}]
    with pytest.raises(ValueError, match=r"optim.name='rmsprop' is not an optimiser; choose one of adam, sgd"):
        build_optimizer(optim_cfg(name="rmsprop"), groups)
    with pytest.raises(ValueError, match=r"optim.name=adam ignores optim.momentum \(0.9\).*or set optim.name=sgd"):
        build_optimizer(optim_cfg(momentum=0.9), groups)
    with pytest.raises(ValueError, match=r"optim.weight_decay \(0.0001\)"):
        build_optimizer(optim_cfg(weight_decay=1e-4), groups)


PAPER_SCHEDULE = [
    {"until_epoch": 5, "factor": 0.1},
    {"until_epoch": 200, "factor": 1.0},
    {"until_epoch": 300, "factor": 0.1},
    {"until_epoch": 400, "factor": 0.01},
]
"""UDN §6.2's 400-entry list [0.01]*5 + [0.1]*195 + [0.01]*100 + [0.001]*100 as factors of lr 0.1; the last holds
after epoch 400 (500 epochs)."""


def test_the_paper_schedule_at_every_boundary() -> None:
    schedule = OmegaConf.create(PAPER_SCHEDULE)  # as Hydra gives it
    check_learning_rate_schedule(schedule)
    expected = {
        1: 0.01,
        5: 0.01,
        6: 0.1,
        200: 0.1,
        201: 0.01,
        300: 0.01,
        301: 0.001,
        400: 0.001,
        401: 0.001,
        500: 0.001,
    }
    for epoch, lr in expected.items():
        assert 0.1 * learning_rate_factor(schedule, epoch) == pytest.approx(lr, rel=1e-12), epoch
    listed = [0.01] * 5 + [0.1] * 195 + [0.01] * 100 + [0.001] * 100  # epochs 1-400; the last holds to 500
    paper = listed + [listed[-1]] * 100
    assert [0.1 * learning_rate_factor(schedule, e) for e in range(1, 501)] == pytest.approx(paper, rel=1e-12)
    assert learning_rate_factor(None, 7) == 1.0


def test_the_schedule_scales_each_group_from_its_base_lr() -> None:
    groups = [
        {"params": [torch.zeros(2, requires_grad=True)], "lr": 0.1},
        {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.01},  # e.g. a depth posterior at lr / 10
    ]
    optimizer = SGD(groups, momentum=MOMENTUM)
    for epoch, factor in [(1, 0.1), (6, 1.0), (301, 0.01), (3, 0.1)]:
        apply_learning_rate_schedule(optimizer, PAPER_SCHEDULE, epoch)
        assert [g["lr"] for g in optimizer.param_groups] == [0.1 * factor, 0.01 * factor]
    apply_learning_rate_schedule(optimizer, None, 300)
    assert [g["lr"] for g in optimizer.param_groups] == [0.1, 0.01]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("step", r"optim.lr_schedule='step': write it as a list of pieces"),
        ([], r"optim.lr_schedule=\[\]: write it as a list of pieces"),
        ([{"until_epoch": 5}], r"optim.lr_schedule\[0\]=.*exactly the keys until_epoch and factor"),
        ([[5, 0.1]], r"optim.lr_schedule\[0\]=.*exactly the keys until_epoch and factor"),
        ([{"until_epoch": 0, "factor": 0.1}], r"\[0\]=.*until_epoch must be an integer greater than 0"),
        ([{"until_epoch": 5.5, "factor": 0.1}], r"\[0\]=.*until_epoch must be an integer"),
        (
            [{"until_epoch": 10, "factor": 0.1}, {"until_epoch": 10, "factor": 1.0}],
            r"optim.lr_schedule\[1\]=.*greater than 10 .*order the pieces by increasing until_epoch",
        ),
        ([{"until_epoch": 5, "factor": 0.0}], r"\[0\]=.*factor must be a positive number"),
        ([{"until_epoch": 5, "factor": -0.1}], r"\[0\]=.*factor must be a positive number"),
        ([{"until_epoch": 5, "factor": "0.1"}], r"\[0\]=.*factor must be a positive number"),
        ([{"until_epoch": 5, "factor": float("nan")}], r"\[0\]=.*factor must be a positive number"),
    ],
)
def test_a_bad_schedule_names_the_piece_and_the_fix(schedule, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_learning_rate_schedule(OmegaConf.create({"s": schedule}).s)


class Interrupted(Exception):
    """Stands for the job being killed right after a resumable checkpoint."""


def tiny_cifar(path: Path) -> Path:
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (48, 32, 32, 3), dtype=np.uint8),
        "y_train": rng.integers(0, 10, 48),
        "x_test": rng.integers(0, 256, (16, 32, 32, 3), dtype=np.uint8),
        "y_test": rng.integers(0, 10, 16),
    }
    np.savez(path, **arrays)
    return path


def test_a_resumed_sgd_run_with_schedule_and_augmentation_ends_with_the_uninterrupted_metrics(tmp_path: Path) -> None:
    """Interrupted after epoch 4's checkpoint (lr factor 1.0; epoch 5 runs at 0.1) and rerun: the schedule is applied
    again after the resume and the augmentation generator continues where it stopped."""
    from bnnrepro import train as training
    from bnnrepro.runs import RunFolder

    data = tiny_cifar(tmp_path / "cifar10.npz")
    overrides = [
        "method=resnet32", "method.blocks_per_stage=1", "method.width_multiplier=0.25", "dataset=cifar10",
        f"dataset.path={data}", "dataset.max_examples=null", "dataset.val_fraction=0.25", "scale=smoke",
        "train.epochs=6", "train.batch_size=16", "train.eval_every=2", "train.checkpoint_every=2",
        "train.augmentation=crop_flip", "optim.name=sgd", "optim.lr=0.05", f"optim.momentum={MOMENTUM}",
        f"optim.weight_decay={WEIGHT_DECAY}",
        "optim.lr_schedule=[{until_epoch: 2, factor: 0.1}, {until_epoch: 4, factor: 1.0}, "
        "{until_epoch: 5, factor: 0.1}]",
    ]  # fmt: skip

    def job(name: str, *extra: str):
        return training.compose_config([*overrides, f"run_dir={tmp_path / name}", *extra])

    reference = training.train(job("reference"), RunFolder(tmp_path / "reference"))

    class KilledAfterEpoch4(RunFolder):
        def save(self, name: str, state: dict) -> None:
            super().save(name, state)
            if name == RunFolder.RESUME and state["epoch"] == 4:
                raise Interrupted

    with pytest.raises(Interrupted):
        training.train(job("killed"), KilledAfterEpoch4(tmp_path / "killed"))
    resumed = training.train(job("killed"), RunFolder(tmp_path / "killed"))
    assert resumed["history"] == reference["history"]
    assert resumed["metrics"] == reference["metrics"]

    # not vacuous: without augmentation the run differs
    plain = training.train(job("plain", "train.augmentation=null"), RunFolder(tmp_path / "plain"))
    assert plain["history"] != reference["history"]


def test_an_unknown_augmentation_fails_before_the_first_epoch(tmp_path: Path) -> None:
    from bnnrepro import train as training
    from bnnrepro.runs import RunFolder

    data = tiny_cifar(tmp_path / "cifar10.npz")
    cfg = training.compose_config(
        ["method=resnet32", "dataset=cifar10", f"dataset.path={data}", "scale=smoke", f"run_dir={tmp_path}",
         "train.augmentation=autoaugment"]
    )  # fmt: skip
    with pytest.raises(ValueError, match="train.augmentation='autoaugment' is unknown; choose null"):
        training.train(cfg, RunFolder(tmp_path))
    assert {path.name for path in tmp_path.iterdir()} == {"cifar10.npz", "config.yaml"}  # no checkpoint, no metrics


def test_a_shortened_run_follows_the_schedule_in_proportion():
    """optim.lr_schedule_epochs: the paper's 500-epoch schedule for a 10-epoch run keeps its shape (warm-up, peak,
    two decays); for 500 epochs it is unchanged; a 1-epoch run keeps the first piece only."""
    from bnnrepro.optim import scaled_learning_rate_schedule

    pieces = [{"until_epoch": e, "factor": f} for e, f in ((5, 0.1), (200, 1.0), (300, 0.1), (400, 0.01))]
    assert scaled_learning_rate_schedule(pieces, 500, 500) == pieces
    assert scaled_learning_rate_schedule(pieces, None, 10) == pieces
    short = scaled_learning_rate_schedule(pieces, 500, 10)
    assert [learning_rate_factor(short, e) for e in range(1, 11)] == [0.1, 1.0, 1.0, 1.0, 0.1, 0.1] + [0.01] * 4
    assert scaled_learning_rate_schedule(pieces, 500, 1) == [{"until_epoch": 1, "factor": 0.1}]

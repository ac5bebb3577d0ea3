"""Bayesian neural SDEs (Haußmann 2021 thesis, ch. 6), training and configuration: gradients to every drift parameter
(the two bugs of the authors' code, `manuelhaussmann/bnsde` `bsde.py`, `bnn.py`), the forecast metrics, the errors on
bad input, the D-BNN SGLD baseline and the white box's training step, and CMU's pretrained prior knowledge and
curriculum."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.inference.pac_bayes import pac_complexity
from bnnrepro.methods.bnsde import build
from bnnrepro.metrics import forecasting_metrics
from bnnrepro.models.bayesian_drift import BayesianDrift
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.optim import Adam
from tests import bnsde_helpers
from tests.bnsde_helpers import SMALL_DRIFT, make_method, method_config, no_knowledge, parameters, weight_kl_by_hand

pytestmark = pytest.mark.usefixtures("one_torch_thread")

lorenz = bnsde_helpers.lorenz  # the module-scoped fixture, bound here: ruff reads an imported fixture as unused


# --- gradients: the authors' two bugs ------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["e_pac_bayes", "e_bayes", "elbo"])
def test_a_training_step_reaches_every_drift_parameter(lorenz, objective):
    """After one training step (Algorithm 2's loss, or eq. 6.8, or the ELBO) every parameter of the drift, the
    means and the log-variances of all three layers, has a finite gradient that is nonzero in every entry (the
    authors' weight KL read no parameters; without a KL term the log-variances must get their gradient through
    the local reparameterisation of §6.2.2)."""
    method = make_method(f"method.objective={objective}", "method.drift.widths=[8,8]")
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    torch.manual_seed(0)
    method.training_step(x, y, 20, Adam(method.parameter_groups(1e-3, 1.0)))
    named = dict(method.sde.drift.named_parameters())
    assert len(named) == 12
    for name, p in named.items():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert bool((p.grad != 0).all()), (name, int((p.grad == 0).sum()))


def test_weight_kl_reads_every_layer():
    """KL(p_phi(theta) || N(0, 1/alpha)) of Lemma 1 is the closed form summed over every weight and bias of every
    layer, and so changes when any layer's means or log-variances change (the authors' code's, `manuelhaussmann/bnsde`
    `bnn.py`, weight KL looked up attribute names that its layers did not have and was 0)."""
    torch.manual_seed(0)
    drift = BayesianDrift(3, [8, 8], "softplus")
    alpha = 0.7
    expected = weight_kl_by_hand(drift, alpha)
    assert drift.kl(alpha).item() == pytest.approx(expected, rel=1e-5)
    assert expected > 100  # log sigma^2 = -9 at initialisation: about 4 nats per weight
    base = drift.kl(alpha).item()
    for index, layer in enumerate(drift.layers):
        for name in ("weight_log_variance", "bias_log_variance", "weight_mean", "bias_mean"):
            tensor = getattr(layer, name)
            with torch.no_grad():
                tensor.add_(0.5)
            changed = drift.kl(alpha).item()
            with torch.no_grad():
                tensor.sub_(0.5)
            assert changed != pytest.approx(base, rel=1e-6), (index, name)
    assert BayesianDrift(3, [8], "relu", bayesian=False).kl(alpha).item() == 0.0


def test_consecutive_steps_do_not_accumulate_gradients(lorenz):
    """The authors' step never zeroed the gradients: here two consecutive steps on the same batch leave, after
    the second, exactly the gradient of a fresh backward pass at the weights after the first (same seed)."""
    method = make_method("method.objective=e_pac_bayes")
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    optimizer = Adam(method.parameter_groups(1e-2, 1.0))
    torch.manual_seed(0)
    method.training_step(x, y, 20, optimizer)
    first = {name: p.grad.clone() for name, p in method.named_parameters()}
    fresh = copy.deepcopy(method)
    for p in fresh.parameters():
        p.grad = None
    torch.manual_seed(1)
    method.training_step(x, y, 20, optimizer)
    torch.manual_seed(1)
    fresh.loss(x, y, 20).backward()
    for (name, p), q in zip(method.named_parameters(), fresh.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=0, msg=name)
        assert not torch.allclose(p.grad, p.grad + first[name]), name  # accumulation would have been visible


# --- forecast metrics ---------------------------------------------------------------------------------------------


def test_forecasting_metrics_against_a_hand_computation():
    """`forecasting_metrics` (Table 6.1's MSE, Table 6.2's NLL): the MSE of the sample-mean forecast averaged over
    sequences, steps and dimensions; the NLL of each sequence under the moment-matched Gaussian predictive
    N(mean_s, var_s (population) + noise) summed over its steps and dimensions, then averaged over sequences."""
    samples = torch.tensor(
        [
            [[[0.0, 1.0], [2.0, 0.5]], [[1.0, -1.0], [0.0, 3.0]]],
            [[[1.0, 2.0], [1.0, 0.5]], [[3.0, -2.0], [1.0, 1.0]]],
            [[[2.0, 0.0], [0.0, 2.0]], [[2.0, 0.0], [2.0, 2.0]]],
        ]
    )  # [S = 3, B = 2, L = 2, D = 2]
    y = torch.tensor([[[1.0, 0.0], [1.0, 1.0]], [[0.0, -1.0], [2.0, 0.0]]])
    noise = 0.25
    squared, nll_per_sequence = [], []
    for n in range(2):
        total = 0.0
        for step in range(2):
            for d in range(2):
                values = [float(samples[s, n, step, d]) for s in range(3)]
                mean = sum(values) / 3
                variance = sum((v - mean) ** 2 for v in values) / 3 + noise
                target = float(y[n, step, d])
                squared.append((mean - target) ** 2)
                total += 0.5 * (math.log(2 * math.pi * variance) + (target - mean) ** 2 / variance)
        nll_per_sequence.append(total)
    metrics = forecasting_metrics(samples, y, noise)
    assert metrics["mse"] == pytest.approx(sum(squared) / len(squared), rel=1e-6)
    assert metrics["nll"] == pytest.approx(sum(nll_per_sequence) / 2, rel=1e-6)


# --- errors on bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["method.knowledge.gamma=[0,1]"], r"knowledge\.gamma \[0, 1\] has 2 entries for a 3-dimensional state"),
        (["method.knowledge.gamma=[0,1.5,0]"], r"knowledge\.gamma .* has weights \[1\.5\] outside \[0, 1\]"),
        (["method.knowledge.gamma=[-0.1,0,0]"], r"weights \[-0\.1\] outside \[0, 1\]"),
        (["method.delta=0"], r"delta is 0"),
        (["method.delta=1.5"], r"delta is 1\.5"),
        (["dataset.dynamics.diffusion=[1.0,0.0,1.0]"], r"diffusion \[1\.0, 0\.0, 1\.0\] must have 3 positive entries"),
        (["dataset.dynamics.diffusion=[1.0,-1.0,1.0]"], r"diffusion \[1\.0, -1\.0, 1\.0\] must have 3 positive"),
        (["dataset.dynamics.diffusion=[1.0,1.0]"], r"diffusion \[1\.0, 1\.0\] must have 3 positive entries"),
        (["method.objective=map"], r"unknown method\.objective 'map'"),
        (["dataset.dynamics.parameter_noise_std=-1"], r"parameter_noise_std is -1"),
        (
            ["dataset.dynamics.system=pendulum", "method.knowledge.gamma=[1,1,1]"],
            r"unknown knowledge\.system 'pendulum'",
        ),
        (["method.weight_sampling=per_weight"], r"unknown method\.weight_sampling 'per_weight'"),
        (["dataset.dynamics.likelihood_variance=0"], r"likelihood_variance is 0"),
        (["dataset.dynamics.system=null", "method.knowledge.gamma=[0,0,1]"], r"knows no system to weigh"),
    ],
)
def test_bad_configs_name_the_value(overrides, match):
    with pytest.raises(ValueError, match=match):
        make_method(*overrides)


def test_bad_arguments_name_the_value():
    for delta in (0.0, 1.0, -0.2):
        with pytest.raises(ValueError, match=rf"delta is {delta}"):
            pac_complexity(torch.tensor(1.0), 10, delta)
    drift = BayesianDrift(2, [4], "tanh")
    with pytest.raises(ValueError, match=r"unknown weight_sampling 'per_step'"):
        drift.draw(3, "per_step")
    with pytest.raises(ValueError, match=r"unknown drift activation 'sigmoid'"):
        BayesianDrift(2, [4], "sigmoid")
    with pytest.raises(ValueError, match=r"diffusion \[0\.2\] must have 2 positive entries"):
        HybridSDE(drift, no_knowledge(2), [0.2])
    with pytest.raises(ValueError, match=r"method bnsde forecasts sequences"):
        build(method_config("lorenz", (SMALL_DRIFT,)), DataSpec("regression", 1, 0, (1,)))


# --- the D-BNN SGLD baseline and the white box -------------------------------------------------------------------


def test_sgld_trains_point_weights(lorenz):
    """D-BNN (SGLD) (Look & Kandemir 2019, §6.4 baselines): point weights only (no log-variance exists), a
    deterministic drift, and one Langevin step moves every weight."""
    method = make_method("method.objective=sgld")
    names = [name for name, _ in method.named_parameters()]
    assert names and not [name for name in names if "variance" in name]
    assert not method.sde.drift.bayesian
    h, t = torch.randn(5, 3), torch.rand(5)
    drift = method.sde.drift
    torch.testing.assert_close(drift.draw(5, "per_trajectory")(h, t), drift.draw(5, "mean")(h, t))
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    before = parameters(method)
    torch.manual_seed(0)
    loss = method.training_step(x, y, 20, Adam(method.parameter_groups(1e-4, 1.0)))
    assert math.isfinite(loss)
    for name, value in parameters(method).items():
        assert torch.isfinite(value).all(), name
        assert bool((value != before[name]).all()), name


def test_white_box_has_nothing_to_train(lorenz):
    """The white-box prior SDE (objective none, eq. 6.6) has no drift network and no parameters; its training
    step returns a finite loss and leaves the state as it was."""
    method = make_method("method.objective=none", "method.knowledge.gamma=[1,1,1]")
    assert method.sde.drift is None and list(method.parameters()) == []
    state = {name: value.clone() for name, value in method.state_dict().items()}
    x, y = torch.as_tensor(lorenz.x("train"))[:2], torch.as_tensor(lorenz.y("train"))[:2]
    loss = method.training_step(x, y, 20, Adam(method.parameter_groups(1e-3, 1.0)))
    assert math.isfinite(loss)
    after = method.state_dict()
    assert after.keys() == state.keys()
    for name, value in state.items():
        assert torch.equal(after[name], value), name


# --- CMU's pretrained prior knowledge ------------------------------------------------------------------------------


def test_pretrained_knowledge_with_null_gamma_weighs_every_latent_dimension():
    """config/train/method/bnsde.yaml: knowledge.gamma null "with `pretrained` [means] every latent dimension":
    the CMU hybrids of Table 6.2 (§6.4.3; the study's e_*_hybrid@cmu set only pretrained: true) must add the
    pretrained drift with gamma = 1 in all six latent dimensions."""
    length, frames = 10, 5
    arrays = {
        f"{a}_{s}": np.random.default_rng(0).standard_normal((3, length, frames)).astype(np.float32)
        for a in "xy"
        for s in ("train", "val", "test")
    }
    cfg = method_config(
        "cmu_mocap35", (SMALL_DRIFT, "method.knowledge.pretrained=true", "method.knowledge.pretrain_epochs=0")
    )
    torch.manual_seed(0)
    method = build(cfg, DataSpec("forecasting", length, 0, (length, frames)), Splits(arrays))
    assert method.sde.knowledge.active
    torch.testing.assert_close(method.sde.knowledge.gamma, torch.ones(6))


def test_curriculum_switches_snippet_length_at_the_thesis_epochs():
    """CMU's curriculum (§6.6.3): snippets of 30 frames up to epoch 1000 of 3000, 50 up to 2500, then 100; the
    fractions 1/3 and 5/6 of the config round to those epochs."""
    curriculum = "method.curriculum={lengths: [30,50,100], until_fraction: [0.3333333,0.8333333]}"
    cfg = method_config("cmu_mocap35", (SMALL_DRIFT, curriculum, "train.epochs=3000"))
    method = build(cfg, DataSpec("forecasting", 300, 0, (300, 50)))
    sequences = torch.zeros(2, 300, 50)
    lengths = {}
    for done in (0, 999, 1000, 2499, 2500, 2999):
        method.epochs_done.fill_(done)
        lengths[done + 1] = method.snippet(sequences).shape[1]
    assert lengths == {1: 30, 1000: 30, 1001: 50, 2500: 50, 2501: 100, 3000: 100}

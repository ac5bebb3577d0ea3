"""The deep ensemble with variance heads (Lakshminarayanan et al. 2017 §2.2.1, §2.4), the one their UCI benchmark
reports: each member's Gaussian NLL is its training loss, and the evaluation's predictive is the members' mixture
moment-matched, checked against torch.distributions on the same outputs; without heads the ensemble is unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.distributions import Normal

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.methods import build_method
from bnnrepro.methods.protocol import observation_variance
from bnnrepro.metrics import gaussian_predictive_nll
from bnnrepro.optim import Adam
from bnnrepro.train import compose_config, evaluate

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOY = DataSpec("regression", 1, 0, (1,))


def ensemble(*overrides: str):
    cfg = compose_config(["method=deep_ensemble", "dataset=sdebnn_toy", "run_dir=unused", *overrides])
    torch.manual_seed(0)
    return build_method(cfg, TOY)


def test_each_member_trains_on_its_gaussian_nll() -> None:
    method = ensemble("method.variance_heads=true", "method.num_members=3")
    x, y = torch.randn(7, 1), torch.randn(7, 1)
    means, variances = method(x)
    assert means.shape == variances.shape == (3, 7, 1) and bool((variances > 0).all())
    per_member = [-Normal(means[k], variances[k].sqrt()).log_prob(y).mean() - 0.5 * math.log(2 * math.pi)
                  for k in range(3)]  # fmt: skip
    assert float(method.loss(x, y, 7)) == pytest.approx(float(sum(per_member)), rel=1e-5)


def test_the_predictive_is_the_moment_matched_mixture() -> None:
    method = ensemble("method.variance_heads=true", "method.num_members=4")
    x, y = torch.linspace(-2, 2, 9)[:, None], torch.randn(9, 1)
    means, variances = (t.double() for t in method(x))
    mixture_mean = means.mean(0)
    mixture_variance = (variances + means.square()).mean(0) - mixture_mean.square()  # §2.4
    expected = -Normal(mixture_mean, mixture_variance.sqrt()).log_prob(y.double()).mean()
    got = gaussian_predictive_nll(method.predict(x), y, observation_variance(method, x))
    assert got == pytest.approx(float(expected), rel=1e-5)


def test_heads_learn_a_noise_level_that_the_squared_error_ensemble_cannot() -> None:
    """On data with noise std 0.5 the heads' variance approaches 0.25 and the evaluation's NLL is finite and near the
    noise's entropy; the squared-error ensemble (Fig. 10's) has no noise term and a far larger NLL (the negative
    control)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(400, 1)).astype(np.float32)
    y = (x + 0.5 * rng.normal(size=x.shape)).astype(np.float32)
    splits = Splits({"x_train": x[:300], "y_train": y[:300], "x_val": x[300:350], "y_val": y[300:350],
                     "x_test": x[350:], "y_test": y[350:]})  # fmt: skip
    data = {s: (torch.as_tensor(splits.x(s)), torch.as_tensor(splits.y(s))) for s in ("train", "val", "test")}
    results = {}
    for heads in (True, False):
        method = ensemble(f"method.variance_heads={str(heads).lower()}", "method.num_members=3")
        optimizer = Adam(method.parameter_groups(0.01, 1.0))
        for _ in range(300):
            method.training_step(*data["train"], 300, optimizer)
        results[heads] = evaluate(method, data, "regression", ("test",))
        if heads:
            assert float(method.noise_variance_at(data["test"][0]).mean()) == pytest.approx(0.25, rel=0.3)
    entropy = 0.5 * math.log(2 * math.pi * math.e * 0.25)
    assert results[True]["test_nll"] == pytest.approx(entropy, abs=0.2)
    assert results[False]["test_nll"] > entropy + 1.0
    assert ensemble().noise_variance_at(data["test"][0]) == 0.0

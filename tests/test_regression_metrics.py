"""The regression metrics of the training loop (bnnrepro.train.evaluate): the Gaussian predictive NLL of a real
method's samples against torch.distributions, the metrics in the original units of standardised targets, the
observation noise of each method's predictive (`noise_variance`), and the selection of the reported evaluation by a
metric to minimise (train.select_mode), checked before the first epoch."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import DictConfig
from torch.distributions import Normal

from bnnrepro.data.registry import generate_instance
from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.methods import build_method
from bnnrepro.methods.toy_baselines import GaussianProcessRegression, MeanFieldBNN
from bnnrepro.model_selection import summarise
from bnnrepro.optim import Adam
from bnnrepro.runs import RunFolder
from bnnrepro.train import compose_config, evaluate, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

Y_MEAN, Y_STD = 3.0, 2.5


def tiny_splits(standardised: bool) -> Splits:
    """30 points of a noisy sine, 20/5/5; with the UCI loader's y_mean and y_std when `standardised`."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(30, 1)).astype(np.float32)
    y = (np.sin(3 * x) + 0.1 * rng.normal(size=x.shape)).astype(np.float32)
    arrays = {"x_train": x[:20], "y_train": y[:20], "x_val": x[20:25], "y_val": y[20:25]}
    arrays.update({"x_test": x[25:], "y_test": y[25:]})
    if standardised:
        arrays.update({"y_mean": np.array(Y_MEAN), "y_std": np.array(Y_STD)})
    return Splits(arrays)


def tensors(splits: Splits) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    return {s: (torch.as_tensor(splits.x(s)), torch.as_tensor(splits.y(s))) for s in ("train", "val", "test")}


def method_config(name: str, *overrides: str) -> DictConfig:
    return compose_config([f"method={name}", "dataset=sdebnn_toy", "run_dir=unused", "scale=smoke", *overrides])


def trained(name: str, splits: Splits) -> torch.nn.Module:
    """The method after one full-batch step (the GP then conditions on the training data)."""
    torch.manual_seed(0)
    method = build_method(method_config(name), splits.spec("regression"))
    x, y = tensors(splits)["train"]
    method.training_step(x, y, len(x), Adam(method.parameter_groups(0.01, 1.0)))
    return method


@pytest.mark.parametrize("name", ["gp", "mfvi"])
def test_the_nll_is_that_of_the_moment_matched_gaussian_predictive_in_both_units(name: str) -> None:
    splits = tiny_splits(standardised=True)
    method, data = trained(name, splits), tensors(splits)
    torch.manual_seed(1)
    metrics = evaluate(method, data, "regression", ("test",), splits.target_standardisation())
    torch.manual_seed(1)
    x, y = data["test"]
    samples, y = method.predict(x).double(), y.double()  # the draws that evaluate saw
    mean, variance = samples.mean(0), samples.var(0, unbiased=False) + method.noise_variance()
    nll = -Normal(mean, variance.sqrt()).log_prob(y).sum(-1).mean()
    assert metrics["test_nll"] == pytest.approx(float(nll), rel=1e-9)
    assert metrics["test_rmse"] == pytest.approx(float((mean - y).square().mean().sqrt()), rel=1e-6)
    # the original units y_original = Y_MEAN + Y_STD y: the predictive's mean and std scale with the targets
    original = Normal(Y_MEAN + Y_STD * mean, Y_STD * variance.sqrt()).log_prob(Y_MEAN + Y_STD * y)
    assert metrics["test_nll_original"] == pytest.approx(float(-original.sum(-1).mean()), rel=1e-5)
    assert metrics["test_nll_original"] == pytest.approx(metrics["test_nll"] + math.log(Y_STD), rel=1e-5)
    assert metrics["test_rmse_original"] == pytest.approx(metrics["test_rmse"] * Y_STD, rel=1e-5)


def test_targets_in_their_original_units_report_the_same_metrics_in_both() -> None:
    splits = tiny_splits(standardised=False)
    assert splits.target_standardisation() == (0.0, 1.0)
    assert tiny_splits(standardised=True).target_standardisation() == (Y_MEAN, Y_STD)
    metrics = evaluate(trained("mfvi", splits), tensors(splits), "regression", ("val", "test"))
    for split in ("val", "test"):
        assert metrics[f"{split}_rmse_original"] == metrics[f"{split}_rmse"]
        assert metrics[f"{split}_nll_original"] == metrics[f"{split}_nll"]


def test_the_noise_variance_of_each_method() -> None:
    gp = GaussianProcessRegression(1, 0.5, 1.0, 0.03, eval_samples=3)
    with torch.no_grad():
        gp.log_noise_variance.fill_(math.log(0.2))
    assert gp.noise_variance() == pytest.approx(math.exp(float(gp.log_noise_variance.detach())))
    toy = DataSpec("regression", 1, 0, (1,))
    mfvi = build_method(method_config("mfvi", "method.likelihood.scale=0.3"), toy)
    assert isinstance(mfvi, MeanFieldBNN)
    assert mfvi.noise_variance() == pytest.approx(float(mfvi.likelihood.log_scale.exp()) ** 2) == 0.09
    laplace = build_method(method_config("laplace", "method.likelihood.scale=0.2"), toy)
    assert laplace.noise_variance() == pytest.approx(0.04)
    assert build_method(method_config("deep_ensemble"), toy).noise_variance() == 0.0
    spirals = compose_config(["method=udn", "dataset=spirals", "run_dir=unused"])
    assert build_method(spirals, DataSpec("classification", 2, 2, (2,))).noise_variance() == 0.0


def test_the_variance_of_each_likelihood_family() -> None:
    variances = {family: RegressionLikelihood(0.5, family).variance for family in RegressionLikelihood.FAMILIES}
    assert variances == {"gaussian": pytest.approx(0.25), "laplace": pytest.approx(0.5), "cauchy": math.inf}


# --- model selection -------------------------------------------------------------------------------------------

HISTORY = [
    {"epoch": 5, "val_nll": 0.7, "val_accuracy": 0.6},
    {"epoch": 10, "val_nll": 0.5, "val_accuracy": 0.8},
    {"epoch": 15, "val_nll": 0.5, "val_accuracy": 0.8},
    {"epoch": 20, "val_nll": 0.9, "val_accuracy": 0.7},
]


def test_summarise_selects_the_minimum_or_the_maximum_earliest_on_ties() -> None:
    lowest = summarise(HISTORY, "val_nll", "min")
    assert lowest == {"selected_epoch": 10, "val_nll": 0.5, "val_accuracy": 0.8, "last_val_nll": 0.9,
                      "last_val_accuracy": 0.7}  # fmt: skip
    assert summarise(HISTORY, "val_accuracy", "max")["selected_epoch"] == 10
    assert summarise(HISTORY, "epoch", "max")["selected_epoch"] == 20
    assert summarise(HISTORY, "epoch", "min")["selected_epoch"] == 5
    with pytest.raises(ValueError, match="select_mode must be one of max, min, got 'lowest'"):
        summarise(HISTORY, "val_nll", "lowest")


def toy_run(tmp_path: Path, *overrides: str) -> tuple[DictConfig, RunFolder]:
    """MFVI on the SDE-BNN toy at smoke scale (10 epochs, evaluations at 5 and 10; no validation split)."""
    data = tmp_path / "toy.npz"
    generate_instance("sdebnn_toy", "seed=0", data)
    run_dir = tmp_path / "run"
    overrides = (f"dataset.path='{data}'", f"run_dir='{run_dir}'", *overrides)
    return method_config("mfvi", *overrides), RunFolder(run_dir)


def no_step(*args: object) -> float:
    pytest.fail("an epoch ran")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "train.select_by=val_accuracy",
            r"train.select_by='val_accuracy' is not recorded by the evaluations of a regression run; valid: epoch, "
            r"val_rmse, val_nll, val_rmse_original, val_nll_original, val_crps, val_crps_original, val_coverage_50, "
            r"val_coverage_90, val_coverage_95, val_quantile_calibration_error, test_rmse, .*, "
            r"test_quantile_calibration_error, or a diagnostic of method 'mfvi': set train.select_by in "
            r"config/train/protocol/sdebnn_toy_smoke.yaml",
        ),
        ("train.select_by=val_rmse", r"the val split of dataset 'sdebnn_toy' is empty"),
        ("train.select_mode=lowest", r"train.select_mode='lowest' is not one of max, min"),
    ],
)
def test_a_bad_selection_fails_before_the_first_epoch(tmp_path: Path, monkeypatch, override: str, message: str):
    monkeypatch.setattr(MeanFieldBNN, "training_step", no_step)
    cfg, run = toy_run(tmp_path, override)
    with pytest.raises(ValueError, match=message):
        train(cfg, run)
    assert {path.name for path in run.path.iterdir()} == {"config.yaml"}  # no metrics, checkpoint or resume state


def test_a_selection_by_an_unknown_diagnostic_fails_at_the_first_evaluation(tmp_path: Path) -> None:
    cfg, run = toy_run(tmp_path, "train.select_by=kll")
    with pytest.raises(ValueError, match=r"nor a diagnostic of method 'mfvi' \(kl, likelihood_scale\)"):
        train(cfg, run)
    assert {path.name for path in run.path.iterdir()} == {"config.yaml"}


def test_a_regression_run_selects_the_evaluation_that_minimises_the_test_nll(tmp_path: Path) -> None:
    train(*toy_run(tmp_path, "train.select_by=test_nll", "train.select_mode=min"))
    result = json.loads((tmp_path / "run" / "metrics.json").read_text())
    history, metrics = result["history"], result["metrics"]
    best = min(history, key=lambda record: record["test_nll"])
    assert metrics["selected_epoch"] == best["epoch"] and metrics["test_nll"] == best["test_nll"]
    assert metrics["last_test_rmse_original"] == metrics["last_test_rmse"]  # the toy's targets are not standardised

"""Repulsive ensembles and HMC as training-loop methods (bnnrepro.methods.repulsive_ensembles, .hmc,
bnnrepro.inference.posterior_targets): the loop's gradient step applies each update rule to the exact log posterior,
WGD without repulsion is the deep ensemble, NUTS recovers a conjugate Gaussian posterior, every method config trains,
and a trained run reloads for its figure's evaluation with the numbers the training job reported.

The update rules and score estimators themselves are tested in test_repulsive_inference.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Normal

from bnnrepro.data.registry import generate_instance, load_splits
from bnnrepro.evaluations.__main__ import main as evaluate
from bnnrepro.evaluations.inputs import load_run
from bnnrepro.evaluations.posterior_arrays import EVALUATION as FIGURE_ARRAYS
from bnnrepro.inference.posterior_targets import GaussianLogLikelihood, NetworkPosterior
from bnnrepro.inference.repulsive import (
    ensemble_vjp,
    fsvgd_direction,
    function_space_scores,
    fwgd_direction,
    sample_prior_outputs,
    svgd_direction,
    wgd_direction,
)
from bnnrepro.inference.score_estimators import kde_score
from bnnrepro.methods import build_method
from bnnrepro.methods.hmc import HamiltonianMonteCarlo
from bnnrepro.models.posterior_networks import relu_mlp
from bnnrepro.optim import Adam
from bnnrepro.runs import RunFolder
from bnnrepro.train import compose_config, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ENSEMBLE_CONFIGS = (
    "map_ensemble",
    "svgd",
    "fsvgd",
    "kde_wgd",
    "sge_wgd",
    "ssge_wgd",
    "kde_fwgd",
    "sge_fwgd",
    "ssge_fwgd",
)
FUNCTION_SPACE = ("fsvgd", "kde_fwgd", "sge_fwgd", "ssge_fwgd")
DATASETS = ("repulsive_toy", "repulsive_2d", "gaussian_target")
TINY_HMC = ("method.num_chains=1", "method.warmup_steps=3", "method.num_samples=4", "method.max_tree_depth=2")


@pytest.fixture(scope="module")
def data_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("data")
    files = {}
    for name in (*DATASETS, "funnel_target"):
        files[name] = root / f"{name}.npz"
        generate_instance(name, "seed=0" if name != "funnel_target" else "n_particles=30+seed=0", files[name])
    return files


def build(method: str, dataset: str, data_files: dict[str, Path], *overrides: str, seed: int = 0) -> nn.Module:
    """The method of config/train/method/<method>.yaml on `dataset`, built as a training job builds it."""
    cfg = compose_config(
        [f"method={method}", f"dataset={dataset}", f"dataset.path='{data_files[dataset]}'", "run_dir=unused",
         "scale=smoke", *overrides]
    )  # fmt: skip
    torch.manual_seed(seed)
    splits = load_splits(cfg.dataset)
    return build_method(cfg, splits.spec(cfg.dataset.task), splits)


def batch(dataset: str, data_files: dict[str, Path], size: int = 32) -> tuple[torch.Tensor, torch.Tensor, int]:
    splits = load_splits({"name": dataset, "path": str(data_files[dataset])})
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    return x[:size], y[:size], len(x)


# --- the loop's step is the paper's update --------------------------------------------------------------------


def exact_weight_scores(method: nn.Module, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
    """grad_w [N/B sum_b log N(y_b | f(x_b; w), 1) + log N(w | 0, I)] of each particle by a loop over particles,
    with torch.distributions (likelihood std 1 and prior variance 1 in posterior_network.yaml)."""
    network = method.target.network
    rows = []
    for w in method.particles.detach():
        w = w.clone().requires_grad_()
        offset, parameters = 0, {}
        for name, p in network.named_parameters():
            parameters[name] = w[offset : offset + p.numel()].view(p.shape)
            offset += p.numel()
        outputs = torch.func.functional_call(network, parameters, (x,))
        log_posterior = num_train * Normal(outputs, 1.0).log_prob(y).mean() + Normal(0.0, 1.0).log_prob(w).sum()
        rows.append(torch.autograd.grad(log_posterior, w)[0])
    return torch.stack(rows)


@pytest.mark.parametrize("config", ["map_ensemble", "kde_wgd", "svgd"])
def test_weight_space_step_follows_the_rule_on_the_exact_posterior(config: str, data_files) -> None:
    method = build(config, "repulsive_toy", data_files, "method.num_particles=5")
    x, y, num_train = batch("repulsive_toy", data_files)
    particles = method.particles.detach().clone()
    scores = exact_weight_scores(method, x, y, num_train)
    expected = {
        "map_ensemble": scores,
        "kde_wgd": wgd_direction(particles, scores, kde_score),
        "svgd": svgd_direction(particles, scores),
    }[config]
    method.training_step(x, y, num_train, Adam(method.parameter_groups(0.01, 1.0)))
    torch.testing.assert_close(method.particles.grad, -expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("config", ["kde_fwgd", "fsvgd"])
def test_function_space_step_follows_the_rule(config: str, data_files) -> None:
    """The loop's gradient is minus eq. (20)/(7) pulled back by eq. (5), computed from the library's parts with the
    same draws of the push-forward prior."""
    method = build(config, "repulsive_toy", data_files, "method.num_particles=5")
    x, y, num_train = batch("repulsive_toy", data_files)
    network, particles = method.target.network, method.particles.detach().clone()
    torch.manual_seed(1)
    loss = method.training_step(x, y, num_train, Adam(method.parameter_groups(0.01, 1.0)))
    torch.manual_seed(1)
    outputs, pull_back = ensemble_vjp(network, particles, x)
    prior_outputs = sample_prior_outputs(network, x, len(particles), 1.0)
    log_likelihood = GaussianLogLikelihood(1.0)
    scores = function_space_scores(outputs, y, log_likelihood, num_train, prior_outputs)
    if config == "kde_fwgd":
        expected = fwgd_direction(outputs, scores, pull_back, kde_score)
    else:
        expected = fsvgd_direction(outputs, scores, pull_back)
    torch.testing.assert_close(method.particles.grad, -expected, rtol=1e-4, atol=1e-3)
    log_posterior = num_train * log_likelihood(outputs, y).mean(1) - particles.square().sum(1) / 2
    torch.testing.assert_close(torch.tensor(loss), -log_posterior.mean() / num_train)


def test_wgd_without_repulsion_is_the_deep_ensemble(data_files) -> None:
    """Five Adam steps of kde-WGD with its estimator replaced by zero move the particles exactly as the deep
    ensemble (same initial particles, same batches); with the repulsion they move elsewhere."""
    x, y, num_train = batch("repulsive_toy", data_files)
    moved = {}
    for name, config, repulsion in (("de", "map_ensemble", True), ("wgd", "kde_wgd", True), ("off", "kde_wgd", False)):
        method = build(config, "repulsive_toy", data_files, "method.num_particles=6")
        if not repulsion:
            method.estimator = torch.zeros_like
        optimizer = Adam(method.parameter_groups(0.01, 1.0))
        for _ in range(5):
            method.training_step(x, y, num_train, optimizer)
        moved[name] = method.particles.detach()
    torch.testing.assert_close(moved["off"], moved["de"], rtol=0, atol=0)
    assert (moved["wgd"] - moved["de"]).abs().max() > 1e-3


def test_hyper_deep_ensemble_gives_each_member_its_prior_on_regression(data_files) -> None:
    """On regression as on classification, the hyper-deep ensemble's members ascend posteriors under their own prior
    variances (in blocks): from the same particles and batches, five steps move them elsewhere than the deep
    ensemble's (one prior for all), whose member prior is the one its config states."""
    x, y, num_train = batch("repulsive_toy", data_files)
    moved = {}
    for config in ("map_ensemble", "hyper_deep_ensemble"):
        method = build(config, "repulsive_toy", data_files, "method.num_particles=10")
        optimizer = Adam(method.parameter_groups(0.01, 1.0))
        for _ in range(5):
            method.training_step(x, y, num_train, optimizer)
        moved[config] = method
    variances = torch.tensor([0.01, 0.04, 0.09, 0.16, 0.25]).repeat_interleave(2)
    torch.testing.assert_close(moved["hyper_deep_ensemble"].target.prior_variance, variances)
    assert moved["map_ensemble"].target.prior_variance == 1.0
    particles = {name: method.particles.detach() for name, method in moved.items()}
    assert (particles["hyper_deep_ensemble"] - particles["map_ensemble"]).abs().max() > 1e-3


# --- HMC ------------------------------------------------------------------------------------------------------


def test_hmc_recovers_the_posterior_of_a_conjugate_linear_regression() -> None:
    """A linear model f(x) = a x + b, likelihood N(y | f, 0.7^2) and prior N(0, 0.5 I): the posterior of (a, b) is
    Gaussian in closed form. Two chains of 500 NUTS draws match its mean to 0.25 posterior sd and its covariance to
    25% (Monte Carlo error about 0.05 sd and 7% at this size; doubling the likelihood or dropping the prior moves
    the moments by more than the tolerances)."""
    std, prior_variance = 0.7, 0.5
    generator = torch.Generator().manual_seed(0)
    x = torch.linspace(-2, 2, 6)[:, None]
    y = 1.5 * x - 0.5 + std * torch.randn(6, 1, generator=generator)
    features = torch.cat([x, torch.ones_like(x)], 1)  # the flat weights are (weight, bias): nn.Linear's order
    precision = features.T @ features / std**2 + torch.eye(2) / prior_variance
    covariance = torch.linalg.inv(precision)
    mean = covariance @ features.T @ y[:, 0] / std**2

    torch.manual_seed(0)
    target = NetworkPosterior(relu_mlp(1, [], 1), GaussianLogLikelihood(std), prior_variance, "regression")
    hmc = HamiltonianMonteCarlo(target, num_chains=2, warmup_steps=200, num_samples=500, max_tree_depth=4)
    hmc.training_step(x, y, len(x), Adam(hmc.parameter_groups(0.01, 1.0)))
    samples = hmc.samples.double()
    sd = covariance.diagonal().sqrt()
    assert ((samples.mean(0) - mean).abs() / sd).max() < 0.25
    assert ((samples.T.cov() - covariance).abs() / sd.outer(sd)).max() < 0.25


def test_hmc_potential_is_the_particles_log_posterior(data_files) -> None:
    method = build("hmc", "repulsive_2d", data_files, *TINY_HMC)
    x, y, num_train = batch("repulsive_2d", data_files, size=200)
    weights = method.samples[:2]
    single = torch.stack([method.target.single_log_density(w, x, y, num_train) for w in weights])
    torch.testing.assert_close(single, method.target.log_density(weights, x, y, num_train))


# --- every config trains ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("config", ENSEMBLE_CONFIGS)
def test_every_ensemble_config_builds_and_takes_a_step(config: str, dataset: str, data_files) -> None:
    if dataset == "gaussian_target" and config in FUNCTION_SPACE:
        with pytest.raises(ValueError, match="no function space"):
            build(config, dataset, data_files)
        return
    method = build(config, dataset, data_files, "method.num_particles=4")
    before = method.particles.detach().clone()
    optimizer = Adam(method.parameter_groups(0.01, 1.0))
    loss = method.training_step(*batch(dataset, data_files), optimizer)
    assert math.isfinite(loss) and (method.particles - before).abs().max() > 0
    assert len(method.particles) == (100 if dataset == "gaussian_target" else 4)  # a target's particles: its data's


@pytest.mark.parametrize("dataset", ["repulsive_toy", "repulsive_2d"])
def test_hmc_config_builds_and_samples(dataset: str, data_files) -> None:
    method = build("hmc", dataset, data_files, *TINY_HMC)
    prior_draws = method.samples.clone()
    x, y, num_train = batch(dataset, data_files, size=200)
    optimizer = Adam(method.parameter_groups(0.01, 1.0))
    loss = method.training_step(x, y, num_train, optimizer)
    assert math.isfinite(loss) and method.samples.shape == prior_draws.shape
    assert not torch.equal(method.samples, prior_draws)
    with pytest.raises(ValueError, match="full-data posterior"):
        method.training_step(x[:10], y[:10], num_train, optimizer)


# --- checkpoints reload for the figures' evaluation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "dataset", "overrides"),
    [
        ("kde_fwgd", "repulsive_toy", ("method.num_particles=4",)),
        ("svgd", "repulsive_2d", ("method.num_particles=4",)),
        ("sge_wgd", "funnel_target", ("dataset.n_particles=30",)),  # the instance the fixture generates
        ("hmc", "repulsive_toy", (*TINY_HMC, "train.epochs=1", "train.batch_size=1000")),
    ],
)
def test_a_trained_run_reloads_for_its_figure(config: str, dataset: str, overrides, data_files, tmp_path) -> None:
    """Train a run as the workflow's job does, evaluate it from its checkpoint, and find the numbers the job
    reported: the test RMSE of the predictive mean on the grid (regression), the test accuracy of the reloaded
    predictive (classification), the final MMD (sampling)."""
    run_dir = tmp_path / "run"
    cfg = compose_config(
        [f"method={config}", f"dataset={dataset}", f"dataset.path='{data_files[dataset]}'", f"run_dir='{run_dir}'",
         "scale=smoke", *overrides]
    )  # fmt: skip
    train(cfg, RunFolder(run_dir))
    metrics = json.loads((run_dir / "metrics.json").read_text())["metrics"]
    out = run_dir / "eval" / f"{FIGURE_ARRAYS}.npz"
    evaluate([str(run_dir), FIGURE_ARRAYS, str(out)])
    arrays = dict(np.load(out))
    if dataset == "repulsive_toy":
        error = arrays["posterior_predictive"].mean(0) - arrays["y_grid"][:, 0]
        assert math.isclose(np.sqrt((error**2).mean()), metrics["last_test_rmse"], rel_tol=1e-5)
        assert not np.allclose(arrays["posterior_predictive"], arrays["prior_predictive"])
    elif dataset == "repulsive_2d":
        _, splits, method, _ = load_run(run_dir)
        predicted = method.predict(torch.as_tensor(splits.x("test"))).argmax(-1).numpy()
        assert (predicted == splits.y("test")).mean() == pytest.approx(metrics["last_test_accuracy"])
        assert arrays["entropy"].shape == (20, 20) and (arrays["entropy"] >= 0).all()
    else:
        assert float(arrays["mmd"]) == pytest.approx(metrics["last_mmd"], rel=1e-5)
        assert arrays["particles"].shape == arrays["initial"].shape == (30, 2)
        assert not np.allclose(arrays["particles"], arrays["initial"])

"""The toy-regression comparison models of SDE-BNN paper Fig. 10 (App. C.6): the exact GP against scikit-learn,
the MFVI KL against torch.distributions, the vectorised deep ensemble against its members one by one, and each
method fitting the SDE-BNN toy."""

import copy
import math

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from torch import nn
from torch.distributions import Normal, kl_divergence

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.data.toy_regression import generate_sdebnn_toy
from bnnrepro.evaluations import toy_paths
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods import build_method, toy_baselines
from bnnrepro.optim import Adam
from bnnrepro.train import compose_config

METHODS = ("gp", "deep_ensemble", "mfvi")
NUM_TRAIN = 40


@pytest.fixture(scope="module")
def toy():
    return generate_sdebnn_toy(0)


@pytest.fixture(scope="module")
def configs():
    return {
        name: compose_config(
            [f"method={name}", "dataset=sdebnn_toy", "scale=smoke", "run_dir=/tmp/x", "dataset.path=/tmp/x.npz"]
        )
        for name in METHODS
    }


def build(configs, toy, name: str) -> nn.Module:
    torch.manual_seed(0)
    return toy_baselines.build(configs[name], toy.spec("regression"))


def tensors(toy, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(toy.x(split)), torch.as_tensor(toy.y(split))


def test_gp_matches_sklearn(toy):
    lengthscale, signal_variance, noise_variance = 0.4, 0.8, 0.02
    gp = toy_baselines.GaussianProcessRegression(1, lengthscale, signal_variance, noise_variance, eval_samples=3)
    x, y = tensors(toy, "train")
    gp.condition_on(x, y)
    lml = -NUM_TRAIN * gp.loss(x, y, NUM_TRAIN)
    grid = torch.as_tensor(toy.x("test"), dtype=torch.float64)
    mean, covariance = gp.posterior(grid)

    kernel = ConstantKernel(signal_variance) * RBF(lengthscale)
    sklearn_gp = GaussianProcessRegressor(kernel, alpha=noise_variance, optimizer=None)
    sklearn_gp.fit(toy.x("train").astype(np.float64), toy.y("train")[:, 0].astype(np.float64))
    sklearn_mean, sklearn_covariance = sklearn_gp.predict(toy.x("test").astype(np.float64), return_cov=True)

    np.testing.assert_allclose(mean.detach().numpy(), sklearn_mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(covariance.detach().numpy(), sklearn_covariance, rtol=0, atol=1e-9)
    assert lml.item() == pytest.approx(sklearn_gp.log_marginal_likelihood_value_, rel=1e-10)


def test_gp_checkpoint_predicts_the_same_and_untrained_is_the_prior(configs, toy):
    gp = build(configs, toy, "gp")
    untrained = copy.deepcopy(gp)
    x, y = tensors(toy, "train")
    optimizer = Adam(gp.parameter_groups(0.01, 0.1))
    gp.training_step(x, y, NUM_TRAIN, optimizer)
    with pytest.raises(ValueError, match="whole training set"):
        gp.training_step(x[:10], y[:10], NUM_TRAIN, optimizer)

    reloaded = copy.deepcopy(untrained)
    state = gp.state_dict()
    reloaded.prepare_resume(state)
    reloaded.load_state_dict(state)
    grid = torch.as_tensor(toy.x("test"), dtype=torch.float64)
    for a, b in zip(gp.posterior(grid), reloaded.posterior(grid), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)

    prior_mean, prior_covariance = untrained.posterior(grid)
    assert prior_mean.abs().max() == 0
    torch.testing.assert_close(prior_covariance.diagonal(), torch.full((len(grid),), 1.0, dtype=torch.float64))


def test_mfvi_kl_covers_all_parameters_and_vanishes_at_the_prior(configs, toy):
    bnn = build(configs, toy, "mfvi")
    means = [*bnn.weight_means, *bnn.bias_means]
    log_stds = [*bnn.weight_log_stds, *bnn.bias_log_stds]
    with torch.no_grad():
        for log_std in log_stds:
            log_std.normal_(-1.0, 0.5)
    prior = Normal(0.0, math.sqrt(bnn.prior_variance))
    expected = sum(kl_divergence(Normal(m, s.exp()), prior).sum() for m, s in zip(means, log_stds, strict=True))
    torch.testing.assert_close(bnn.kl(), expected)

    with torch.no_grad():
        for mean, log_std in zip(means, log_stds, strict=True):
            mean.zero_()
            log_std.fill_(0.5 * math.log(bnn.prior_variance))
    assert bnn.kl().item() == pytest.approx(0.0, abs=1e-6)


def test_deep_ensemble_vectorised_forward_equals_members(configs, toy):
    ensemble = build(configs, toy, "deep_ensemble")
    grid = torch.as_tensor(toy.x("test"))
    outputs, variances = ensemble(grid)
    assert variances is None  # Fig. 10's ensemble: no variance heads
    num_members = configs["deep_ensemble"].method.num_members
    assert outputs.shape == (num_members, len(grid), 1)
    for k in range(num_members):
        layers = []
        for weight, bias in zip(ensemble.weights, ensemble.biases, strict=True):
            linear = nn.Linear(*weight.shape[1:])
            linear.weight.data, linear.bias.data = weight[k].T.detach(), bias[k, 0].detach()
            layers += [linear, nn.ReLU()]
        member = nn.Sequential(*layers[:-1])
        torch.testing.assert_close(outputs[k], member(grid))
    pairwise_gaps = (outputs[:, None] - outputs[None]).abs().amax(dim=(2, 3))
    assert pairwise_gaps[~torch.eye(num_members, dtype=torch.bool)].min() > 1e-2


@pytest.mark.parametrize("name", METHODS)
def test_method_fits_the_toy(configs, toy, name):
    """300 full-batch Adam steps at lr 0.01: the predictive mean's training RMSE approaches the noise std 0.1
    (a constant fit has RMSE std(y) ~ 0.5)."""
    method = build(configs, toy, name)
    x, y = tensors(toy, "train")
    optimizer = Adam(method.parameter_groups(0.01, 0.1))
    for _ in range(300):
        method.training_step(x, y, NUM_TRAIN, optimizer)
    samples = method.predict(x)
    expected_samples = configs[name].method.get("eval_samples", configs[name].method.get("num_members"))
    assert samples.shape == (expected_samples, NUM_TRAIN, 1)
    assert (samples.mean(0) - y).pow(2).mean().sqrt() < 0.15
    assert y.std() > 0.4


def test_toy_paths_arrays(configs, toy):
    method = build(configs, toy, "mfvi")
    arrays = toy_paths.evaluation_arrays(method, "toy_paths", toy, EvaluationInputs(untrained=copy.deepcopy(method)))
    num_grid, num_samples = len(toy.x("test")), configs["mfvi"].method.eval_samples
    assert arrays["posterior_predictive"].shape == arrays["prior_predictive"].shape == (num_samples, num_grid)
    assert {"x_train", "y_train", "x_grid", "y_grid"} <= arrays.keys()
    with pytest.raises(KeyError):
        toy_paths.evaluation_arrays(method, "hidden_paths", toy, EvaluationInputs(untrained=method))


def test_toy_paths_on_inputs_of_more_than_one_dimension_is_a_clear_error(configs, toy):
    """The evaluation draws a grid of one input; a 2D dataset is refused before any drawing, with the fix."""
    method = build(configs, toy, "mfvi")
    two_d = Splits(
        {key: np.repeat(value, 2, axis=1) if key.startswith("x_") else value for key, value in toy.arrays.items()}
    )
    with pytest.raises(ValueError, match=r"inputs have shape \(2,\): use it with a 1D toy dataset"):
        toy_paths.evaluation_arrays(method, "toy_paths", two_d, EvaluationInputs(untrained=method))


def test_classification_is_refused(configs):
    with pytest.raises(ValueError, match="regression data only"):
        build_method(configs["gp"], DataSpec("classification", 2, 3))

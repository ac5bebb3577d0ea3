"""The Laplace approximation after MAP training (bnnrepro.methods.laplace): on a linear model with a Gaussian
likelihood of fixed noise and a fixed prior precision it is the exact Bayesian linear regression posterior, its
predictive draws have the MAP function as mean; the fit is deterministic and draws no random numbers (so a resumed
run ends the same); a training job's checkpoint, reloaded as the evaluation job does, holds the fitted posterior."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from bnnrepro.data.registry import generate_instance
from bnnrepro.data.toy_regression import generate_sdebnn_toy
from bnnrepro.evaluations import __main__ as evaluation_job
from bnnrepro.evaluations.inputs import load_run
from bnnrepro.methods.laplace import LaplaceApproximation
from bnnrepro.optim import Adam
from bnnrepro.runs import RunFolder
from bnnrepro.train import compose_config, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NOISE_STD, PRIOR_VARIANCE = 0.3, 0.64


def linear_data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.linspace(-1.5, 2.0, 8)[:, None]
    return x, 1.2 * x - 0.4 + NOISE_STD * torch.randn(8, 1, generator=generator)


def bayesian_linear_regression(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact posterior N(mean, covariance) of (weight, bias) under N(0, PRIOR_VARIANCE I), in float64."""
    features = torch.cat([x, torch.ones_like(x)], 1).double()
    precision = features.T @ features / NOISE_STD**2 + torch.eye(2, dtype=torch.float64) / PRIOR_VARIANCE
    covariance = torch.linalg.inv(precision)
    return covariance @ features.T @ y[:, 0].double() / NOISE_STD**2, covariance


def trained_linear_model(fit_prior_precision: bool = False, eval_samples: int = 40_000) -> LaplaceApproximation:
    """A model without hidden layer trained to its MAP weights by the loop's step (full batch), then fitted."""
    torch.manual_seed(0)
    x, y = linear_data()
    method = LaplaceApproximation(1, [], PRIOR_VARIANCE, NOISE_STD, fit_prior_precision, eval_samples)
    optimizer = Adam(method.parameter_groups(0.05, 1.0))
    for _ in range(1500):
        method.training_step(x, y, len(x), optimizer)
    method.fit_posterior(x, y)
    return method


def test_the_map_and_the_laplace_posterior_of_a_linear_model_are_exact_bayesian_linear_regression() -> None:
    mean, covariance = bayesian_linear_regression(*linear_data())
    method = trained_linear_model()
    layer = method.last_layer()
    weights = torch.cat([layer.weight.detach()[0], layer.bias.detach()]).double()
    torch.testing.assert_close(weights, mean, rtol=0, atol=1e-4)
    scale = method.posterior_scale.double()
    torch.testing.assert_close(scale @ scale.T, covariance, rtol=1e-4, atol=1e-7)
    assert float(method.prior_precision) == pytest.approx(1 / PRIOR_VARIANCE)  # fixed: not fitted


def test_an_ill_conditioned_posterior_precision_is_fitted_exactly() -> None:
    """20,000 inputs near 100 with noise scale 0.1: the Gauss-Newton term outweighs the prior precision by far more
    than float32's 7 digits (the precision's eigenvalues span more than 1e9, as naval's do at small scales), and the
    fitted covariance is still the exact Bayesian linear regression one (a float32 fit is indefinite or wrong here)."""
    generator = torch.Generator().manual_seed(0)
    x = 100 + 0.01 * torch.randn(20_000, 1, generator=generator)
    y = 0.5 * x + 0.1 * torch.randn(20_000, 1, generator=generator)
    noise_std = 0.1
    features = torch.cat([x, torch.ones_like(x)], 1).double()
    precision = features.T @ features / noise_std**2 + torch.eye(2, dtype=torch.float64) / PRIOR_VARIANCE
    eigenvalues = torch.linalg.eigvalsh(precision)
    assert eigenvalues[-1] / eigenvalues[0] > 1e9
    method = LaplaceApproximation(1, [], PRIOR_VARIANCE, noise_std, fit_prior_precision=False, eval_samples=10)
    method.fit_posterior(x, y)
    scale = method.posterior_scale.double()
    torch.testing.assert_close(scale @ scale.T, torch.linalg.inv(precision), rtol=1e-3, atol=0)
    assert torch.get_default_dtype() == torch.float32  # the fit's float64 default does not leak


def test_the_predictive_draws_have_the_map_function_as_mean_and_the_posterior_covariance() -> None:
    """40,000 draws at three inputs: their mean is the MAP function within 5 Monte Carlo standard errors, their
    covariance that of x^T (weight, bias) under the exact posterior within 5%."""
    method = trained_linear_model()
    x = torch.tensor([[-3.0], [0.0], [4.0]])
    _, covariance = bayesian_linear_regression(*linear_data())
    features = torch.cat([x, torch.ones_like(x)], 1).double()
    function_covariance = features @ covariance @ features.T
    torch.manual_seed(1)
    draws = method.predict(x)[..., 0].double()
    assert draws.shape == (40_000, 3)
    standard_error = (function_covariance.diagonal() / len(draws)).sqrt()
    map_function = method.network(x).detach()[:, 0].double()
    assert ((draws.mean(0) - map_function).abs() / standard_error).max() < 5
    torch.testing.assert_close(draws.T.cov(), function_covariance, rtol=0.05, atol=0)


def test_the_marginal_likelihood_fits_the_prior_precision_into_the_posterior() -> None:
    """With prior_precision_fit marglik the fitted precision differs from 1 / prior_variance and the posterior is
    the Bayesian linear regression one under it."""
    method = trained_linear_model(fit_prior_precision=True)
    fitted = float(method.prior_precision)
    assert not math.isclose(fitted, 1 / PRIOR_VARIANCE, rel_tol=1e-3)
    x, _ = linear_data()
    features = torch.cat([x, torch.ones_like(x)], 1).double()
    precision = features.T @ features / NOISE_STD**2 + fitted * torch.eye(2, dtype=torch.float64)
    scale = method.posterior_scale.double()
    torch.testing.assert_close(scale @ scale.T, torch.linalg.inv(precision), rtol=1e-4, atol=1e-7)
    assert method.diagnostics() == {"prior_precision": fitted}


def test_the_fit_is_deterministic_and_draws_no_random_numbers() -> None:
    """What a resumed run relies on: refitting at the same weights gives the same posterior, and the fit leaves
    the random stream of the steps and predictions that follow it untouched."""
    method = trained_linear_model(fit_prior_precision=True)
    before = {k: v.clone() for k, v in method.state_dict().items()}
    rng = torch.get_rng_state()
    method.fit_posterior(*linear_data())
    assert torch.equal(torch.get_rng_state(), rng)
    for key, value in method.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_a_checkpoint_predicts_the_same_and_the_untrained_method_its_prior() -> None:
    method = trained_linear_model(eval_samples=50)
    torch.manual_seed(5)  # another initialisation
    reloaded = LaplaceApproximation(1, [], PRIOR_VARIANCE, NOISE_STD, False, 50)
    prior = reloaded.posterior_scale.clone()
    state = method.state_dict()
    reloaded.prepare_resume(state)
    reloaded.load_state_dict(state)
    grid = torch.linspace(-2, 2, 7)[:, None]
    torch.manual_seed(2)
    expected = method.predict(grid)
    torch.manual_seed(2)
    torch.testing.assert_close(reloaded.predict(grid), expected, rtol=0, atol=0)
    # before any fit: the prior, around the initial weights
    torch.testing.assert_close(prior, math.sqrt(PRIOR_VARIANCE) * torch.eye(2))
    assert not torch.allclose(reloaded.posterior_scale, prior)


def test_a_training_job_checkpoints_the_posterior_fitted_at_its_last_weights(tmp_path) -> None:
    """The loop fits the posterior before each evaluation, and the checkpoint that the evaluation job loads holds
    the posterior fitted at the final weights: refitting the reloaded method changes nothing, and its toy_paths
    evaluation draws the posterior, not the prior."""
    data = tmp_path / "toy.npz"
    generate_instance("sdebnn_toy", "seed=0", data)
    toy = generate_sdebnn_toy(0)
    run_dir = tmp_path / "run"
    cfg = compose_config(
        ["method=laplace", "dataset=sdebnn_toy", f"dataset.path='{data}'", f"run_dir='{run_dir}'", "scale=smoke"]
    )
    train(cfg, RunFolder(run_dir))
    history = json.loads((run_dir / "metrics.json").read_text())["history"]
    assert [record["epoch"] for record in history] == [5, 10]
    assert history[0]["prior_precision"] != history[1]["prior_precision"]  # refitted at each evaluation
    _, _, method, untrained = load_run(run_dir)
    assert float(method.prior_precision) == history[-1]["prior_precision"]
    reloaded = {key: value.clone() for key, value in method.state_dict().items()}
    method.fit_posterior(torch.as_tensor(toy.x("train")), torch.as_tensor(toy.y("train")))
    for key, value in method.state_dict().items():
        assert torch.equal(value, reloaded[key]), key
    assert not torch.equal(method.posterior_scale, untrained.posterior_scale)
    out = run_dir / "eval" / "toy_paths.npz"
    evaluation_job.main([str(run_dir), "toy_paths", str(out)])
    arrays = dict(np.load(out))
    assert arrays["posterior_predictive"].shape == arrays["prior_predictive"].shape == (100, len(toy.x("test")))
    assert not np.allclose(arrays["posterior_predictive"], arrays["prior_predictive"])


def test_other_methods_and_the_laplace_build_do_not_import_laplace_torch() -> None:
    """laplace-torch (about 2 s to import) is loaded by the Laplace fit only."""
    code = (
        "import sys; from bnnrepro.data.spec import DataSpec; from bnnrepro.methods import build_method; "
        "from bnnrepro.train import compose_config; spec = DataSpec('regression', 1, 0, (1,))\n"
        "for name in ('gp', 'mfvi', 'laplace'):\n"
        "    build_method(compose_config([f'method={name}', 'dataset=sdebnn_toy', 'run_dir=x']), spec)\n"
        "assert 'laplace' not in sys.modules, 'laplace was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

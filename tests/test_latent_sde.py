"""The latent SDE of SDE-BNN Figs. 3 and 4 (Xu et al. 2022): the toy data, the solver grid, q = p at
initialisation, the Cauchy likelihood, the three KL-gradient estimators (equal means, STL's vanishing variance at
the exact posterior, SDE-BNN paper §4, App. A.2) and the study's runs, evaluations and figures at smoke scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt
from omegaconf import OmegaConf
from scipy import stats
from torch import nn

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementations
from bnnrepro.data import latent_toys
from bnnrepro.data.registry import generate_instance
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.evaluations.__main__ import main as evaluate
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.methods import build_method
from bnnrepro.methods.latent_sde import LatentSDEMethod
from bnnrepro.models.latent_sde import LatentSDE, solver_grid
from bnnrepro.models.weight_sde import KL_ESTIMATORS, DriftNet
from bnnrepro.pipeline.studies import load_study
from bnnrepro.runs import RunFolder
from bnnrepro.train import compose_config, train
from tests.kl_checks import assert_same_mean_gradient, assert_stl_variance_vanishes

STUDY = "sdebnn_latent"
# Exact-posterior toy: Brownian-motion prior dz = SIGMA dB from z_0 = 0 on [0, 1], one observation Y ~ N(z_1, NOISE^2)
SIGMA, NOISE, Y = 1.0, 0.3, 1.5
TIMES = torch.tensor([[1.0]])


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def method(model: LatentSDE, likelihood: RegressionLikelihood) -> LatentSDEMethod:
    cfg = OmegaConf.create({"num_samples": 8, "eval_samples": 8, "kl_weight": 1.0, "gradient_samples": 8})
    return LatentSDEMethod(model, likelihood, cfg)


class BridgeDrift(nn.Module):
    """NN_phi(t, z) = a SIGMA^2 (Y - z) / (NOISE^2 + SIGMA^2 (1 - t)): at a = 1 the posterior's drift is
    SIGMA^2 d/dz log N(Y; z, NOISE^2 + SIGMA^2 (1 - t)), the Doob h-transform, so q is the exact posterior."""

    def __init__(self, a: float):
        super().__init__()
        self.a = nn.Parameter(torch.tensor([a]))

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.a * SIGMA**2 * (Y - z) / (NOISE**2 + SIGMA**2 * (1 - t))


def bridge_gradients(a: float, draws: int = 2000) -> dict[str, torch.Tensor]:
    """Single-path gradients d(-ELBO)/da [draws, 1] per KL estimator on the exact-posterior toy."""
    model = LatentSDE(OrnsteinUhlenbeckPrior(SIGMA, rate=0.0), BridgeDrift(a), t_start=0.0, t_end=1.0, dt=0.01)
    torch.manual_seed(0)
    return method(model, RegressionLikelihood(NOISE, "gaussian", learn_scale=False)).gradient_draws(
        TIMES, torch.tensor([[Y]]), KL_ESTIMATORS, draws
    )


# --- data and solver grid -------------------------------------------------------------------------------------


def test_generated_datasets_have_the_spec_times_and_values():
    two = latent_toys.generate_two_observations(seed=0)
    np.testing.assert_array_equal(two.x("train"), [[3.0], [3.0]])  # both observe the terminal state z_3
    np.testing.assert_array_equal(two.y("train"), [[5.0], [-5.0]])
    assert two.x("test").shape == (0, 1) and two.x("val").shape == (0, 1)
    cosine = latent_toys.generate_segmented_cosine(seed=0)
    times = [0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0]
    np.testing.assert_allclose(cosine.x("train")[:, 0], times, rtol=1e-6)
    np.testing.assert_allclose(cosine.y("train")[:, 0], np.cos(2 * np.pi * np.array(times)), atol=1e-6)
    assert cosine.x("test").min() == pytest.approx(0.4) and cosine.x("test").max() == pytest.approx(1.0)
    assert all(a.dtype == np.float32 for a in (*two.arrays.values(), *cosine.arrays.values()))


def test_solver_grid_holds_every_observation_time_with_steps_of_at_most_dt():
    times = np.array([1.0, 0.45, 0.45, 0.8])
    grid, index = solver_grid(times, 0.4, 1.0, dt=0.02)
    np.testing.assert_array_equal(grid[index], times)
    assert grid[0] == 0.4 and grid[-1] == 1.0 and np.all(np.diff(grid) > 0)
    assert np.diff(grid).max() <= 0.02 + 1e-9 and len(grid) == 1 + 3 + 18 + 10  # steps per segment
    with pytest.raises(ValueError, match="leave the model's interval"):
        solver_grid(np.array([1.5]), 0.4, 1.0, dt=0.02)


# --- the model at initialisation and its likelihood ----------------------------------------------------------


@pytest.fixture
def fig3_method() -> LatentSDEMethod:
    """The Fig. 3 model as the study builds it (config/train/method/latent_sde.yaml), untrained."""
    cfg = compose_config(["method=latent_sde", "dataset=sdebnn_two_obs", "dataset.path=unused", "run_dir=unused"])
    torch.manual_seed(0)
    return build_method(cfg, latent_toys.generate_two_observations(0).spec("regression"))


def test_posterior_is_the_prior_at_initialisation(fig3_method: LatentSDEMethod):
    model = fig3_method.model
    times = torch.tensor([0.0, 1.5, 3.0])
    for estimator in KL_ESTIMATORS:
        with torch.no_grad():
            z, kl = model.sample(times, 4000, kl_estimator=estimator)
        assert torch.equal(kl, torch.zeros_like(kl)), estimator  # u = NN_phi / sigma = 0: every estimate is 0
    # the zero drift net leaves the OU prior: E z_t = 0, Var z_t = 9 e^{-0.2 t} + 2 (1 - e^{-0.2 t}) / 0.2
    expected = OrnsteinUhlenbeckPrior(2**0.5, rate=0.1).variance(times, w0_var=9.0)
    np.testing.assert_allclose(z[..., 0].var(1), expected, rtol=0.08)
    np.testing.assert_allclose(z[..., 0].mean(1), 0.0, atol=0.2)


def test_cauchy_observation_likelihood_matches_scipy(fig3_method: LatentSDEMethod):
    z = torch.randn(2, 5, 1) * 4  # z at the two observation times, 5 samples
    y = torch.tensor([[5.0], [-5.0]])
    loss = fig3_method.objective(z, torch.zeros(5), y, num_train=2)  # KL 0: the mean negative log-likelihood
    expected = -stats.cauchy.logpdf(y[:, 0].numpy(), loc=z[..., 0].T.numpy(), scale=1.0).mean()
    assert float(loss) == pytest.approx(expected, rel=1e-5)


# --- the three KL-gradient estimators (Fig. 4) ----------------------------------------------------------------


def test_the_three_estimators_have_the_same_mean_gradient():
    """Paired over the same draws, the per-parameter mean differences vanish within Monte Carlo error, for a drift
    net away from zero (q != p) and for the parametric drift of the exact-posterior toy."""
    torch.manual_seed(1)
    net = DriftNet(1, [8], "tanh")
    nn.init.normal_(net.layers[-1].weight, std=0.5)
    prior = OrnsteinUhlenbeckPrior(SIGMA, rate=0.5)
    model = LatentSDE(prior, net, t_start=0.0, t_end=1.0, dt=0.05, z0_mean=0.3, z0_std=0.5)
    data = latent_toys.generate_segmented_cosine(0)
    x, y = torch.as_tensor(data.x("train")) - 0.2, torch.as_tensor(data.y("train"))
    drift_net = method(model, RegressionLikelihood(0.5, "gaussian", learn_scale=False)).gradient_draws(
        x, y, KL_ESTIMATORS, 2000
    )
    for gradients in (drift_net, bridge_gradients(a=0.5)):
        assert_same_mean_gradient(gradients, max_z_score=4.5)
        assert gradients["ckl"].mean(0).abs().max() > 0.05  # the test compares non-trivial gradients


def test_stl_variance_vanishes_at_the_exact_posterior():
    """At q = the exact posterior the ELBO is maximal (mean gradient 0) and STL's single-path gradient is 0 up to
    the Euler-Maruyama error (eq. 12, App. A.2), while ckl's and fmc's keep their variance; close to it STL's
    variance stays far below theirs."""
    exact = bridge_gradients(a=1.0)
    for estimator, gradients in exact.items():
        assert abs(float(gradients.mean())) < 4 * float(gradients.std()) / len(gradients) ** 0.5 + 1e-3, estimator
    assert_stl_variance_vanishes({e: float(g.var()) for e, g in exact.items()}, max_ratio=0.01)
    near = bridge_gradients(a=0.9)
    assert_stl_variance_vanishes({e: float(g.var()) for e, g in near.items()}, max_ratio=0.2)


# --- the study at smoke scale --------------------------------------------------------------------------------


def test_study_runs_evaluations_and_figures_at_smoke_scale(tmp_path: Path):
    """Each smoke run of the study trains and evaluates in process as the workflow's jobs do, and both figures
    draw from the evaluations."""
    study = load_study(STUDY)
    evaluations = {"latent_two_obs": "latent_paths", "latent_gradvar": "gradient_variance"}
    files = {name: [] for name in evaluations.values()}
    for run in study.runs("smoke"):
        data = tmp_path / "data" / run.dataset / "seed=0.npz"
        if not data.exists():
            generate_instance(run.dataset, "seed=0", data)
        run_dir = tmp_path / "results/smoke" / STUDY / "runs" / run.id
        overrides = [o for o in study.overrides(run) if not o.startswith("dataset.path=")]
        cfg = compose_config([*overrides, "scale=smoke", f"dataset.path='{data}'", f"run_dir='{run_dir}'"])
        metrics = train(cfg, RunFolder(run_dir))
        assert metrics["metrics"]["selected_epoch"] == cfg.train.epochs
        name = evaluations[run.method]
        evaluate([str(run_dir), name, str(run_dir / f"eval/{name}.npz")])
        files[name].append(run_dir / f"eval/{name}.npz")

    paths = np.load(files["latent_paths"][0])
    assert paths["paths"].shape == (200, 121) and paths["joint"].shape == (4000, 2)
    np.testing.assert_allclose(paths["paths"][:, 0], paths["joint"][:200, 0])  # z_t0 of the first paths
    variances = [np.load(f) for f in files["gradient_variance"]]
    assert sorted(int(v["iterations"]) for v in variances) == [1, 3]  # the grid's train.epochs
    for arrays in variances:
        assert list(arrays["estimators"]) == list(KL_ESTIMATORS) and np.all(arrays["variance"] > 0)
        assert arrays["mean_gradient"].shape[0] == 3
    drawn = implementations()
    for artifact_id, name in (("sdebnn/fig3", "latent_paths"), ("sdebnn/fig4", "gradient_variance")):
        fig = drawn[artifact_id].draw(ArtifactContext(STUDY, "smoke", run_files=files[name]))
        assert fig.axes
        plt.close(fig)
        assert all(drawn[artifact_id].note(scale) for scale in ("smoke", "default", "paper"))

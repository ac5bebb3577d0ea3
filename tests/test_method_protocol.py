"""The method protocol (bnnrepro.methods.protocol): a method missing a hook is an error naming it, every method
config builds into a method with every hook, and the steps that are not loss steps give the numbers of the old
loss path: the particle methods' update equals the backward pass of the surrogate loss that the loop used to
minimise (whose gradient is exactly -phi), HMC's step reports its draws' negative log posterior."""

from __future__ import annotations

import importlib
import math
import pkgutil
from pathlib import Path

import pytest
import torch
from torch import nn

import bnnrepro.methods
from bnnrepro.data.registry import dataset_config
from bnnrepro.data.spec import DataSpec
from bnnrepro.errors import DivergedError
from bnnrepro.inference.posterior_targets import GaussianLogLikelihood, NetworkPosterior, SamplingTarget
from bnnrepro.methods import METHOD_MODULES, build_method, config_method_name, own_training_job
from bnnrepro.methods.hmc import HamiltonianMonteCarlo
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.methods.protocol import HOOKS, check_finite_gradients, check_method
from bnnrepro.methods.repulsive_ensembles import ParticleEnsemble
from bnnrepro.models.posterior_networks import relu_mlp
from bnnrepro.optim import Adam
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.method_tasks import method_tasks
from bnnrepro.train import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOY = DataSpec("regression", 1, 0, (1,))
SPIRALS = DataSpec("classification", 2, 2, (2,))
MNIST = DataSpec("classification", 28, 10, (28, 28))
LORENZ_WINDOWS = DataSpec("forecasting", 24, 0, (24, 4))  # 24 observations of (x, y, z, t)
CIFAR10 = DataSpec("classification", 32, 10, (32, 32, 3))
TASK_SPECS = {
    "regression": TOY,
    "classification": SPIRALS,
    "forecasting": LORENZ_WINDOWS,
    "sampling": DataSpec("sampling", 2, 0, (2,)),
}
"""A spec of each task of config/train/dataset."""


class WithoutStep(nn.Module):
    """A method that forgot its step and its posterior fit."""

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        return []

    def adapt_architecture(self, optimizer: Adam) -> None: ...

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def noise_variance(self) -> float:
        return 0.0

    def diagnostics(self) -> dict[str, float]:
        return {}

    def prepare_resume(self, state: dict) -> None: ...


TASKS = ("regression",)  # this module stands in for a method module in METHOD_MODULES


def build(cfg, spec: DataSpec) -> nn.Module:  # this module stands in for a method module in METHOD_MODULES
    return WithoutStep()


def test_a_method_missing_a_hook_is_an_error_naming_the_hook_and_the_module(monkeypatch) -> None:
    monkeypatch.setitem(METHOD_MODULES, "without_step", __name__)
    cfg = compose_config(["method=gp", "dataset=sdebnn_toy", "run_dir=unused", "method.name=without_step"])
    with pytest.raises(TypeError, match=r"lacks the hook\(s\) training_step, end_epoch, fit_posterior") as error:
        build_method(cfg, TOY)
    assert __name__ in str(error.value)
    with pytest.raises(TypeError, match="must be an nn.Module"):
        check_method(object(), "some.module")


def test_method_modules_reads_what_each_module_declares_in_its_methods_tuple() -> None:
    """`method_modules` reads `METHODS = (...)` from the source, not the import: the two must agree, for every
    module of the package that declares one."""
    imported = {
        name: info.name
        for info in pkgutil.iter_modules(bnnrepro.methods.__path__, "bnnrepro.methods.")
        for name in getattr(importlib.import_module(info.name), "METHODS", ())
    }
    assert imported == METHOD_MODULES


def test_method_tasks_reads_what_each_module_declares_in_its_tasks() -> None:
    """`method_tasks` reads `TASKS` from the source, as the workflow does: it agrees with the import."""
    imported = {}
    for name, module in METHOD_MODULES.items():
        tasks = importlib.import_module(module).TASKS
        imported[name] = tuple(tasks[name] if isinstance(tasks, dict) else tasks)
    assert imported == method_tasks()


def test_the_task_specs_are_the_dataset_configs_tasks() -> None:
    tasks = {dataset_config(path.stem)["task"] for path in (train_config_dir() / "dataset").glob("*.yaml")}
    assert tasks == set(TASK_SPECS)


def test_the_hooks_are_the_protocols() -> None:
    assert HOOKS == (
        "parameter_groups", "adapt_architecture", "training_step", "end_epoch", "fit_posterior", "predict",
        "noise_variance", "diagnostics", "prepare_resume",
    )  # fmt: skip


def test_a_loss_minimiser_without_a_loss_cannot_be_built() -> None:
    class NoLoss(LossMinimiser):
        pass

    with pytest.raises(TypeError, match="loss"):
        NoLoss()


def method_configs() -> list[str]:
    """Every config of config/train/method that names a method trained by bnnrepro.train's epochs
    (posterior_network is a base, not a method; a labelling run owns its job: tests/test_active_learning.py)."""
    names = []
    for path in sorted((train_config_dir() / "method").glob("*.yaml")):
        try:
            name = config_method_name(path.stem)
        except KeyError:
            continue
        if own_training_job(name) is None:
            names.append(path.stem)
    return names


def dataset_of(config: str) -> tuple[str, DataSpec]:
    """A dataset the method config trains on, and its spec (no data file is read to build a method)."""
    module = METHOD_MODULES[config_method_name(config)]
    if module.endswith("depth_networks"):
        return "spirals", SPIRALS
    if module.endswith("latent_sde"):
        return "sdebnn_two_obs", TOY
    if module.endswith("bnsde"):
        return "lorenz", LORENZ_WINDOWS
    if config.endswith("mnist"):
        return "mnist", MNIST
    if config.endswith("cifar10") or "resnet32" in config:
        return "cifar10", CIFAR10
    if config in ("edl", "mc_dropout") or config.startswith(("clt_bnn", "drop_bnn")):  # classification only
        return "mnist", MNIST
    if module.endswith(("repulsive_ensembles", "hmc")):
        return "repulsive_toy", TOY
    return "sdebnn_toy", TOY


@pytest.mark.parametrize("config", [name for name in method_configs() if method_tasks()[config_method_name(name)]])
def test_a_method_refuses_the_tasks_it_does_not_declare(config: str) -> None:
    """A module's `TASKS`, which the workflow checks a study's pairs against, is what its `build` takes: building on
    a spec of any other task raises."""
    tasks = method_tasks()[config_method_name(config)]
    dataset, _ = dataset_of(config)
    cfg = compose_config([f"method={config}", f"dataset={dataset}", "run_dir=unused", "scale=smoke"])
    for task in set(TASK_SPECS) - set(tasks):
        with pytest.raises(ValueError, match=f"supports {' or '.join(tasks)} data only"):
            build_method(cfg, TASK_SPECS[task])


@pytest.mark.parametrize("config", method_configs())
def test_every_method_config_builds_into_a_method_with_every_hook(config: str) -> None:
    """A classifier's predictive adds no observation noise, a regression method's some (but the deep ensemble's,
    trained on the MSE)."""
    dataset, spec = dataset_of(config)
    cfg = compose_config([f"method={config}", f"dataset={dataset}", "run_dir=unused", "scale=smoke"])
    method = build_method(cfg, spec)  # checks the hooks
    assert all(callable(getattr(method, hook)) for hook in HOOKS)
    noise_variance = method.noise_variance()
    assert isinstance(noise_variance, float)
    if spec.task == "classification" or config == "deep_ensemble":
        assert noise_variance == 0.0
    else:
        assert noise_variance > 0.0


# --- the default step ------------------------------------------------------------------------------------------


class Quadratic(LossMinimiser):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.0, -2.0]))

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        return (self.w * x).sum() ** 2 / num_train


def test_the_default_step_is_one_adam_step_on_the_loss_and_stops_before_a_non_finite_backward() -> None:
    method, x = Quadratic(), torch.tensor([3.0, 1.0])
    optimizer = Adam([{"params": [method.w], "lr": 0.1}])
    assert method.training_step(x, x, 2, optimizer) == (3.0 - 2.0) ** 2 / 2
    # Adam's first step moves each weight by lr against the sign of its gradient 2 (w . x) x / N = (3, 1)
    torch.testing.assert_close(method.w.detach(), torch.tensor([0.9, -2.1]))
    method.w.grad = None
    with pytest.raises(DivergedError, match="the loss is nan"):
        method.training_step(torch.tensor([math.nan, 1.0]), x, 2, optimizer)
    assert method.w.grad is None  # no backward pass on a non-finite loss


class SquareRoot(LossMinimiser):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([0.0, 4.0]))

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        return self.w.sqrt().sum()  # finite at w = 0, with an infinite gradient there


def test_the_default_step_stops_before_writing_a_non_finite_gradient_into_the_weights() -> None:
    """A finite loss with an infinite gradient (the workshop SDE-BNN toy at paper settings met one after 400 epochs)
    is a divergence named by its parameter, and the weights stay as they were."""
    method, x = SquareRoot(), torch.zeros(2)
    optimizer = Adam([{"params": [method.w], "lr": 0.1}])
    with pytest.raises(DivergedError, match="the gradient of w is not finite"):
        method.training_step(x, x, 2, optimizer)
    torch.testing.assert_close(method.w.detach(), torch.tensor([0.0, 4.0]))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", [0, 517, 1999])
def test_the_gradient_check_finds_one_non_finite_entry_anywhere(bad: float, where: int) -> None:
    """One NaN or infinite entry in a long gradient, past the first of several parameters, is named; finite
    gradients as large as float32 allows pass."""
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 500))
    for p in net.parameters():
        p.grad = torch.full_like(p, 3e38)
    check_finite_gradients(net)
    net[1].weight.grad.view(-1)[where] = bad
    with pytest.raises(DivergedError, match="the gradient of 1.weight is not finite"):
        check_finite_gradients(net)


# --- the particle methods' step: particles.grad = -phi, then the optimiser ------------------------------------


def standard_normal_target(particles: torch.Tensor) -> SamplingTarget:
    return SamplingTarget(lambda w: -0.5 * w.square().sum(-1), particles, particles)


def old_surrogate_update(particles: torch.Tensor, lr: float) -> torch.Tensor:
    """The old loop on rule "de" of a standard normal: the surrogate value + (s - stop(s)), s = -<stop(phi), w>,
    phi = grad log p(w) = -w, its backward pass and an Adam step."""
    w = nn.Parameter(particles.clone())
    direction = -w.detach()
    inner = -(direction * w).sum()
    surrogate = 0.5 * w.detach().square().sum(-1).mean() + (inner - inner.detach())
    optimizer = Adam([{"params": [w], "lr": lr}])
    optimizer.zero_grad()
    surrogate.backward()
    optimizer.step()
    return w.detach()


def test_the_particle_step_is_the_old_surrogate_loss_step() -> None:
    particles = torch.tensor([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])
    method = ParticleEnsemble(standard_normal_target(particles), particles.clone(), "de")
    optimizer = Adam(method.parameter_groups(0.1, 1.0))
    value = method.training_step(torch.zeros(0, 1), torch.zeros(0, 1), 1, optimizer)
    assert value == pytest.approx(0.5 * particles.square().sum(-1).mean().item())  # mean -log p of the particles
    torch.testing.assert_close(method.particles.grad, particles)  # -phi, phi = -w
    torch.testing.assert_close(method.particles.detach(), old_surrogate_update(particles, 0.1), rtol=0, atol=0)
    # by hand: Adam's first step moves each coordinate by lr against the sign of its gradient w
    torch.testing.assert_close(method.particles.detach(), particles - 0.1 * particles.sign())


def test_a_non_finite_particle_direction_stops_the_run() -> None:
    particles = torch.tensor([[1.0, math.inf]])
    method = ParticleEnsemble(standard_normal_target(particles), particles.clone(), "de")
    with pytest.raises(DivergedError, match="direction of rule 'de' is not finite"):
        method.training_step(torch.zeros(0, 1), torch.zeros(0, 1), 1, Adam(method.parameter_groups(0.1, 1.0)))


# --- HMC's step samples -----------------------------------------------------------------------------------------


def test_the_hmc_step_samples_and_reports_the_draws_negative_log_posterior() -> None:
    """A linear model f(x) = a x + b, likelihood N(y | f, 0.5^2), prior N(0, 2 I): the step replaces the prior draws
    and returns -(1/N) mean_s [sum_n log N(y_n | f(x_n; w_s), 0.5^2) - |w_s|^2 / 4], computed here by hand."""
    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 5)[:, None]
    y = 2 * x + 0.3
    target = NetworkPosterior(relu_mlp(1, [], 1), GaussianLogLikelihood(0.5), 2.0, "regression")
    hmc = HamiltonianMonteCarlo(target, num_chains=1, warmup_steps=5, num_samples=4, max_tree_depth=3)
    prior_draws = hmc.samples.clone()
    optimizer = Adam(hmc.parameter_groups(0.01, 1.0))
    value = hmc.training_step(x, y, len(x), optimizer)
    assert not torch.equal(hmc.samples, prior_draws) and not hmc.samples.requires_grad
    assert optimizer.param_groups[0]["params"] == []
    a, b = hmc.samples[:, :1], hmc.samples[:, 1:]
    residuals = y[None, :, 0] - (a * x[:, 0] + b)
    log_likelihood = (-0.5 * (residuals / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)).sum(1)
    expected = -(log_likelihood - hmc.samples.square().sum(1) / 4).mean() / len(x)
    assert value == pytest.approx(expected.item(), rel=1e-5)


def test_no_method_loads_its_data() -> None:
    """A method's build gets the data it needs (`build_method(cfg, spec, splits)`); only a job that owns its loop
    (`train_job`, a labelling run) loads its run's data, as bnnrepro.train does."""
    methods_dir = Path(bnnrepro.methods.__file__).parent
    loading = []
    for path in sorted(methods_dir.glob("*.py")):
        text = path.read_text()
        if "load_splits" in text and "def train_job(" not in text:
            loading.append(path.name)
    assert not loading, f"methods that load their data: {loading}"


def test_a_sampling_target_built_without_the_runs_data_is_named() -> None:
    cfg = compose_config(["method=svgd", "dataset=gaussian_target", "run_dir=unused"])
    with pytest.raises(ValueError, match="pass the run's splits"):
        build_method(cfg, DataSpec("sampling", 2, 0))

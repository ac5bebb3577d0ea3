"""A Laplace approximation fitted after MAP training (Daxberger et al. 2021, "Laplace Redux", with their library
laplace-torch): this project's addition to the toy comparison models of SDE-BNN Fig. 10, not the paper's.

Training (the default loss step): the MAP weights of a ReLU MLP under the prior N(0, prior_variance I) and a Gaussian
likelihood of fixed scale, on the per-datum negative log joint
    -(1/N) (N/B sum_b log N(y_b | f(x_b; theta), scale^2) + log N(theta | 0, prior_variance I)) + const.
`fit_posterior` (before each evaluation, on the whole training set): the Laplace approximation at the current
weights over the last layer's weights and bias w (Redux Sec. 2: a subset of the weights), with the full generalised
Gauss-Newton matrix, which for a Gaussian likelihood and a network linear in w is the exact Hessian, and the prior
precision fitted by maximising the Laplace marginal likelihood (Redux Sec. 2) unless it is fixed; the configuration
says why (config/train/method/laplace.yaml). The posterior's Cholesky factor and prior precision are buffers, so a
reloaded checkpoint predicts the same without laplace-torch.

`predict(x)` returns S function draws [S, N, 1]: f(x; theta_MAP) + phi(x)^T (w_s - w_MAP) with w_s from the Laplace
posterior N(w_MAP, Sigma) and phi(x) the last layer's input and a 1 for the bias. The network is linear in w, so
these are exact draws of the linearised (GLM) predictive that Redux recommends, and the same as sampling the network.
Before any fit, Sigma is the prior prior_variance I around the initial weights.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from omegaconf import DictConfig
from torch.utils.data import DataLoader, TensorDataset

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.posterior_networks import relu_mlp

METHODS = ("laplace",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("regression",)
"""The data tasks (config/train/dataset/*.yaml `task`) it takes; the workflow checks a study's pairs against them
before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"classification": "the Laplace baseline of SDE-BNN Fig. 10 is built for its 1-D regression toy"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""

SUBSETS_OF_WEIGHTS = ("last_layer",)
"""Which weights the posterior covers (laplace-torch's `subset_of_weights`): `predict` draws the last layer's."""
HESSIAN_STRUCTURES = ("full",)
"""The structure of the posterior precision (laplace-torch's `hessian_structure`): `predict` draws from a full
covariance."""
PRIOR_PRECISION_FITS = ("marglik", "fixed")
"""How the prior precision of the Laplace approximation is set: marginal likelihood, or kept at 1 / prior_variance."""


def laplace_class() -> type:
    """laplace-torch's `Laplace`, imported when a fit needs it (about 2 s: the evaluation job, which only predicts,
    does not load it); a torchvision that cannot load (laplace-torch's torchmetrics imports it) is a clear error."""
    try:
        from laplace import Laplace
    except RuntimeError as err:
        raise ImportError(
            f"laplace-torch cannot be imported: torchmetrics, which it imports, imports torchvision, and the installed "
            f"torchvision does not load with torch {torch.__version__} ({err}; e.g. a CUDA build of torchvision beside "
            "a CPU-only torch). laplace-torch does not use torchvision: `pip uninstall torchvision`, or install the "
            "torchvision build that matches this torch"
        ) from err
    return Laplace


@contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """torch's default dtype set to `dtype` inside the block, restored after it (also when the block raises)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


class LaplaceApproximation(LossMinimiser, FixedArchitectureMethod):
    """A ReLU MLP with one output trained to its MAP weights, and a last-layer Laplace posterior fitted after."""

    def __init__(
        self,
        num_features: int,
        hidden_widths: Sequence[int],
        prior_variance: float,
        likelihood_scale: float,
        fit_prior_precision: bool,
        eval_samples: int,
    ):
        super().__init__()
        self.network = relu_mlp(num_features, hidden_widths, 1)
        self.likelihood = RegressionLikelihood(likelihood_scale, "gaussian", learn_scale=False)
        self.map_prior_precision, self.fit_prior_precision = 1 / prior_variance, fit_prior_precision
        self.eval_samples = eval_samples
        last_layer_size = sum(p.numel() for p in self.last_layer().parameters())
        self.register_buffer("posterior_scale", math.sqrt(prior_variance) * torch.eye(last_layer_size))
        self.register_buffer("prior_precision", torch.tensor(self.map_prior_precision))

    def last_layer(self) -> torch.nn.Linear:
        return self.network[-1]

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """The per-datum negative log joint of the weights (module docstring), up to the prior's constant."""
        log_likelihood = self.likelihood(self.network(x)[None], y)
        squared_norm = sum(p.square().sum() for p in self.network.parameters())
        return -log_likelihood.mean() + 0.5 * self.map_prior_precision * squared_norm / num_train

    def fit_posterior(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """The last-layer Laplace approximation at the current weights on the whole training set, fitted in float64 on
        a CPU copy of the network. float64: with many rows and a small noise scale the Gauss-Newton term outweighs the
        prior precision by more than float32's 7 digits (naval: 8,592 rows at scale 0.1, about 1e7), so a precision
        summed in float32 is indefinite or silently wrong. The CPU: laplace-torch 0.3's curvlinops backend multiplies
        by a `torch.eye` it makes on the CPU in the default dtype (laplace/curvature/curvlinops.py, `full`)."""
        network = copy.deepcopy(self.network).to("cpu", torch.float64)
        x_train, y_train = x_train.to("cpu", torch.float64), y_train.to("cpu", torch.float64)
        with default_dtype(torch.float64):
            laplace = laplace_class()(
                network,
                "regression",
                subset_of_weights=SUBSETS_OF_WEIGHTS[0],
                hessian_structure=HESSIAN_STRUCTURES[0],
                sigma_noise=float(self.likelihood.log_scale.exp()),
                prior_precision=self.map_prior_precision,
                last_layer_name=str(len(network) - 1),
            )
            # the loader's own generator: iterating a DataLoader otherwise draws a seed from torch's global stream
            loader = DataLoader(TensorDataset(x_train, y_train), batch_size=len(x_train), generator=torch.Generator())
            laplace.fit(loader)
            if self.fit_prior_precision:
                laplace.optimize_prior_precision("glm", method="marglik", init_prior_prec=self.map_prior_precision)
            self.posterior_scale.copy_(laplace.posterior_scale)
            self.prior_precision.copy_(laplace.prior_precision.squeeze())

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """`eval_samples` draws of the network's function under last-layer weights from the posterior: [S, N, 1]."""
        features = self.network[:-1](x)
        design = torch.cat([features, torch.ones_like(features[:, :1])], dim=1)  # laplace-torch's order: weight, bias
        noise = torch.randn(self.eval_samples, len(self.posterior_scale), dtype=x.dtype, device=x.device)
        offsets = noise @ self.posterior_scale.T  # w_s - w_MAP ~ N(0, Sigma), Sigma = scale scale^T
        return self.last_layer()(features) + (offsets @ design.T)[..., None]

    def noise_variance(self) -> float:
        """The fixed Gaussian likelihood's scale^2 (laplace-torch's sigma_noise^2, the noise of Redux's predictive)."""
        return self.likelihood.variance

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        """The prior precision of the last fit (1 / prior_variance before the first)."""
        return {"prior_precision": float(self.prior_precision)}


def check_choice(name: str, value: str, known: tuple[str, ...]) -> None:
    if value not in known:
        raise ValueError(f"method 'laplace': {name} {value!r} is not supported; known: {', '.join(known)}")


def build(run_cfg: DictConfig, spec: DataSpec) -> LaplaceApproximation:
    """The Laplace approximation of config/train/method/laplace.yaml; regression with one output only."""
    cfg = run_cfg.method
    check_choice("subset_of_weights", cfg.subset_of_weights, SUBSETS_OF_WEIGHTS)
    check_choice("hessian_structure", cfg.hessian_structure, HESSIAN_STRUCTURES)
    check_choice("prior_precision_fit", cfg.prior_precision_fit, PRIOR_PRECISION_FITS)
    if not math.isfinite(cfg.prior_variance) or cfg.prior_variance <= 0:
        raise ValueError(f"method 'laplace': prior_variance must be a positive number, got {cfg.prior_variance}")
    return LaplaceApproximation(
        spec.num_features,
        cfg.hidden_widths,
        cfg.prior_variance,
        cfg.likelihood.scale,
        cfg.prior_precision_fit == "marglik",
        cfg.eval_samples,
    )

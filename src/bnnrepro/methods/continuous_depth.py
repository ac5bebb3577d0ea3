"""Continuous-depth networks as training-loop methods: SDE-BNN (weights follow an SDE in depth, Xu et al.
2022) and ODEnet (the same block with constant weights, a Table 1 baseline of that paper, §5).

Both map x -> input layer -> hidden units integrated over depth t in [0, 1] -> output layer. The loss is the
per-datum negative ELBO (SDE-BNN; ODEnet: the negative log-likelihood, KL coef. 0 in Table 2) with a
softmax likelihood for classification or a location-scale likelihood for regression.
"""

from __future__ import annotations

import torch
import torchsde
from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood, categorical_log_likelihood
from bnnrepro.inference.ou_prior import OrnsteinUhlenbeckPrior
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.image_classifiers import image_network
from bnnrepro.models.weight_sde import (
    SDEBNN,
    AugmentedWeightSDE,
    HiddenDynamics,
    MLPHiddenDynamics,
    ZeroAugment,
    negative_elbo,
)
from bnnrepro.models.weight_sde_solver import SolverSettings, ZeroPaddedBrownian, brownian_motion

METHODS = ("sdebnn", "odenet", "hyperodenet", "mfvi_odenet", "mfvi_hyperodenet", "resnet32", "mfvi_resnet32")
"""The Hydra method names (config/train/method/*.yaml `name`) this module builds: the SDE-BNN and the models it is
compared with (SDE-BNN paper Table 1)."""
TASKS = {
    "sdebnn": ("classification", "regression"),
    "odenet": ("classification", "regression"),
    "hyperodenet": ("classification",),
    "mfvi_odenet": ("classification",),
    "mfvi_hyperodenet": ("classification",),
    "resnet32": ("classification",),
    "mfvi_resnet32": ("classification",),
}
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {
    "regression": "the image classifiers of SDE-BNN Table 1 (HyperODEnet, the MFVI models, ResNet32) end in classes"
}
"""Why its methods do not take a task, for the error a study that pairs them gets."""

TRAJECTORY_TIMES = 51  # depths t in [0, 1] at which the hidden state is recorded


class ODENet(nn.Module):
    """dh/dt = f_h(t, h; w_0) with learned constant weights w_0, fixed-step Euler over [0, 1] (SDE-BNN paper §5)."""

    def __init__(self, input_layer: nn.Module, dynamics: HiddenDynamics, output_layer: nn.Module, num_steps: int):
        super().__init__()
        self.input_layer, self.dynamics, self.output_layer = input_layer, dynamics, output_layer
        self.w0 = nn.Parameter(dynamics.initial_weights())
        self.num_steps = num_steps

    def hidden_paths(self, x: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """h(t) at `times` [T] (a refinement of the solver grid is not needed: Euler on `times`): [T, 1, B, ...]."""
        h = self.input_layer(x).unsqueeze(0)
        w = self.w0.unsqueeze(0)
        paths = [h]
        for t0, t1 in zip(times[:-1], times[1:], strict=True):
            h = h + self.dynamics(t0, h, w) * (t1 - t0)
            paths.append(h)
        return torch.stack(paths)

    def forward(self, x: torch.Tensor, num_samples: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """(outputs [1, B, out], KL [1] = 0): a point estimate has one "sample" and no KL."""
        times = torch.linspace(0.0, 1.0, self.num_steps + 1, dtype=self.w0.dtype, device=self.w0.device)
        h1 = self.hidden_paths(x, times)[-1]
        return self.output_layer(h1.flatten(0, 1)).unsqueeze(0), self.w0.new_zeros(1)


class ContinuousDepthMethod(LossMinimiser, FixedArchitectureMethod):
    """A continuous-depth network with its likelihood, trained on the per-datum negative ELBO."""

    def __init__(
        self, network: SDEBNN | ODENet | nn.Module, task: str, likelihood: RegressionLikelihood | None, cfg: DictConfig
    ):
        super().__init__()
        self.network, self.task, self.likelihood = network, task, likelihood
        self.num_samples, self.eval_samples, self.kl_weight = cfg.num_samples, cfg.eval_samples, cfg.kl_weight

    def log_likelihood(self, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | x, w) [S, B] for outputs [S, B, out]."""
        if self.task == "classification":
            return categorical_log_likelihood(outputs, y)
        return self.likelihood(outputs, y)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        outputs, kl = self.network(x, self.num_samples)
        return negative_elbo(self.log_likelihood(outputs, y), kl, num_train, self.kl_weight)

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Classification: the posterior predictive (1/S) sum_s softmax(f_s(x)) [N, C]; regression: the
        likelihood's location under S weight paths [S, N, out]."""
        outputs, _ = self.network(x, self.eval_samples)
        return outputs.softmax(-1).mean(0) if self.task == "classification" else outputs

    def noise_variance(self) -> float:
        """Regression: the variance of the likelihood's noise; classification: 0."""
        return 0.0 if self.likelihood is None else self.likelihood.variance

    def diagnostics(self) -> dict[str, float]:
        """The regression likelihood's learned scale; for SDE-BNNs, `train_nfe`: the drift evaluations of all
        weight SDEs in training so far (forward and adjoint solves; the solvers' cost, SDE-BNN paper Figs. 14, 15)."""
        values = {} if self.likelihood is None else {"likelihood_scale": float(self.likelihood.log_scale.exp())}
        counters = [m.training_evaluations for m in self.network.modules() if isinstance(m, AugmentedWeightSDE)]
        if counters:
            values["train_nfe"] = float(sum(int(c) for c in counters))
        return values

    def hidden_paths(self, x: torch.Tensor, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(times [T], full hidden state h(t) [T, S, B, dim]) including the augmented dimensions."""
        times = torch.linspace(0.0, 1.0, TRAJECTORY_TIMES)
        if isinstance(self.network, ODENet):
            return times, self.network.hidden_paths(x, times)
        ys = self.weight_and_hidden_paths(x, num_samples, times)
        hidden = self.network.sde.split(ys).h
        return times, hidden.unflatten(-1, (x.shape[0], -1))

    def final_weights(self, x: torch.Tensor, num_samples: int) -> torch.Tensor | None:
        """The weights at t = 1 of `num_samples` posterior weight paths [S, d] (workshop Fig. 3); None for ODEnet,
        whose weights are constant."""
        if not isinstance(self.network, SDEBNN):
            return None
        final = self.weight_and_hidden_paths(x, num_samples, torch.tensor([0.0, 1.0]))[-1]
        return self.network.sde.split(final).w

    def weight_sdes(self) -> list[SDEBNN]:
        """The network's SDE-BNN blocks, whose solver settings a sweep changes (SDE-BNN §5.2); [] for the others."""
        return [module for module in self.network.modules() if isinstance(module, SDEBNN)]

    def weight_and_hidden_paths(self, x: torch.Tensor, num_samples: int, times: torch.Tensor) -> torch.Tensor:
        """The augmented state [T, S, ...] at `times` under the posterior (Ito Euler-Maruyama, the model's step),
        driven by the model's Brownian motion, whose entropy comes from torch's generator: a seed fixes the paths."""
        network = self.network
        w0, _ = network.initial_weights(num_samples)
        y0 = network.sde.initial_state(w0, network.input_layer(x))
        weights_bm = brownian_motion(network.sde, y0, network.solver)
        bm = ZeroPaddedBrownian(weights_bm, y0.shape[1])
        return torchsde.sdeint(network.sde, y0, times, method="euler", dt=network.solver.dt, bm=bm)


def build(run_cfg: DictConfig, spec: DataSpec) -> ContinuousDepthMethod:
    """SDE-BNN or ODEnet with fully connected dynamics on the input plus `augment` zero dimensions; with an
    `architecture` key, an image classifier of SDE-BNN Table 1 (`bnnrepro.models.image_classifiers`)."""
    cfg = run_cfg.method
    if "architecture" in cfg:
        return ContinuousDepthMethod(image_network(cfg, run_cfg.dataset.name, spec.num_classes), spec.task, None, cfg)
    out_features = spec.num_classes if spec.task == "classification" else 1
    dim = spec.num_features + cfg.augment
    input_layer = nn.Sequential(nn.Flatten(), ZeroAugment(cfg.augment))
    dynamics = MLPHiddenDynamics(dim, cfg.hidden_widths, cfg.activation)
    output_layer = nn.Linear(dim, out_features)
    solver = SolverSettings(**cfg.solver)
    if cfg.name == "sdebnn":
        network = SDEBNN(
            input_layer,
            dynamics,
            output_layer,
            OrnsteinUhlenbeckPrior(cfg.sigma),
            cfg.drift_widths,
            drift_activation=cfg.activation,
            solver=solver,
            kl_estimator=cfg.kl_estimator,
            infer_w0=cfg.infer_w0,
            w0_prior_variance=cfg.w0_prior_variance,
        )
    elif cfg.name == "odenet":
        network = ODENet(input_layer, dynamics, output_layer, solver.num_steps)
    else:
        raise ValueError(f"unknown continuous-depth method {cfg.name!r}")
    likelihood = None
    if spec.task == "regression":
        likelihood = RegressionLikelihood(cfg.likelihood.scale, cfg.likelihood.family, cfg.likelihood.learn_scale)
    return ContinuousDepthMethod(network, spec.task, likelihood, cfg)

"""Depth-variational networks: the UDN, finite networks Omega_L and DUN (Nazaret & Blei 2022).

All three train one `UnboundedDepthNetwork` by maximising the ELBO of eq. (10); they differ only in
the heads (per depth or shared), the variational q(l) and the prior p(l):

| method | heads     | q(l)                   | p(l)                     |
|--------|-----------|------------------------|--------------------------|
| udn    | per depth | truncated Poisson TP   | l - 1 ~ Poisson(alpha)   |
| finite | shared    | point mass at L        | point mass at L          |
| dun    | shared    | categorical on 1..D    | uniform on 1..D          |
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import nn
from torch.nn import functional as F

from bnnrepro.data.spec import DataSpec
from bnnrepro.distributions import RegressionLikelihood, unit_variance_gaussian_kl
from bnnrepro.inference import depth_posteriors
from bnnrepro.inference.depth_elbo import depth_elbo
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.batch_norm_statistics import refresh_batch_norm_statistics, stale_batch_norms
from bnnrepro.models.bottleneck_generator import bottleneck_resnet_layer, pooled_linear_head
from bnnrepro.models.unbounded_depth import (
    LayerGenerator,
    UnboundedDepthNetwork,
    fully_connected_layer,
    linear_head,
)
from bnnrepro.optim import Optimizer

BATCH_NORM_EXAMPLES = 4096
"""Training inputs on which `fit_posterior` estimates the statistics of new BatchNorm layers (16 batches of 256)."""

METHODS = ("udn", "finite", "dun")
"""The Hydra method names (config/train/method/*.yaml `name`) this module builds: the UDN and its finite-depth
and DUN baselines (UDN paper §5)."""
TASKS = ("classification", "regression")
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""


class DepthNetworkMethod(LossMinimiser):
    """A network over depths with its q(l), p(l) and N(0, weight_prior_variance) weight prior; trained on -ELBO / n.
    `noise`: the Gaussian likelihood of regression targets (None: the UDN paper's unit variance, App. B.4)."""

    def __init__(
        self,
        network: UnboundedDepthNetwork,
        depth_posterior: nn.Module,
        depth_prior: nn.Module,
        weight_prior_variance: float,
        task: str = "classification",
        noise: RegressionLikelihood | None = None,
    ):
        super().__init__()
        if task not in ("classification", "regression"):
            raise ValueError(f"a depth network classifies or regresses; got task {task!r}")
        self.network, self.depth_posterior, self.depth_prior = network, depth_posterior, depth_prior
        self.weight_prior_variance, self.task = weight_prior_variance, task
        unit_variance = RegressionLikelihood(1.0, "gaussian", learn_scale=False)
        self.noise = (noise or unit_variance) if task == "regression" else None
        self.network.grow_to(depth_posterior.max_depth())

    def parameter_groups(self, lr: float, depth_lr_ratio: float) -> list[dict]:
        """Weights (with a learned noise scale) first (new layers are appended to this group), then q(l)'s
        parameters."""
        noise = [p for p in self.noise.parameters() if p.requires_grad] if self.noise is not None else []
        groups = [{"params": [*self.network.weight_parameters(), *noise], "lr": lr}]
        depth_params = list(self.depth_posterior.parameters())
        if depth_params:
            # SGD's weight decay is He et al.'s on the weights (UDN §6.2), not on lambda (the paper has none there)
            groups.append({"params": depth_params, "lr": lr * depth_lr_ratio, "weight_decay": 0.0})
        return groups

    def adapt_architecture(self, optimizer: Optimizer) -> None:
        """Algorithm 1: create the layers and heads that the current support of q(l) reaches."""
        new = self.network.grow_to(self.depth_posterior.max_depth())
        optimizer.param_groups[0]["params"].extend(new)

    def _support(self) -> tuple[torch.Tensor, list[int]]:
        device = self.network.device_anchor.device
        log_q = self.depth_posterior.log_probs(self.depth_posterior.max_depth()).to(device)
        depths = [d + 1 for d in torch.nonzero(torch.isfinite(log_q)).flatten().tolist()]
        return log_q, depths

    def elbo(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """Eq. (10) on a minibatch, the data term rescaled by num_train / batch size."""
        log_q, depths = self._support()
        max_depth = log_q.numel()
        batch_log_lik = self._log_likelihood(self.network(x, depths), y) * (num_train / x.shape[0])
        index = torch.tensor(depths, device=x.device) - 1
        log_lik = torch.zeros(max_depth, device=x.device, dtype=batch_log_lik.dtype).index_put((index,), batch_log_lik)
        block_kl = torch.stack(
            [unit_variance_gaussian_kl(b, self.weight_prior_variance) for b in self.network.depth_blocks(max_depth)]
        )
        shared_kl = unit_variance_gaussian_kl(self.network.shared_parameters(), self.weight_prior_variance)
        weight_kl = block_kl.cumsum(0) + shared_kl
        log_prior = self.depth_prior.log_probs(max_depth).to(x.device)
        return depth_elbo(log_q, log_prior, log_lik, weight_kl)

    @torch.no_grad()
    def fit_posterior(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        """Estimate on training inputs the BatchNorm statistics of layers still near their initial values: Algorithm
        1 grows the network before an evaluation too, and a layer created a few steps ago has seen too few batches
        for its running averages (`stale_batch_norms`). Layers beyond the support of q(l) are never evaluated."""
        _, depths = self._support()
        stale = stale_batch_norms(self.network.layers[: max(depths)])  # layers beyond the support keep theirs
        if stale:
            x = x_train[:BATCH_NORM_EXAMPLES]
            refresh_batch_norm_statistics(self.network, lambda batch: self.network(batch, depths), stale, x, 256)

    def _log_likelihood(self, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """sum_i log p(y_i; Omega_l(x_i)) per depth l, from the outputs [depths, batch, outputs]: categorical
        (softmax of the logits), or Gaussian on standardised targets, with unit variance in the UDN paper (App. B.4;
        the variance is not stated, 1 in the authors' code, ANazaret/unbounded-depth-neural-networks `src/models.py`)
        or a learned one (`method.noise`)."""
        if self.task == "classification":
            nll = F.cross_entropy(outputs.flatten(0, 1), y.repeat(len(outputs)), reduction="none")
            return -nll.view(len(outputs), -1).sum(1)
        return self.noise(outputs, y).sum(1)

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """-ELBO / n: per-datum scale (Adam is invariant to it; it keeps SGD's learning rates portable)."""
        return -self.elbo(x, y, num_train) / num_train

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Posterior predictive of eq. (14): sum_l q(l) softmax(Omega_l(x)) [N, C]; for regression its mean
        sum_l q(l) Omega_l(x), as one sample [1, N, D] (the prediction of the authors' code,
        ANazaret/unbounded-depth-neural-networks `src/train.py`, on which Fig. 8's RMSE is computed)."""
        log_q, depths = self._support()
        outputs = self.network(x, depths)
        weights = log_q.exp()[torch.tensor(depths, device=x.device) - 1]
        if self.task == "classification":
            return torch.einsum("d,dbc->bc", weights, outputs.softmax(-1))
        return torch.einsum("d,dbc->bc", weights, outputs)[None]

    def noise_variance(self) -> float:
        """Regression: the likelihood's variance (standardised targets); classification: none."""
        return self.noise.variance if self.noise is not None else 0.0

    @torch.no_grad()
    def diagnostics(self) -> dict[str, float]:
        """E_q[l], m(q) and the number of instantiated layers (and lambda for the UDN)."""
        log_q, _ = self._support()
        values = {
            "expected_depth": depth_posteriors.expected_depth(log_q),
            "max_depth": float(log_q.numel()),
            "instantiated_layers": float(self.network.depth),
        }
        if isinstance(self.depth_posterior, depth_posteriors.TruncatedPoisson):
            values["rate"] = float(self.depth_posterior.rate)
        return values

    def prepare_resume(self, state: dict) -> None:
        """Instantiate as many layers as the checkpoint holds, so that its state_dict loads."""
        depth = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("network.layers."))
        self.network.grow_to(depth)


def network_generators(generator: DictConfig, spec: DataSpec) -> tuple[LayerGenerator, LayerGenerator]:
    """The layer and head generators f, o of the method's `generator` config: fully connected (spirals App. B.1,
    UCI App. B.4) or the bottleneck ResNet of §6.2 (CIFAR-10)."""
    outputs = spec.num_classes if spec.task == "classification" else 1  # regression: one standardised target
    if generator.kind == "fully_connected":
        return fully_connected_layer(spec.num_features, generator.width), linear_head(generator.width, outputs)
    if generator.kind == "bottleneck_resnet":
        return (
            bottleneck_resnet_layer(generator.width_multiplier, generator.max_depth),
            pooled_linear_head(generator.width_multiplier, outputs),
        )
    raise ValueError(f"unknown method.generator.kind {generator.kind!r}; choose fully_connected or bottleneck_resnet")


def build(run_cfg: DictConfig, spec: DataSpec) -> DepthNetworkMethod:
    """Build the UDN, a finite network or DUN from the Hydra `method` group."""
    cfg = run_cfg.method
    if cfg.name == "udn":
        posterior = depth_posteriors.TruncatedPoisson(
            cfg.depth_posterior.initial_rate, cfg.depth_posterior.quantile, cfg.depth_posterior.depth_limit
        )
        prior = depth_posteriors.ShiftedPoissonPrior(cfg.depth_prior.rate)
    elif cfg.name == "finite":
        posterior, prior = depth_posteriors.FixedDepth(cfg.depth), depth_posteriors.PointMassPrior()
    elif cfg.name == "dun":
        posterior, prior = (
            depth_posteriors.CategoricalDepth(cfg.max_depth),
            depth_posteriors.UniformDepthPrior(cfg.max_depth),
        )
    else:
        raise ValueError(f"unknown depth-network method {cfg.name!r}")
    layer, head = network_generators(cfg.generator, spec)
    if cfg.generator.kind == "bottleneck_resnet" and cfg.name == "dun":
        raise ValueError(
            "DUN shares one head across depths, whose hidden states the bottleneck ResNet reshapes from stage to "
            "stage; use DUN with method.generator.kind=fully_connected (the UDN paper runs it on spirals only)"
        )
    network = UnboundedDepthNetwork(layer, head, heads=cfg.heads, shared_head_depth=posterior.max_depth())
    noise = RegressionLikelihood(cfg.noise.scale, "gaussian", cfg.noise.learn_scale)
    return DepthNetworkMethod(network, posterior, prior, cfg.weight_prior_variance, spec.task, noise)

"""MC dropout (Gal & Ghahramani 2016): Bernoulli dropout after every hidden activation, at training and at test
time, read as variational inference; the predictive is the mean softmax over dropout masks (thesis §2.2; the
baseline of thesis Tables 5.2 and 5.4)."""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from bnnrepro.data.spec import DataSpec
from bnnrepro.inference.moment_likelihoods import mean_log_softmax
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.models.moment_layers import PlainNetwork, in_chunks, network_shapes

METHODS = ("mc_dropout",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""


class MonteCarloDropout(LossMinimiser, FixedArchitectureMethod):
    """A `PlainNetwork` with dropout rate p; the loss is the cross-entropy averaged over `num_samples` masks."""

    def __init__(self, network: PlainNetwork, num_samples: int, eval_samples: int):
        super().__init__()
        self.network, self.num_samples, self.eval_samples = network, num_samples, eval_samples

    def _draws(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        return torch.stack([self.network(x, sample_dropout=True) for _ in range(num_samples)])

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        return -mean_log_softmax(y, self._draws(x, self.num_samples)).mean()

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The mean softmax over `eval_samples` dropout masks [N, C]."""
        return in_chunks(lambda chunk: self._draws(chunk, self.eval_samples).softmax(-1).mean(0), x)

    def noise_variance(self) -> float:
        return 0.0


def build(run_cfg: DictConfig, spec: DataSpec) -> MonteCarloDropout:
    cfg = run_cfg.method
    if spec.task != "classification":
        raise ValueError(f"method 'mc_dropout' supports classification data only, got {spec.task!r}")
    if not 0 <= cfg.dropout < 1:
        raise ValueError(f"method.dropout is a rate in [0, 1), got {cfg.dropout}")
    network = PlainNetwork(network_shapes(cfg, spec.input_shape, spec.num_classes), cfg.dropout)
    return MonteCarloDropout(network, cfg.num_samples, cfg.eval_samples)

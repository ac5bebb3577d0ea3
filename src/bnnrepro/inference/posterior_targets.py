"""The distributions that the repulsive ensembles and their HMC reference sample (D'Angelo & Fortuin 2021).

Two kinds of target, both over vectors stacked as rows [n, d] ("particles" of an ensemble, or HMC draws):
  * `NetworkPosterior`: the weight posterior of an MLP, p(w | D) ∝ prod_b p(y_b | f(x_b; w)) N(w; 0, prior_variance I)
    (D'Angelo & Fortuin 2021, §3.1; the prior variance is a variance, not the authors' code's standard deviation:
    `ratschlab/repulsive_ensembles`, `utils/distributions.py`), for the 1D regression of Fig. 1 and the 2D
    classification of Fig. 3. Scores come from the inference library's one vmapped forward
    (bnnrepro.inference.repulsive), in weight space and, through each particle's Jacobian, in function space (eq. 5).
  * `SamplingTarget`: an explicit 2D density, the single Gaussian of Fig. 2 or Neal's funnel of Fig. F.1. Such a
    target has no x/y data. Its run reads a dataset file (bnnrepro.data.sampling_targets) whose training inputs are
    the particles' starting points (the authors' notebook's initialisation) and whose test inputs are exact samples
    of the target (the reference for the figures and the MMD); the density is the log density named by the dataset.
    The particles are the samples, the "loss" is the mean negative log density of the particles, and an epoch is
    one update of all particles (the loop's batches only count steps: the particles are the method's state).

The networks come from `bnnrepro.models.posterior_networks`; `bnnrepro.methods.weight_samples.build_target` builds
a run's target from its config.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn.utils import parameters_to_vector

from bnnrepro.data.sampling_targets import funnel_log_density, gaussian_log_density
from bnnrepro.distributions import probabilities_log_likelihood
from bnnrepro.inference.kernels import maximum_mean_discrepancy
from bnnrepro.inference.repulsive import (
    LogLikelihood,
    PullBack,
    ensemble_forward,
    ensemble_vjp,
    function_space_scores,
    log_posterior_grads,
    sample_prior_outputs,
    unflatten_parameters,
)

SAMPLING_DENSITIES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian_target": gaussian_log_density,
    "funnel_target": funnel_log_density,
}
"""log p(x) [...] of points x [..., 2] of each sampling dataset (config/datasets.yaml)."""

PREDICT_CHUNK = 32
"""Members per batched forward when averaging class probabilities (bounds memory on the 300 x 300 entropy grid)."""

FORWARD_ELEMENTS = 2**18
"""Input elements (members x inputs x input size) per batched forward of a classifier's predictions: a network's
activations for many more leave the CPU's caches (ResNet8, 3 members, 1000 CIFAR images, one thread: 6.3 s at once,
2.9 s in chunks of 32 images, 2.7 s of 16; an MLP is as fast either way; measured). Each input's outputs are its own."""


def input_chunks(x: torch.Tensor, members: int) -> tuple[torch.Tensor, ...]:
    """x [N, ...] split into the chunks of inputs that one batched forward of `members` members takes."""
    return x.split(max(1, FORWARD_ELEMENTS // (members * math.prod(x.shape[1:]))))


class GaussianLogLikelihood:
    """log N(y | f, std^2 I) of each example, summed over output dimensions (regression; std as the authors' code,
    `ratschlab/repulsive_ensembles` `utils/distributions.py`)."""

    def __init__(self, std: float):
        self.std = std

    @property
    def variance(self) -> float:
        """The noise variance std^2."""
        return self.std**2

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        std = self.std
        return (-0.5 * ((targets - outputs) / std).square() - math.log(std) - 0.5 * math.log(2 * math.pi)).sum(-1)


def categorical_log_likelihood(outputs_are_probabilities: bool) -> LogLikelihood:
    """log p(y | f) of a categorical likelihood on logits f, or on probabilities f
    (`bnnrepro.distributions.probabilities_log_likelihood`). On logits it normalises by log_softmax, which rounds
    differently from `bnnrepro.distributions.categorical_log_likelihood` (logits - logsumexp) in the last bits: the
    particle methods keep it so that their results stay those they were published with here."""
    if outputs_are_probabilities:
        return probabilities_log_likelihood

    def log_likelihood(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return outputs.log_softmax(-1).gather(-1, targets[:, None]).squeeze(-1)

    return log_likelihood


def member_prior_variances(variances: Sequence[float], num_particles: int) -> torch.Tensor:
    """The prior variance of each of `num_particles` members [n]: `variances` in equal consecutive blocks, as the
    authors' hyper-deep ensemble `np.repeat([0.1, ..., 0.5], 4)` for 20 members (not described in the paper)."""
    if num_particles % len(variances):
        raise ValueError(
            f"{num_particles} particles cannot share {len(variances)} prior variances equally: "
            f"set method.num_particles to a multiple of {len(variances)}"
        )
    return torch.tensor(list(variances), dtype=torch.float32).repeat_interleave(num_particles // len(variances))


class NetworkPosterior(nn.Module):
    """The weight posterior of `network` (its own weights are never used: the samples replace them).

    prior_variance: one variance of the prior N(0, prior_variance I), or one per particle [n] (a hyper-deep
    ensemble's members, each sampling the posterior under its own prior). task: "regression" (outputs are the
    predictive mean, a `GaussianLogLikelihood`) or "classification" (outputs are logits, or class probabilities when the
    network ends in a softmax: the function values fWGD/f-SVGD repel, not stated in the paper; `entropy_grid` is the
    side of the 2D figure's entropy mesh)."""

    def __init__(
        self,
        network: nn.Module,
        log_likelihood: LogLikelihood,
        prior_variance: float | torch.Tensor,
        task: str,
        outputs_are_probabilities: bool = False,
        entropy_grid: int = 300,
    ):
        super().__init__()
        if task == "regression" and not isinstance(log_likelihood, GaussianLogLikelihood):
            raise TypeError(f"a regression posterior takes a GaussianLogLikelihood, got {log_likelihood!r}")
        self.network = network.requires_grad_(False)
        self.log_likelihood, self.task = log_likelihood, task
        if isinstance(prior_variance, torch.Tensor):
            self.register_buffer("prior_variance", prior_variance, persistent=False)
        else:
            self.prior_variance = prior_variance
        self.outputs_are_probabilities, self.entropy_grid = outputs_are_probabilities, entropy_grid
        # the library's layout of a flat weight vector (that of parameters_to_vector) as the network's parameters
        self.unflatten = unflatten_parameters(network)

    def initial_particles(self, num_particles: int) -> torch.Tensor:
        """Draws of the prior N(0, prior_variance I) [n, d] (the authors' toys start from N(0, 1), their prior)."""
        dimension = sum(p.numel() for p in self.network.parameters())
        std = torch.as_tensor(self.prior_variance, dtype=torch.float32).sqrt()
        return (std[:, None] if std.ndim else std) * torch.randn(num_particles, dimension)

    def network_initialisations(self, num_particles: int) -> torch.Tensor:
        """n draws of the network's own PyTorch initialisation (Kaiming-uniform), flattened [n, d]: the authors'
        image tasks initialise each member so, where their toys draw from the prior (not stated in the paper)."""
        network = copy.deepcopy(self.network)
        draws = []
        for _ in range(num_particles):
            for module in network.modules():
                if callable(reset := getattr(module, "reset_parameters", None)):
                    reset()
            draws.append(parameters_to_vector(network.parameters()))
        return torch.stack(draws)

    def _log_density(
        self, weights: torch.Tensor, outputs: torch.Tensor, y: torch.Tensor, num_train: int
    ) -> torch.Tensor:
        """log p(w_i | D) + const [n] from the outputs [n, m, out] on a batch: num_train times the batch's mean
        log-likelihood (as the authors' code, `ratschlab/repulsive_ensembles` `utils/distributions.py`) plus the log
        prior."""
        batch_log_likelihood = vmap(lambda f: self.log_likelihood(f, y).mean())(outputs)
        return num_train * batch_log_likelihood - weights.square().sum(1) / (2 * self.prior_variance)

    def log_density(self, weights: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """log p(w_i | D) + const of each row of weights [n, d]: [n]."""
        return self._log_density(weights, ensemble_forward(self.network, weights, x), y, num_train)

    def single_log_density(self, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """log p(w | D) + const of one weight vector [d], as `log_density` but by a plain functional call: HMC's
        potential, three times faster than the vmapped path for a single vector (measured)."""
        outputs = functional_call(self.network, self.unflatten(w), (x,))
        return num_train * self.log_likelihood(outputs, y).mean() - w.square().sum() / (2 * self.prior_variance)

    def weight_scores(
        self, weights: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """grad_w log p(w_i | D) [n, d] and the mean negative log posterior per datum (the reported loss)."""
        grads, outputs = log_posterior_grads(
            self.network, weights, x, y, self.log_likelihood, num_train, self.prior_variance
        )
        return grads, -self._log_density(weights, outputs, y, num_train).mean() / num_train

    def function_scores(
        self, weights: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int
    ) -> tuple[torch.Tensor, torch.Tensor, PullBack, torch.Tensor]:
        """The outputs f(x_B; w_i) [n, m, out], grad_f log p(f_i | D) on them, the pull-back J_i^T of eq. (5) and the
        reported loss. The functional prior's score is SSGE on as many fresh draws of the push-forward prior on the
        batch as there are particles (the authors' f_WGD; paper §3.3)."""
        if isinstance(self.prior_variance, torch.Tensor):
            raise ValueError("a function-space rule needs one weight prior for its push-forward, not one per member")
        outputs, pull_back = ensemble_vjp(self.network, weights, x)
        prior_outputs = sample_prior_outputs(self.network, x, len(weights), self.prior_variance)
        scores = function_space_scores(outputs, y, self.log_likelihood, num_train, prior_outputs)
        return outputs, scores, pull_back, -self._log_density(weights, outputs, y, num_train).mean() / num_train

    def _probabilities(self, outputs: torch.Tensor) -> torch.Tensor:
        return outputs if self.outputs_are_probabilities else outputs.softmax(-1)

    def predict(self, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Regression: every sample's function on x [n, N, 1]. Classification: the predictive (Bayesian model
        average, eq. 1) p(y | x) = (1/n) sum_i p(y | f(x; w_i)) [N, C]."""
        if self.task == "regression":
            return ensemble_forward(self.network, weights, x)
        chunks = weights.split(PREDICT_CHUNK)
        summed = [
            sum(self._probabilities(ensemble_forward(self.network, w, part)).sum(0) for w in chunks)
            for part in input_chunks(x, len(chunks[0]))
        ]
        return torch.cat(summed) / len(weights)

    def noise_variance(self) -> float:
        """Regression: the Gaussian likelihood's std^2; classification: 0."""
        return self.log_likelihood.variance if self.task == "regression" else 0.0

    def member_probabilities(self, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Classification: every member's class probabilities p(y | f(x; w_i)) [n, N, C] (for the entropy and model
        disagreement of the paper's Table 1), in `input_chunks`."""
        chunks = [
            self._probabilities(ensemble_forward(self.network, weights, part)) for part in input_chunks(x, len(weights))
        ]
        return torch.cat(chunks, dim=1)

    def diagnostics(self, weights: torch.Tensor) -> dict[str, float]:
        return {}


class SamplingTarget(nn.Module):
    """An explicit density over points [n, d]; `start` are the particles' starting points and `reference` exact
    samples of the target (the dataset's training and test inputs)."""

    task = "sampling"

    def __init__(
        self, log_density: Callable[[torch.Tensor], torch.Tensor], start: torch.Tensor, reference: torch.Tensor
    ):
        super().__init__()
        self.density = log_density
        self.register_buffer("start", start, persistent=False)
        self.register_buffer("reference", reference, persistent=False)

    def initial_particles(self, num_particles: int) -> torch.Tensor:
        """The dataset's starting points: their number is the dataset's `n_particles` (`num_particles` is unused)."""
        return self.start.clone()

    def log_density(self, weights: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        """log p(x_i) of each particle [n] (the batch is not used)."""
        return self.density(weights)

    def weight_scores(
        self, weights: torch.Tensor, x: torch.Tensor, y: torch.Tensor, num_train: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """grad log p(x_i) [n, d] by autograd, and the mean negative log density of the particles."""
        with torch.enable_grad():
            points = weights.detach().requires_grad_()
            log_density = self.density(points)
            (grads,) = torch.autograd.grad(log_density.sum(), points)
        return grads, -log_density.detach().mean()

    def predict(self, weights: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """A sampler predicts no targets: [n, N, 0] (the training loop's regression RMSE of a sampling run is NaN)."""
        return weights.new_empty(len(weights), len(x), 0)

    def noise_variance(self) -> float:
        """A sampler predicts no targets: no observation noise."""
        return 0.0

    def diagnostics(self, weights: torch.Tensor) -> dict[str, float]:
        """MMD to the reference samples, and the errors of the particles' mean (Euclidean) and covariance
        (Frobenius): our quantitative check for Figs. 2 and F.1 (the paper gives no numbers for them)."""
        weights = weights.detach()
        return {
            "mmd": maximum_mean_discrepancy(weights, self.reference),
            "mean_error": float((weights.mean(0) - self.reference.mean(0)).norm()),
            "covariance_error": float((weights.T.cov() - self.reference.T.cov()).norm()),
        }


Target = NetworkPosterior | SamplingTarget

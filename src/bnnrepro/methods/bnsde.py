"""Bayesian neural SDEs with empirical (PAC-)Bayes, thesis ch. 6 (Haußmann, Gerwinn et al. 2021), and the D-BNN
baselines trained on the same model.

The model is `bnnrepro.models.hybrid_sde.HybridSDE` (a BNN drift plus gamma-weighted prior knowledge, constant
diagonal diffusion) seen through a `bnnrepro.models.sequence_observation` model. A datum is one observed sequence;
each step simulates S trajectories per sequence by Euler-Maruyama on its time grid and scores them with a Gaussian
likelihood of fixed variance. `objective` picks the training criterion (§6.4, §6.4.3):

- e_bayes:      -(1/B) sum_n log (1/S) sum_s p(Y_n | H^s)                          (eq. 6.8; (i), (iii))
- e_pac_bayes:  -mll + sqrt((KL + log(4 sqrt(N)/delta)) / 2N), KL = path KL + weight KL  (Algorithm 2; (ii), (iv))
- elbo:         -mll + KL(q(theta) || p(theta)) / N           (D-BNN (VI), Hegde et al. 2019: no prior SDE)
- sgld:         Langevin steps on U = -log p(Y | theta) - log p(theta) with point weights (D-BNN (SGLD), Look &
                Kandemir 2019), preconditioned (`preconditioned_langevin_step`)
- none:         no drift network and no training: the white-box prior SDE (eq. 6.6, Fig. 6.3).

The hybrids are e_bayes and e_pac_bayes with a nonzero gamma (`knowledge.gamma`). The PAC term's KL is over all N
training sequences: a minibatch of B scales its path KLs by N / B (how the thesis scales minibatches is not stated).
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro.data.spec import DataSpec, Splits
from bnnrepro.inference.pac_bayes import check_delta, log_mean_exp_data_term, mean_log_data_term, pac_complexity
from bnnrepro.methods.fixed_architecture import FixedArchitectureMethod
from bnnrepro.methods.loss_minimiser import LossMinimiser
from bnnrepro.methods.protocol import check_finite_gradients, finite_loss
from bnnrepro.models.bayesian_drift import WEIGHT_SAMPLING, BayesianDrift
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.models.prior_knowledge import KnowledgeDrift, LearnedKnowledge
from bnnrepro.models.sequence_observation import EncodedState, ObservedState, gaussian_log_likelihood
from bnnrepro.optim import Adam, Optimizer

METHODS = ("bnsde",)
"""The Hydra method name (config/train/method/*.yaml `name`) this module builds."""
TASKS = ("forecasting",)
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {
    "regression": "a BNSDE learns the dynamics of sequences and forecasts them (thesis ch. 6)",
    "classification": "a BNSDE learns the dynamics of sequences and forecasts them (thesis ch. 6)",
}
"""Why its methods do not take a task, for the error a study that pairs them gets."""
OBJECTIVES = ("e_bayes", "e_pac_bayes", "elbo", "sgld", "none")


class BNSDEMethod(LossMinimiser, FixedArchitectureMethod):
    """A hybrid BNSDE behind an observation model, trained on one of OBJECTIVES."""

    def __init__(
        self, sde: HybridSDE, observation: ObservedState | EncodedState, cfg: DictConfig, variance: float, epochs: int
    ):
        super().__init__()
        self.sde, self.observation, self.likelihood_variance = sde, observation, variance
        self.objective, self.weight_sampling = cfg.objective, cfg.weight_sampling
        self.num_samples, self.eval_samples = cfg.num_samples, cfg.eval_samples
        self.delta, self.prior_precision = cfg.delta, cfg.prior_precision
        self.curriculum, self.epochs = cfg.curriculum, epochs
        self.register_buffer("epochs_done", torch.zeros((), dtype=torch.long))
        self.last_step: dict[str, float] = {}

    def forecast(self, x: torch.Tensor, samples: int, with_kl: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """`samples` simulated predictions per sequence of x: ([S, L, B, D], path KL [S, B])."""
        h0 = self.observation.initial_state(x)
        batch = h0.shape[0]
        steps = self.observation.steps(x)
        t0 = self.observation.start_time(x).repeat(samples)
        path, kl = self.sde.solve(h0.repeat(samples, 1), steps, self.weight_sampling, with_kl=with_kl, t0=t0)
        prediction = self.observation.emit(path).unflatten(1, (samples, batch)).transpose(0, 1)
        return prediction, kl.view(samples, batch)

    def forecast_observations(self, span: torch.Tensor, trajectories: int) -> torch.Tensor:
        """`trajectories` sample paths [trajectories, L, P] from the first state of `span` ([L, P + 1]: states,
        then time) over its time grid: one batched Euler-Maruyama solve (`forecast`). Only where the state is the
        observation (Lotka-Volterra, Lorenz; not the CMU encoder's latent state)."""
        if not isinstance(self.observation, ObservedState):
            raise ValueError(
                f"forecasts of the observations need a BNSDE whose state is the observation (Lotka-Volterra, Lorenz); "
                f"this one observes through {type(self.observation).__name__}"
            )
        with torch.no_grad():
            prediction = self.forecast(span[None], trajectories, with_kl=False)[0]  # [S, L, 1, P]
        return prediction[:, :, 0]

    def snippet(self, x: torch.Tensor) -> torch.Tensor:
        """A random window of the curriculum's current length from each sequence, or x itself. The curriculum gives
        the lengths and the fraction of the epochs up to which each is used, rounded to an epoch (CMU, §6.6.3: 30
        frames to epoch 1000, 50 to 2500, then 100, of 3000)."""
        if self.curriculum is None:
            return x
        epoch = int(self.epochs_done) + 1
        ends = [round(fraction * self.epochs) for fraction in self.curriculum.until_fraction]
        length = next(
            (n for n, end in zip(self.curriculum.lengths, ends, strict=False) if epoch <= end),
            self.curriculum.lengths[-1],
        )
        length = min(length, x.shape[1])
        starts = torch.randint(0, x.shape[1] - length + 1, (x.shape[0],))
        return torch.stack([x[i, s : s + length] for i, s in enumerate(starts.tolist())])

    def loss(self, x: torch.Tensor, y: torch.Tensor, num_train: int) -> torch.Tensor:
        x = self.snippet(x)
        targets = x[..., : y.shape[-1]] if self.curriculum is not None else y
        needs_kl = self.objective == "e_pac_bayes"
        prediction, path_kl = self.forecast(x, self.num_samples, with_kl=needs_kl)
        log_likelihoods = gaussian_log_likelihood(prediction, targets.transpose(0, 1), self.likelihood_variance)
        drift = self.sde.drift
        if self.objective == "e_bayes":
            loss = log_mean_exp_data_term(log_likelihoods)
        elif self.objective == "e_pac_bayes":
            kl = path_kl.mean(0).sum() * (num_train / x.shape[0]) + drift.kl(self.prior_precision)
            complexity = pac_complexity(kl, num_train, self.delta)
            self.last_step = {"kl": kl.item(), "pac_complexity": complexity.item()}
            loss = mean_log_data_term(log_likelihoods) + complexity
        elif self.objective == "elbo":
            loss = mean_log_data_term(log_likelihoods) + drift.kl(self.prior_precision) / num_train
        elif self.objective == "sgld":
            loss = mean_log_data_term(log_likelihoods) + 0.5 * self.prior_precision * drift.squared_norm() / num_train
        else:
            loss = mean_log_data_term(log_likelihoods)
        return loss

    def training_step(self, x: torch.Tensor, y: torch.Tensor, num_train: int, optimizer: Optimizer) -> float:
        """Adam on the loss (LossMinimiser), a Langevin step for sgld, nothing for the untrained white box."""
        if self.objective == "none":
            with torch.no_grad():
                return finite_loss(self.loss(x, y, num_train))
        if self.objective != "sgld":
            return super().training_step(x, y, num_train, optimizer)
        loss = self.loss(x, y, num_train)
        value = finite_loss(loss)
        self.zero_grad()
        (loss * num_train).backward()  # U(theta) = -log p(Y | theta) - log p(theta), the whole training set's
        check_finite_gradients(self)
        preconditioned_langevin_step(optimizer)
        return value

    def end_epoch(self, x_train: torch.Tensor, y_train: torch.Tensor) -> None:
        self.epochs_done += 1

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """`eval_samples` forecasts of each sequence of x from its start: [S, B, L, D]."""
        return self.forecast(x, self.eval_samples, with_kl=False)[0].transpose(1, 2)

    def noise_variance(self) -> float:
        """The Gaussian likelihood's variance: the forecast NLL's observation noise."""
        return self.likelihood_variance

    def diagnostics(self) -> dict[str, float]:
        """The PAC objective's KL and complexity term at the last step (e_pac_bayes only)."""
        return dict(self.last_step)


RMS_DECAY, RMS_EPSILON = 0.99, 1e-5  # pSGLD's alpha and lambda (Li et al. 2016, Algorithm 1)


def preconditioned_langevin_step(optimizer: Adam) -> None:
    """theta <- theta - (eps/2) P grad U + N(0, eps P), P = diag(1 / (lambda + sqrt(V))), V the running mean of grad U^2
    (pSGLD, Li et al. 2016), eps = the group's lr; V lives in the optimiser's state (`exp_avg_sq`), so it is
    checkpointed with it. The thesis gives plain SGLD with lr 1e-5 but not its gradient's scale: on CMU, whose
    likelihood variance is 1e-6, the plain step at 1e-5 diverged at the first step (measured), the preconditioned
    one is invariant to that scale."""
    with torch.no_grad():
        for group in optimizer.param_groups:
            step = group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = optimizer.state.setdefault(p, {"exp_avg_sq": p.grad.square()})
                state["exp_avg_sq"].mul_(RMS_DECAY).addcmul_(p.grad, p.grad, value=1 - RMS_DECAY)
                preconditioner = (RMS_EPSILON + state["exp_avg_sq"].sqrt()).reciprocal()
                p.add_(-0.5 * step * preconditioner * p.grad + (step * preconditioner).sqrt() * torch.randn_like(p))


def build(run_cfg: DictConfig, spec: DataSpec, splits: Splits | None = None) -> BNSDEMethod:
    """The BNSDE of `run_cfg.method` for the sequences of `run_cfg.dataset` (its `dynamics` block: the known system,
    the diffusion, the likelihood variance and, for a latent state, the encoder and decoder)."""
    cfg, dynamics = run_cfg.method, run_cfg.dataset.get("dynamics")
    if spec.task != "forecasting" or dynamics is None:
        raise ValueError(
            f"method bnsde forecasts sequences; dataset {run_cfg.dataset.name} has task {spec.task!r} and no "
            "`dynamics` block (use lotka_volterra, lorenz or cmu_mocap35)"
        )
    if cfg.objective not in OBJECTIVES:
        raise ValueError(f"unknown method.objective {cfg.objective!r}; use one of {', '.join(OBJECTIVES)}")
    check_delta(cfg.delta)
    if cfg.weight_sampling not in WEIGHT_SAMPLING:
        raise ValueError(
            f"unknown method.weight_sampling {cfg.weight_sampling!r}; use one of {', '.join(WEIGHT_SAMPLING)}"
        )
    if not dynamics.likelihood_variance > 0:
        raise ValueError(
            f"dataset.dynamics.likelihood_variance is {dynamics.likelihood_variance}; the Gaussian likelihood needs a "
            "positive variance"
        )
    latent = dynamics.get("latent")
    if latent is None:
        observation = ObservedState(spec.input_shape[-1] - 1)
    else:
        observation = EncodedState(spec.input_shape[-1], latent.size, latent.widths, latent.context, dynamics.dt)
    state_size = observation.state_size
    gamma = [float(cfg.knowledge.pretrained)] * state_size if cfg.knowledge.gamma is None else list(cfg.knowledge.gamma)
    if any(gamma) and dynamics.system is None and not cfg.knowledge.pretrained:
        raise ValueError(
            f"method.knowledge.gamma is {gamma}, but dataset {run_cfg.dataset.name} knows no system to weigh: set "
            "method.knowledge.pretrained=true (a drift learned first) or leave gamma null"
        )
    if cfg.knowledge.pretrained:
        knowledge = pretrained_knowledge(run_cfg, spec, splits, gamma, observation)
    else:
        knowledge = KnowledgeDrift(dynamics.system, gamma, state_size, dynamics.parameter_noise_std, run_cfg.seed)
    drift = None
    if cfg.objective != "none":
        drift = BayesianDrift(
            state_size, cfg.drift.widths, cfg.drift.activation, bayesian=cfg.objective != "sgld",
            time_input=cfg.drift.time_input,
        )  # fmt: skip
    diffusion = dynamics.diffusion if latent is None else [latent.diffusion] * state_size
    sde = HybridSDE(drift, knowledge, diffusion)
    return BNSDEMethod(sde, observation, cfg, dynamics.likelihood_variance, run_cfg.train.epochs)


def pretrained_knowledge(
    run_cfg: DictConfig, spec: DataSpec, splits: Splits | None, gamma: list[float], observation: EncodedState
) -> LearnedKnowledge:
    """Prior knowledge learned before the run (CMU hybrids, §6.4.3): a black-box E-PAC-Bayes BNSDE trained for
    `knowledge.pretrain_epochs` on the validation sequences, whose posterior-mean drift becomes r (frozen) and whose
    encoder and decoder start the run's. The thesis pretrains on MOCAP-1, 43 other subjects' walks, which we do not
    have: subject 35's three validation walks, which the run does not train on, stand in for them (closer to the
    target than MOCAP-1's "weak and broad" knowledge)."""
    if not isinstance(observation, EncodedState):
        raise ValueError("method.knowledge.pretrained needs a latent state (dataset cmu_mocap35)")
    if splits is None:
        raise ValueError("method.knowledge.pretrained trains on the run's validation sequences: pass the run's splits")
    sequences = torch.as_tensor(splits.x("val"))
    pre_cfg = run_cfg.copy()
    OmegaConf.update(pre_cfg, "method.objective", "e_pac_bayes")
    OmegaConf.update(pre_cfg, "method.knowledge", {"gamma": None, "pretrained": False, "pretrain_epochs": 0})
    teacher = build(pre_cfg, spec)
    optimizer = Adam(teacher.parameter_groups(run_cfg.optim.lr, 1.0))
    for _ in range(run_cfg.method.knowledge.pretrain_epochs):
        for batch in torch.randperm(len(sequences)).split(run_cfg.train.batch_size):
            teacher.training_step(sequences[batch], sequences[batch], len(sequences), optimizer)
        teacher.end_epoch(sequences, sequences)
    observation.load_state_dict(teacher.observation.state_dict())
    return LearnedKnowledge(teacher.sde.drift, gamma)

"""How a labelling round picks the points to label (thesis §4.3 and §4.6): the fixed heuristics Random, Maxent and
BALD, the ablation Maxent_thinned, and RAL's learned policy with its ablations RAL_nograd and Reinit RAL.

An acquisition's `choose` returns the positions of `count` distinct points among the unlabelled inputs it is shown;
after the predictor has been retrained on them, `feedback` gets the predictive likelihood of each new label before
and after (RAL's reward) and returns diagnostics. A predictor is a classification method with a `likelihood`
(bnnrepro.inference.classification_likelihoods) and `acquisition_probabilities(x, S)`; RAL also reads its
`output_moments(x)`.
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from bnnrepro.active_learning.policy import PolicyNetwork
from bnnrepro.active_learning.reinforce import RewardBaseline, discounted_returns, policy_loss
from bnnrepro.active_learning.state import state_moments, thinned
from bnnrepro.inference.classification_likelihoods import MultiLabelProbit, mutual_information, probit_predictive
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.optim import Adam


def predictive_entropy(predictor, x: torch.Tensor, num_samples: int) -> torch.Tensor:
    """H[p(y | x, D_l)] per input (Maxent, §4.3)."""
    return predictor.likelihood.entropy(predictor.acquisition_probabilities(x, num_samples)[0])


def entropy_ranking(entropy: torch.Tensor) -> torch.Tensor:
    """Positions sorted by decreasing entropy (ties in their order)."""
    return entropy.argsort(descending=True, stable=True)


class FixedAcquisition:
    """A heuristic that learns nothing from the labels it requests."""

    def __init__(self, num_samples: int):
        self.num_samples = num_samples

    def feedback(self, before: torch.Tensor, after: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Nothing to restore."""


class RandomAcquisition(FixedAcquisition):
    """Uniformly at random."""

    def choose(self, predictor, x: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        return torch.randperm(len(x), generator=generator)[:count]


class MaximumEntropy(FixedAcquisition):
    """Maxent: the `count` points of largest predictive entropy."""

    def choose(self, predictor, x: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        return entropy_ranking(predictive_entropy(predictor, x, self.num_samples))[:count]


class Bald(FixedAcquisition):
    """BALD: the `count` points of largest mutual information between label and weights, its second term from
    `num_samples` draws (§4.3)."""

    def choose(self, predictor, x: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        predictive, draws = predictor.acquisition_probabilities(x, self.num_samples)
        return entropy_ranking(mutual_information(predictor.likelihood, predictive, draws))[:count]


class ThinnedMaximumEntropy(FixedAcquisition):
    """Maxent_thinned (§4.6.1): every K-th point of the Maxent ranking until M, then `count` of them uniformly."""

    def __init__(self, num_samples: int, thinning: int, candidates: int):
        super().__init__(num_samples)
        self.thinning, self.candidates = thinning, candidates

    def choose(self, predictor, x: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        ranking = entropy_ranking(predictive_entropy(predictor, x, self.num_samples))
        pool = thinned(ranking, self.thinning, self.candidates)
        return pool[torch.randperm(len(pool), generator=generator)[:count]]


class ReinforcedAcquisition:
    """RAL (§4.2.2, Algorithm 1): each of an episode's `count` actions samples one of the M thinned candidates from
    the policy; the state is regenerated after each pick from the ranking without that point (the predictor is not
    retrained within an episode, so the moments are those of the episode's start). After retraining, the rewards
    R_improv (the change in the predictive likelihood of each new label) plus R_div (the share of distinct classes
    among the episode's labels, added to its last action as in the authors' code (`manuelhaussmann/ral`,
    `exp_mnist.py`); the thesis gives it per episode) give one REINFORCE step (`gradient_steps`; RAL_nograd keeps the
    initial policy). Reinit RAL (`reinitialise`) draws a fresh policy and optimiser before every episode after the
    first."""

    def __init__(self, num_classes: int, thinning: int, candidates: int, policy_cfg: DictConfig):
        self.thinning, self.candidates, self.num_classes = thinning, candidates, num_classes
        self.cfg = policy_cfg
        self.baseline = RewardBaseline()
        self.episodes = 0
        self.log_probabilities: torch.Tensor | None = None
        self._fresh_policy()

    def _fresh_policy(self) -> None:
        cfg = self.cfg
        self.policy = PolicyNetwork(self.num_classes * self.candidates, cfg.hidden_width, self.candidates,
                                    cfg.prior_precision)  # fmt: skip
        self.optimizer = Adam([{"params": list(self.policy.parameters()), "lr": cfg.lr}])

    def choose(self, predictor, x: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        if self.cfg.reinitialise and self.episodes > 0:
            self._fresh_policy()
        moments = Moments(*(m.cpu() for m in predictor.output_moments(x)))  # the policy and its feedback: on the CPU
        ranking = entropy_ranking(MultiLabelProbit.entropy(probit_predictive(*moments)))
        chosen, log_probabilities = [], []
        for _ in range(count):
            candidates = thinned(ranking, self.thinning, self.candidates)
            probabilities = self.policy(state_moments(moments, candidates))
            action = torch.multinomial(probabilities.detach(), 1, generator=generator)[0]
            log_probabilities.append(probabilities[action].log())
            chosen.append(candidates[action])
            ranking = ranking[ranking != candidates[action]]
        self.log_probabilities = torch.stack(log_probabilities)
        return torch.stack(chosen)

    def feedback(self, before: torch.Tensor, after: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
        rewards = (after - before).detach().clone()
        rewards[-1] += len(labels.unique()) / len(labels)
        loss = policy_loss(self.log_probabilities, discounted_returns(rewards, self.cfg.discount),
                           self.baseline.value, self.policy.kl())  # fmt: skip
        if self.cfg.gradient_steps:
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        diagnostics = {"episode_reward": float(rewards.sum()), "reward_baseline": self.baseline.value,
                       "policy_loss": loss.item()}  # fmt: skip
        self.baseline.observe(rewards)
        self.episodes += 1
        self.log_probabilities = None
        return diagnostics

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict(),
                "baseline": self.baseline.state_dict(), "episodes": self.episodes}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.baseline = RewardBaseline(**state["baseline"])
        self.episodes = state["episodes"]


ACQUISITIONS = ("random", "maxent", "bald", "maxent_thinned", "ral")
"""The method config's `acquisition` values."""

THINNED = ("maxent_thinned", "ral")
"""The acquisitions that thin the Maxent ranking (their pool must keep K * M unlabelled points)."""


def build_acquisition(cfg: DictConfig, num_classes: int):
    """The acquisition a method config (`acquisition`, `acquisition_samples`, `thinning`, `candidates`, `policy`)
    names."""
    if cfg.acquisition == "random":
        return RandomAcquisition(cfg.acquisition_samples)
    if cfg.acquisition == "maxent":
        return MaximumEntropy(cfg.acquisition_samples)
    if cfg.acquisition == "bald":
        return Bald(cfg.acquisition_samples)
    if cfg.acquisition == "maxent_thinned":
        return ThinnedMaximumEntropy(cfg.acquisition_samples, cfg.thinning, cfg.candidates)
    if cfg.acquisition == "ral":
        return ReinforcedAcquisition(num_classes, cfg.thinning, cfg.candidates, cfg.policy)
    raise ValueError(f"unknown method.acquisition {cfg.acquisition!r}; choose one of {', '.join(ACQUISITIONS)}")

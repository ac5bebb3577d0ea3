"""Reinforced active learning (thesis ch. 4): the probit likelihood and BALD against Monte Carlo, the thinned
state, the returns and the policy loss, the policy's choice and its ablations, and the labelling run (the same
initial labels for every acquisition of a seed, resuming after a kill, the plan's errors)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.active_learning.acquisitions import (
    Bald,
    MaximumEntropy,
    ReinforcedAcquisition,
    ThinnedMaximumEntropy,
    predictive_entropy,
)
from bnnrepro.active_learning.reinforce import RewardBaseline, discounted_returns, policy_loss
from bnnrepro.active_learning.state import state_moments, thinned
from bnnrepro.data.registry import generate_instance
from bnnrepro.data.spec import DataSpec
from bnnrepro.inference.classification_likelihoods import (
    MultiLabelProbit,
    Softmax,
    binary_entropy,
    mutual_information,
    probit_draws,
    probit_predictive,
)
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.methods import build_method, own_training_job
from bnnrepro.methods.active_learning import LabellingPlanError, check_plan, train_job
from bnnrepro.models.moment_layers import DropoutVarianceAffine, LayerShape
from bnnrepro.runs import RunFolder
from bnnrepro.train_configs import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SPIRALS = DataSpec("classification", 2, 2, (2,))
MLP = ["method.convolutions=[]", "method.hidden_widths=[16]"]
TINY_PLAN = ["method.initial_labels=10", "method.labels_per_round=5", "method.budget=30", "method.thinning=3",
             "method.candidates=6", "train.epochs=2", "train.batch_size=5", "optim.lr=0.01"]  # fmt: skip


# --- the likelihoods ---------------------------------------------------------------------------------------------


def test_the_probit_predictive_is_the_expected_probit_of_gaussian_outputs() -> None:
    """eq. (4.4): int Phi(f) N(f | g, h) df = Phi(g / sqrt(1 + h)), against 400,000 draws."""
    mean, var = torch.tensor([-2.0, -0.3, 0.0, 0.7, 3.0]), torch.tensor([0.01, 4.0, 1.0, 0.5, 9.0])
    draws = torch.special.ndtr(mean + var.sqrt() * torch.randn(400_000, 5, generator=torch.Generator().manual_seed(0)))
    standard_error = draws.std(0) / math.sqrt(len(draws))
    assert torch.all((draws.mean(0) - probit_predictive(mean, var)).abs() < 4 * standard_error + 1e-6)


def test_bald_is_non_negative_and_equals_a_monte_carlo_estimate() -> None:
    """The first term in closed form (eq. 4.4), the second by draws; against Gauss-Hermite quadrature of
    E_f[H(Ber(Phi(f)))] and against an estimate of both terms by draws; H(mean) - mean H >= 0 for the softmax."""
    generator = torch.Generator().manual_seed(1)
    mean, var = torch.randn(20, 4, generator=generator) * 2, torch.rand(20, 4, generator=generator) * 5
    nodes, weights = (torch.as_tensor(a) for a in numpy.polynomial.hermite.hermgauss(80))
    f = mean.double()[..., None] + (2 * var.double())[..., None].sqrt() * nodes
    expected_entropy = (binary_entropy(torch.special.ndtr(f)) * weights).sum(-1) / math.sqrt(math.pi)
    quadrature = (binary_entropy(probit_predictive(mean, var)).double() - expected_entropy).sum(-1)
    torch.manual_seed(2)
    ours = mutual_information(MultiLabelProbit, probit_predictive(mean, var), probit_draws(mean, var, 200_000))
    torch.manual_seed(3)
    draws = probit_draws(mean, var, 200_000)
    monte_carlo = MultiLabelProbit.entropy(draws.mean(0)) - MultiLabelProbit.entropy(draws).mean(0)
    assert torch.all(ours > 0)
    assert torch.allclose(ours.double(), quadrature, atol=5e-3) and torch.allclose(
        monte_carlo.double(), quadrature, atol=5e-3
    )
    logits = torch.randn(50, 20, 4, generator=generator) * 3
    draws = logits.softmax(-1)
    assert torch.all(mutual_information(Softmax, draws.mean(0), draws) >= -1e-6)
    assert torch.allclose(binary_entropy(torch.tensor([0.0, 0.5, 1.0])), torch.tensor([0.0, math.log(2), 0.0]))


def test_the_probit_log_likelihood_of_outputs_is_the_log_of_its_probabilities() -> None:
    outputs, labels = torch.randn(30, 5), torch.randint(0, 5, (30,))
    direct = MultiLabelProbit.log_likelihood(MultiLabelProbit.probabilities(outputs), labels)
    assert torch.allclose(MultiLabelProbit.log_likelihood_of_outputs(outputs, labels), direct, atol=1e-5)
    assert torch.allclose(MultiLabelProbit.class_probabilities(torch.rand(30, 5)).sum(-1), torch.ones(30))


def test_the_dropout_variances_are_those_of_gaussian_dropout_on_the_inputs() -> None:
    """CLT-BNN-Fix: f = sum_i mu_i x_i xi_i with xi ~ N(1, p / (1 - p)) has var[f] = p/(1-p) sum_i mu_i^2 x_i^2."""
    layer = DropoutVarianceAffine(LayerShape(6, 3), dropout=0.5)
    x = torch.randn(4, 6)
    noise = 1 + torch.randn(200_000, 1, 1, 6, generator=torch.Generator().manual_seed(4))  # p/(1-p) = 1
    outputs = ((x * noise)[..., None, :] * layer.weight_mean).sum(-1) + layer.bias_mean
    moments = layer.moments(x)
    assert ((outputs.mean(0) - moments.mean).abs() < 5 * (moments.var / len(noise)).sqrt()).all()  # 5 standard errors
    assert torch.allclose(outputs.var(0), moments.var, rtol=0.03)
    assert [name for name, _ in layer.named_parameters()] == ["weight_mean", "bias_mean"]


# --- the state and the policy update -----------------------------------------------------------------------------


def test_thinning_picks_exactly_ranks_0_K_2K_of_the_ranking() -> None:
    ranking = torch.randperm(1000, generator=torch.Generator().manual_seed(5))
    assert torch.equal(thinned(ranking, 20, 50), ranking[torch.arange(0, 1000, 20)])
    assert torch.equal(thinned(ranking, 1, 3), ranking[:3])
    with pytest.raises(ValueError, match="no 50 points 20 ranks apart"):
        thinned(ranking[:980], 20, 50)
    moments = Moments(torch.arange(12.0).reshape(4, 3), torch.arange(12.0).reshape(4, 3) + 100)
    state = state_moments(moments, torch.tensor([2, 0]))
    assert state.mean.tolist() == [[6, 7, 8, 0, 1, 2]] and state.var.tolist() == [[106, 107, 108, 100, 101, 102]]


def test_the_returns_with_gamma_are_the_hand_computed_ones() -> None:
    """G_t = R_t + gamma R_{t+1} + gamma^2 R_{t+2} + ..."""
    rewards = torch.tensor([1.0, 0.0, 2.0, -1.0])
    expected = [1 + 0.95**2 * 2 - 0.95**3, 2 * 0.95 - 0.95**2, 2 - 0.95, -1.0]
    assert torch.allclose(discounted_returns(rewards, 0.95), torch.tensor(expected))


def test_the_policy_loss_weights_each_log_probability_by_its_advantage_and_adds_the_kl_once() -> None:
    log_probabilities = torch.log(torch.tensor([0.2, 0.5], requires_grad=True))
    kl = torch.tensor(7.0, requires_grad=True)
    loss = policy_loss(log_probabilities, torch.tensor([3.0, 1.0]), 1.5, kl)
    assert loss.item() == pytest.approx(-(1.5 * math.log(0.2) - 0.5 * math.log(0.5)) + 7.0)
    (kl_gradient,) = torch.autograd.grad(loss, kl)
    assert kl_gradient.item() == 1.0  # not G_t (Algorithm 1 as printed)
    baseline = RewardBaseline()
    baseline.observe(torch.tensor([1.0, 2.0]))
    baseline.observe(torch.tensor([6.0]))
    assert baseline.value == 3.0


def clt_predictor(seed: int = 0):
    torch.manual_seed(seed)
    cfg = compose_config(["method=active_learning", "dataset=spirals", "run_dir=unused", *MLP])
    return build_method(OmegaConf.merge(cfg, {"method": {"name": "dvi"}}), SPIRALS).eval(), cfg


def reinforced(cfg, **policy) -> ReinforcedAcquisition:
    return ReinforcedAcquisition(2, 3, 6, OmegaConf.merge(cfg.method.policy, policy))


def test_ral_picks_the_candidate_its_policy_puts_all_mass_on() -> None:
    predictor, cfg = clt_predictor()
    x = torch.randn(40, 2)
    acquisition = reinforced(cfg)
    last = acquisition.policy.network.layers[-1]
    with torch.no_grad():  # outputs mu_m = -50 except mu_4 = +50: Phi(mu / sqrt(1 + sigma^2)) is one-hot
        last.weight_mean.zero_()
        last.bias_mean.fill_(-50.0)
        last.bias_mean[4] = 50.0
    ranking = predictive_entropy(predictor, x, 1).argsort(descending=True, stable=True)
    chosen = acquisition.choose(predictor, x, 1, torch.Generator().manual_seed(0))
    assert chosen.tolist() == [ranking[4 * 3].item()]
    # the next action of an episode thins the ranking without the chosen point
    chosen = reinforced(cfg).choose(predictor, x, 5, torch.Generator().manual_seed(0))
    assert len(set(chosen.tolist())) == 5


@pytest.mark.parametrize("update", [True, False])
def test_ral_nograd_leaves_the_policy_unchanged_and_ral_steps_it(update: bool) -> None:
    predictor, cfg = clt_predictor()
    acquisition = reinforced(cfg, gradient_steps=update)
    before = {name: value.clone() for name, value in acquisition.policy.state_dict().items()}
    acquisition.choose(predictor, torch.randn(40, 2), 3, torch.Generator().manual_seed(0))
    acquisition.feedback(torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.5, 0.1, 0.9]), torch.tensor([0, 1, 1]))
    after = acquisition.policy.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before) != update
    assert acquisition.baseline.value == pytest.approx((0.4 - 0.1 + 0.6 + 2 / 3) / 3)


def test_reinit_ral_draws_a_fresh_policy_before_every_episode_after_the_first() -> None:
    predictor, cfg = clt_predictor()
    acquisition = reinforced(cfg, reinitialise=True)
    first = acquisition.policy
    x = torch.randn(40, 2)
    acquisition.choose(predictor, x, 2, torch.Generator().manual_seed(0))
    assert acquisition.policy is first
    acquisition.feedback(torch.zeros(2), torch.ones(2), torch.tensor([0, 1]))
    acquisition.choose(predictor, x, 2, torch.Generator().manual_seed(0))
    assert acquisition.policy is not first


def test_maxent_bald_and_the_thinned_maxent_pick_by_their_scores() -> None:
    predictor, _ = clt_predictor()
    x, generator = torch.randn(60, 2) * 3, torch.Generator().manual_seed(0)
    entropy = predictive_entropy(predictor, x, 1)
    assert set(MaximumEntropy(1).choose(predictor, x, 5, generator).tolist()) == set(entropy.topk(5).indices.tolist())
    ranking = entropy.argsort(descending=True, stable=True)
    picked = ThinnedMaximumEntropy(1, 4, 10).choose(predictor, x, 5, generator)
    assert set(picked.tolist()) <= set(ranking[0:40:4].tolist()) and len(set(picked.tolist())) == 5
    torch.manual_seed(0)
    predictive, draws = predictor.acquisition_probabilities(x, 10)
    torch.manual_seed(0)
    information = mutual_information(MultiLabelProbit, predictive, draws)
    assert set(Bald(10).choose(predictor, x, 5, generator).tolist()) == set(information.topk(5).indices.tolist())


# --- the labelling run -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spirals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spirals") / "seed=0.npz"
    generate_instance("spirals", "seed=0", path)  # the dataset config's omega
    return path


def labelling_config(spirals: Path, run_dir: Path, *overrides: str):
    return compose_config(["method=active_learning", "dataset=spirals", f"dataset.path='{spirals}'",
                           f"run_dir='{run_dir}'", "scale=smoke", *MLP, *TINY_PLAN, *overrides])  # fmt: skip


def test_a_labelling_run_is_the_training_job_of_method_active_learning() -> None:
    assert own_training_job("active_learning") is train_job
    assert own_training_job("dvi") is None


def test_every_acquisition_of_a_seed_starts_from_the_same_labels(spirals: Path, tmp_path: Path) -> None:
    labelled = {}
    for acquisition in ("random", "maxent", "ral"):
        cfg = labelling_config(spirals, tmp_path / acquisition, f"method.acquisition={acquisition}", "seed=3")
        result = train_job(cfg, RunFolder(tmp_path / acquisition))
        labelled[acquisition] = result["labelled"]
        assert [record["labels"] for record in result["history"]] == [10, 15, 20, 25, 30]
        assert result["metrics"]["final_error"] == result["history"][-1]["test_error"]
        assert len(set(labelled[acquisition])) == 30
    assert labelled["random"][:10] == labelled["maxent"][:10] == labelled["ral"][:10]
    assert labelled["random"][10:] != labelled["maxent"][10:]
    other_seed = train_job(labelling_config(spirals, tmp_path / "seed4", "seed=4"), RunFolder(tmp_path / "seed4"))
    assert other_seed["labelled"][:10] != labelled["ral"][:10]


def without_seconds(history: list[dict]) -> list[dict]:
    return [{key: value for key, value in record.items() if not key.endswith("_seconds")} for record in history]


def test_a_run_killed_after_round_k_resumes_there_and_ends_with_the_uninterrupted_history(
    spirals: Path, tmp_path: Path
) -> None:
    whole = train_job(labelling_config(spirals, tmp_path / "whole"), RunFolder(tmp_path / "whole"))
    cfg = labelling_config(spirals, tmp_path / "killed")
    train_job(cfg, RunFolder(tmp_path / "killed"), stop_after_round=2)
    assert not (tmp_path / "killed" / RunFolder.METRICS).exists()
    assert (tmp_path / "killed" / RunFolder.RESUME).exists()
    resumed = train_job(cfg, RunFolder(tmp_path / "killed"))
    assert without_seconds(resumed["history"]) == without_seconds(whole["history"])
    assert resumed["labelled"] == whole["labelled"]
    assert not (tmp_path / "killed" / RunFolder.RESUME).exists()
    saved = json.loads((tmp_path / "killed" / RunFolder.METRICS).read_text())
    assert saved["metrics"] == resumed["metrics"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["method.budget=32"],
            r"budget of 32 labels is not reached from 10 initial labels in whole rounds of 5.*e\.g\. 30",
        ),
        (["method.budget=2000"], r"exceeds the pool of 1024 training points"),
        (["method.thinning=100", "method.candidates=10"], r"K x M = 1000 points.*keeps only 994 unlabelled"),
        (["method.acquisition=maxent_entropy"], r"unknown method.acquisition 'maxent_entropy'; choose one of random"),
        (["train.epochs=0"], r"train.epochs \(0\) and train.batch_size \(5\) must be at least 1"),
    ],
)
def test_a_plan_that_cannot_run_names_its_numbers_and_the_fix(
    spirals: Path, tmp_path: Path, overrides: list[str], message: str
) -> None:
    with pytest.raises(LabellingPlanError, match=message):
        check_plan(labelling_config(spirals, tmp_path, *overrides), 1024)


def test_ral_needs_the_probit_clt_predictor(spirals: Path, tmp_path: Path) -> None:
    cfg = labelling_config(spirals, tmp_path, "method=active_learning_dropout", "method.acquisition=ral")
    with pytest.raises(LabellingPlanError, match="probit CLT-BNN"):
        train_job(cfg, RunFolder(tmp_path))

"""A labelling run (thesis ch. 4, Algorithm 1): the training job of method `active_learning`, which owns its loop
(`train_job`) instead of bnnrepro.train's epochs over a fixed training set.

The training split is the unlabelled pool, the test split the evaluation (no validation set: §4.3.1 merges it into
the pool). From `initial_labels` points drawn from the pool with the run's seed (the same for every acquisition of
a seed, §4.3.1) the predictor trains `train.epochs` epochs of minibatches of `train.batch_size`; then each round
- the acquisition (bnnrepro.active_learning.acquisitions) chooses `labels_per_round` unlabelled points (score),
- the oracle labels them and the predictor, warm-started, trains `train.epochs` epochs on all labels at a learning
  rate decayed linearly from optim.lr over the planned rounds ("linearly reduced after each labeling episode", §4.7;
  the authors' code, manuelhaussmann/ral `exp_mnist.py`, decays it towards 0: round r trains at lr (1 - (r - 1) /
  rounds)) (train),
- the acquisition gets the predictive likelihood of each new label before and after (RAL's policy step) (policy),
- the test error is recorded,
until `budget` labels. The whole state (labels, predictor, policies, optimisers, random generators, baseline,
history) is checkpointed after every round by the training job's own save and restore (`RunFolder.save_progress`,
`restore_progress`): a killed job resumes at its last finished round and ends with the same history. metrics.json
holds the history (test error per round, the seconds of each part) and the Average Error (the mean test error over
every recorded round, 50 to 400 labels: §4.3's "average over the whole labeling process") and Final Error.
"""

from __future__ import annotations

import logging
import time

import torch
from omegaconf import DictConfig, OmegaConf

from bnnrepro.active_learning.acquisitions import ACQUISITIONS, THINNED, ReinforcedAcquisition, build_acquisition
from bnnrepro.data.registry import is_standin, load_splits
from bnnrepro.errors import DivergedError
from bnnrepro.inference.classification_likelihoods import MultiLabelProbit
from bnnrepro.methods import gaussian_weight_vi, mc_dropout
from bnnrepro.metrics import classification_metrics
from bnnrepro.optim import Adam, Optimizer
from bnnrepro.run_identity import identity_record
from bnnrepro.runs import RunFolder, ran_on, restore_progress, start_job

METHODS = ("active_learning",)
"""The Hydra method name (config/train/method/active_learning*.yaml `name`) of a labelling run."""
TASKS = ("classification",)
"""The data tasks (config/train/dataset/*.yaml `task`) its methods take; the workflow checks a study's pairs against
them before any job runs (bnnrepro.pipeline.method_tasks)."""
NOT_TAKEN = {"regression": "a labelling run's acquisitions score class predictives (thesis ch. 4, Algorithm 1)"}
"""Why its methods do not take a task, for the error a study that pairs them gets."""
NOT_ON_TABLES = (
    "a labelling run's 50 initial labels and 400-label budget are the thesis' MNIST protocol (§4.3.1), for a pool of "
    "thousands of images, not a table of a few hundred rows"
)
"""Why it does not train on a table (bnnrepro.pipeline.method_tasks), for the error a study that pairs them gets."""

PREDICTORS = {"dvi": gaussian_weight_vi, "mc_dropout": mc_dropout}
"""method.predictor -> the module that builds it from the same method config: the CLT-BNN (DVI's moment network
with the probit likelihood) or a dropout network."""

log = logging.getLogger("bnnrepro.active_learning")


class LabellingPlanError(ValueError):
    """A labelling plan that cannot run on its pool."""


def check_plan(cfg: DictConfig, pool_size: int) -> int:
    """The number of rounds of the plan in `cfg.method`; LabellingPlanError naming the numbers and the fix when the
    budget is not reached in whole rounds, the pool cannot hold it, or thinning runs out of points."""
    method = cfg.method
    if method.acquisition not in ACQUISITIONS:
        raise LabellingPlanError(
            f"unknown method.acquisition {method.acquisition!r}; choose one of {', '.join(ACQUISITIONS)}"
        )
    if method.predictor not in PREDICTORS:
        raise LabellingPlanError(
            f"unknown method.predictor {method.predictor!r}; choose one of {', '.join(PREDICTORS)}"
        )
    if cfg.train.epochs < 1 or cfg.train.batch_size < 1:
        raise LabellingPlanError(
            f"train.epochs ({cfg.train.epochs}) and train.batch_size ({cfg.train.batch_size}) must be at least 1: "
            "the predictor trains that many epochs of such minibatches after every round"
        )
    initial, per_round, budget = method.initial_labels, method.labels_per_round, method.budget
    if initial < 1 or per_round < 1 or budget <= initial or (budget - initial) % per_round:
        reachable = initial + per_round * max(1, (budget - initial) // per_round)
        raise LabellingPlanError(
            f"a budget of {budget} labels is not reached from {initial} initial labels in whole rounds of {per_round}: "
            f"set method.budget to {initial} plus a positive multiple of {per_round} (e.g. {reachable})"
        )
    if budget > pool_size:
        raise LabellingPlanError(
            f"a budget of {budget} labels exceeds the pool of {pool_size} training points: lower method.budget or "
            "raise dataset.max_examples.train"
        )
    needed = method.thinning * method.candidates
    if method.acquisition in THINNED and pool_size - budget < needed:
        raise LabellingPlanError(
            f"acquisition {method.acquisition!r} thins the ranking of the unlabelled points to every "
            f"{method.thinning}-th until {method.candidates} (K x M = {needed} points), but the pool of {pool_size} "
            f"keeps only {pool_size - budget} unlabelled at the budget of {budget}: lower method.thinning or "
            "method.candidates, or use a larger pool (dataset.max_examples.train)"
        )
    return (budget - initial) // per_round


def build_predictor(cfg: DictConfig, spec):
    """The predictor method.predictor names, built from the run's method config."""
    predictor_cfg = OmegaConf.merge(cfg, {"method": {"name": cfg.method.predictor}})
    predictor = PREDICTORS[cfg.method.predictor].build(predictor_cfg, spec)
    if cfg.method.acquisition == "ral" and not (
        hasattr(predictor, "output_moments") and predictor.likelihood is MultiLabelProbit
    ):
        raise LabellingPlanError(
            "acquisition 'ral' builds its state from the output moments of a probit CLT-BNN: use method "
            "active_learning (method.predictor dvi, method.likelihood probit)"
        )
    return predictor


def initial_labels(pool_size: int, count: int, seed: int) -> torch.Tensor:
    """The first labelled points: `count` pool positions drawn with `seed` alone, so every acquisition of a seed
    starts from the same set (§4.3.1)."""
    return torch.randperm(pool_size, generator=torch.Generator().manual_seed(seed))[:count]


def train_predictor(predictor, optimizer: Optimizer, x: torch.Tensor, y: torch.Tensor, epochs: int, batch_size: int,
                    shuffle: torch.Generator) -> float:  # fmt: skip
    """`epochs` epochs of minibatch steps on the labelled points; the last epoch's mean loss."""
    predictor.train()
    for _ in range(epochs):
        loss_sum = 0.0
        for batch in torch.randperm(len(x), generator=shuffle).split(batch_size):
            batch = batch.to(x.device)
            loss_sum += predictor.training_step(x[batch], y[batch], len(x), optimizer) * len(batch)
    predictor.eval()
    return loss_sum / len(x)


def label_likelihood(predictor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """p(y | x, D_l) of each label under the predictive (R_improv's terms, §4.2.2; eq. 4.4 for the CLT-BNN)."""
    predictive = predictor.acquisition_probabilities(x, predictor.eval_samples)[0]
    return predictor.likelihood.log_likelihood(predictive, y).exp()


def test_metrics(predictor, x: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    values = classification_metrics(predictor.predict(x), y)
    return {"test_error": 100.0 * (1.0 - values["accuracy"]), "test_nll": values["nll"], "test_ece": values["ece"]}


def summary(history: list[dict]) -> dict[str, float]:
    """Average Error (the mean over every recorded round) and Final Error, in %, and the last round's test NLL."""
    errors = [record["test_error"] for record in history]
    return {"average_error": sum(errors) / len(errors), "final_error": errors[-1], "final_nll": history[-1]["test_nll"],
            "labels": history[-1]["labels"]}  # fmt: skip


def train_job(cfg: DictConfig, run: RunFolder, stop_after_round: int | None = None) -> dict:
    """The labelling run of `cfg`; returns its result (also written to metrics.json). `stop_after_round` ends the
    job after that round's checkpoint, as a kill would (tests)."""
    digest, device = start_job(cfg, run)

    splits = load_splits(cfg.dataset)
    x_pool, y_pool = (torch.as_tensor(a, device=device) for a in (splits.x("train"), splits.y("train")))
    x_test, y_test = (torch.as_tensor(a, device=device) for a in (splits.x("test"), splits.y("test")))
    rounds = check_plan(cfg, len(x_pool))
    spec = splits.spec(cfg.dataset.task)
    predictor = build_predictor(cfg, spec).to(device)
    optimizer = Adam(predictor.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    acquisition = build_acquisition(cfg.method, spec.num_classes)
    shuffle, selection = torch.Generator().manual_seed(cfg.seed), torch.Generator().manual_seed(cfg.seed + 1)
    generators = {"shuffle": shuffle, "selection": selection}
    epochs, batch_size, per_round = cfg.train.epochs, cfg.train.batch_size, cfg.method.labels_per_round

    state = run.load_resume(digest)
    if state is None:
        labelled = initial_labels(len(x_pool), cfg.method.initial_labels, cfg.seed).to(device)
        started = time.perf_counter()
        train_predictor(predictor, optimizer, x_pool[labelled], y_pool[labelled], epochs, batch_size, shuffle)
        seconds = time.perf_counter() - started
        history = [{"round": 0, "labels": len(labelled), **test_metrics(predictor, x_test, y_test),
                    "train_seconds": seconds, "score_seconds": 0.0, "policy_seconds": 0.0}]  # fmt: skip
        first_round = 1
    else:
        progress = restore_progress(state, predictor, optimizer, generators)
        labelled = progress["labelled"].to(device)
        acquisition.load_state_dict(progress["acquisition"])
        history, seconds = progress["history"], progress["seconds"]
        first_round = history[-1]["round"] + 1
        log.info("resumed %s after round %d", run.path, first_round - 1)

    for round_index in range(first_round, rounds + 1):
        for group in optimizer.param_groups:
            group["lr"] = cfg.optim.lr * (1 - (round_index - 1) / rounds)
        started = time.perf_counter()
        unlabelled = torch.ones(len(x_pool), dtype=torch.bool, device=device)
        unlabelled[labelled] = False
        candidates = unlabelled.nonzero().squeeze(1)
        chosen = candidates[acquisition.choose(predictor, x_pool[candidates], per_round, selection).to(device)]
        scored = time.perf_counter()
        before = label_likelihood(predictor, x_pool[chosen], y_pool[chosen])
        labelled = torch.cat([labelled, chosen])
        try:
            loss = train_predictor(predictor, optimizer, x_pool[labelled], y_pool[labelled], epochs, batch_size,
                                   shuffle)  # fmt: skip
        except DivergedError as err:
            raise DivergedError(f"run {run.path} diverged in round {round_index}: {err}. Lower optim.lr") from None
        trained = time.perf_counter()
        after = label_likelihood(predictor, x_pool[chosen], y_pool[chosen])
        feedback = acquisition.feedback(before.cpu(), after.cpu(), y_pool[chosen].cpu())
        finished = time.perf_counter()
        seconds += finished - started
        history.append({
            "round": round_index, "labels": len(labelled), **test_metrics(predictor, x_test, y_test),
            "train_loss": loss, "improvement": float((after - before).mean()),
            "distinct_labels": len(y_pool[chosen].unique()), "train_seconds": trained - scored,
            "score_seconds": scored - started, "policy_seconds": finished - trained, **feedback,
        })  # fmt: skip
        log.info("round %d/%d  labels=%d  test_error=%.2f", round_index, rounds, len(labelled),
                 history[-1]["test_error"])  # fmt: skip
        if round_index < rounds:
            run.save_progress(
                digest, predictor, optimizer, generators,
                labelled=labelled.cpu(), acquisition=acquisition.state_dict(), history=history, seconds=seconds,
            )  # fmt: skip
        if round_index == stop_after_round:
            return {}

    result = {
        "metrics": summary(history), "history": history, "train_seconds": seconds, "epochs": epochs,
        "standin": is_standin(cfg.dataset.path), "labelled": labelled.tolist(),
        "ran_on": ran_on(device, cfg.cpu_arithmetic),
    }  # fmt: skip
    result["identity"] = identity_record(cfg, digest, result)
    checkpoint = {"config_digest": digest, "model": predictor.state_dict(), "labelled": labelled.cpu()}
    if isinstance(acquisition, ReinforcedAcquisition):
        checkpoint["policy"] = acquisition.policy.state_dict()
    run.finish(result, checkpoint)
    return result

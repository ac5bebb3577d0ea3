"""Seconds per labelling round of thesis ch. 4's active learning (study `thesis_ral`), split into train (the
predictor's retraining), score (the acquisition: one batched moment pass over the unlabelled pool, thinning, the
policy's choices) and policy (the new labels' likelihoods and the REINFORCE step); and what a `paper` run costs.

1. `default`: the study's default runs on the MNIST stand-in (seed 0) of the acquisitions named by --acquisitions,
   each trained whole in a temporary folder (`bnnrepro.methods.active_learning.train_job`); the per-round means of
   its recorded split.
2. `paper` estimate: the medians of one training step of the CLT-BNN (Table 4.3's LeNet5, batch 10), of scoring
   1000 pool images, of a policy step, and of one test evaluation per 1000 images, on random inputs, multiplied by
   the counts of the study's paper plan (50 -> 400 labels in 70 rounds of 30 epochs, read from its composed config;
   a 60,000-image pool scored every round by Maxent, BALD and RAL; 10,000 test images after every training).

Usage: python benchmarks/labelling_round.py [--acquisitions random,maxent,bald,ral] [--repeats N] [--threads T]
Needs results/data/mnist-standin.npz (`snakemake --cores 1 results/data/mnist-standin.npz`).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from bnnrepro.active_learning.acquisitions import ReinforcedAcquisition, predictive_entropy
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods.active_learning import build_predictor, train_job
from bnnrepro.optim import Adam
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import load_study
from bnnrepro.runs import RunFolder
from bnnrepro.train_configs import compose_config

STUDY = "thesis_ral"
PAPER_POOL, PAPER_TEST = 60_000, 10_000  # MNIST's training and test images (the real set is not available offline)
SCORING_ACQUISITIONS = ("maxent", "bald", "ral")  # score the whole pool every round


def study_config(acquisition: str, scale: str, run_dir: Path):
    """The composed config of the study's `acquisition` run on MNIST, seed 0, at `scale`."""
    study = load_study(STUDY)
    run = next(r for r in study.runs(scale) if r.method == acquisition and r.dataset == "mnist" and r.seed == 0)
    return compose_config([*study.overrides(run), f"scale={scale}", f"run_dir='{run_dir}'"])


def default_rounds(acquisition: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        result = train_job(study_config(acquisition, "default", Path(folder)), RunFolder(Path(folder)))
        wall = time.perf_counter() - started
    rounds = result["history"][1:]
    split = {part: statistics.mean(r[f"{part}_seconds"] for r in rounds) for part in ("train", "score", "policy")}
    return {**split, "round": sum(split.values()), "rounds": len(rounds), "run": wall}


def median_seconds(function, repeats: int) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def paper_parts(repeats: int) -> dict[str, float]:
    """Median seconds of one step, of scoring 1000 images, of a policy episode+step, of testing 1000 images."""
    cfg = paper_config()
    torch.manual_seed(0)
    predictor = build_predictor(cfg, DataSpec("classification", 28, 10, (28, 28)))
    optimizer = Adam(predictor.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    x, y = torch.rand(cfg.train.batch_size, 28, 28), torch.randint(0, 10, (cfg.train.batch_size,))
    pool = torch.rand(1000, 28, 28)
    acquisition = ReinforcedAcquisition(10, cfg.method.thinning, cfg.method.candidates, cfg.method.policy)
    big_pool = torch.rand(cfg.method.thinning * cfg.method.candidates + 200, 28, 28)

    def episode() -> None:
        acquisition.choose(predictor, big_pool, cfg.method.labels_per_round, torch.Generator().manual_seed(0))
        labels = torch.randint(0, 10, (cfg.method.labels_per_round,))
        acquisition.feedback(torch.rand(len(labels)), torch.rand(len(labels)), labels)

    return {
        "step": median_seconds(lambda: predictor.training_step(x, y, 200, optimizer), repeats),
        "score_1000": median_seconds(lambda: predictive_entropy(predictor, pool, cfg.method.acquisition_samples), 3),
        "episode": median_seconds(episode, 3),
        "test_1000": median_seconds(lambda: predictor.predict(pool), 3),
    }


def paper_config():
    """The composed config of the study's paper-scale RAL run on MNIST: the plan the estimate counts."""
    return study_config("ral", "paper", Path("unused"))


def paper_estimate(parts: dict[str, float], acquisition: str, cfg) -> float:
    """Seconds of one labelling run of the plan in `cfg` from the measured parts: the initial training and each
    round's retraining (train.epochs epochs of train.batch_size), a scoring of the unlabelled pool per round, a test
    after each training."""
    plan = cfg.method
    rounds = (plan.budget - plan.initial_labels) // plan.labels_per_round
    labels = [plan.initial_labels + plan.labels_per_round * r for r in range(rounds + 1)]
    steps = sum(cfg.train.epochs * math.ceil(n / cfg.train.batch_size) for n in labels)
    scoring = rounds * PAPER_POOL / 1000 * parts["score_1000"] if acquisition in SCORING_ACQUISITIONS else 0.0
    policy = rounds * parts["episode"] if acquisition == "ral" else 0.0
    return steps * parts["step"] + scoring + policy + len(labels) * PAPER_TEST / 1000 * parts["test_1000"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acquisitions", default="random,maxent,bald,ral")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not (project_root() / "results/data/mnist-standin.npz").is_file():
        raise SystemExit("needs results/data/mnist-standin.npz: snakemake --cores 1 results/data/mnist-standin.npz")
    print(f"{platform.node()}, {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)")  # fmt: skip
    acquisitions = args.acquisitions.split(",")
    print("\ndefault scale, MNIST stand-in, seed 0: mean seconds per round (train / score / policy) and per run")
    for acquisition in acquisitions:
        split = default_rounds(acquisition)
        parts = f"{split['train']:.3f} train + {split['score']:.3f} score + {split['policy']:.3f} policy"
        print(f"  {acquisition:<8} {split['round']:.3f} s/round = {parts}; {split['rounds']} rounds, "
              f"{split['run']:.1f} s per run")  # fmt: skip
    parts, cfg = paper_parts(args.repeats), paper_config()
    rounds = (cfg.method.budget - cfg.method.initial_labels) // cfg.method.labels_per_round
    print("\npaper scale, Table 4.3's CLT-BNN on random 28x28 inputs (medians):")
    print(f"  training step (batch {cfg.train.batch_size}): {parts['step'] * 1e3:.1f} ms; scoring 1000 pool images: "
          f"{parts['score_1000']:.3f} s; testing 1000 images: {parts['test_1000']:.3f} s; RAL episode + policy step: "
          f"{parts['episode']:.3f} s")  # fmt: skip
    for acquisition in acquisitions:
        seconds = paper_estimate(parts, acquisition, cfg)
        print(f"  {acquisition:<8} one paper run ({rounds} rounds x {cfg.train.epochs} epochs, {PAPER_POOL} pool): "
              f"{seconds / 3600:.1f} CPU hours at this thread count")  # fmt: skip


if __name__ == "__main__":
    main()

"""One training job: `python -m bnnrepro.train method=udn dataset=spirals run_dir=... [overrides]`.

Hydra composes config/train with the overrides; the job writes into `run_dir` its resolved config, a log, the
metrics JSON (the evaluation selected by `train.select_by` and `train.select_mode`, which are checked before the
first epoch, and the last one, the evaluation history, and per epoch the cumulative training seconds and the peak
memory) and the final checkpoint. Every `train.checkpoint_every` epochs it saves a resumable state, so a killed
job rerun with the same configuration continues where it stopped and ends with the same metrics. Heavy libraries
(pandas, plotting) stay out of this path.
"""

from __future__ import annotations

import gc
import logging
import os
import platform
import sys
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, OmegaConf

from bnnrepro.data.registry import is_standin, load_splits
from bnnrepro.device import peak_memory_mib, resolve_device
from bnnrepro.errors import DivergedError
from bnnrepro.methods import build_method
from bnnrepro.metrics import (
    accuracy,
    expected_calibration_error,
    gaussian_predictive_nll,
    negative_log_likelihood,
    root_mean_squared_error,
)
from bnnrepro.optim import Adam
from bnnrepro.overrides import quote_path_values, quoting_hint
from bnnrepro.paths import train_config_dir
from bnnrepro.runs import RunFolder, config_digest

log = logging.getLogger("bnnrepro.train")

SPLIT_METRICS = {
    "classification": ("accuracy", "nll", "ece"),
    "regression": ("rmse", "nll", "rmse_original", "nll_original"),
}
"""{task: the metrics `evaluate` records on each split of its data, as {split}_{metric}}; a sampling task has none."""

SELECT_MODES = ("max", "min")
"""train.select_mode: whether the selected evaluation maximises or minimises train.select_by."""


def compose_config(overrides: list[str]) -> DictConfig:
    """The run's config: config/train composed with `overrides`, path values quoted for Hydra (bnnrepro.overrides)."""
    with initialize_config_dir(config_dir=str(train_config_dir()), version_base="1.3", job_name="train"):
        try:
            return compose(config_name="config", overrides=quote_path_values(overrides))
        except OverrideParseException as err:
            raise OverrideParseException(err.override, quoting_hint(err, overrides)) from None


def has_targets(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether a split is evaluated: it has inputs and targets (a toy's empty validation split has neither, a
    sampling target's test inputs are exact samples with no targets)."""
    return len(x) > 0 and y.numel() > 0


def classification_metrics(probs: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Accuracy, NLL and ECE of predictive probabilities [N, C]."""
    values = (accuracy(probs, y), negative_log_likelihood(probs, y), expected_calibration_error(probs, y))
    return dict(zip(SPLIT_METRICS["classification"], values, strict=True))


def regression_metrics(
    samples: torch.Tensor, y: torch.Tensor, noise_variance: float, target_standardisation: tuple[float, float]
) -> dict[str, float]:
    """RMSE of the sample-mean prediction and the Gaussian predictive NLL per datum (`gaussian_predictive_nll`) of
    mean-function samples [S, N, D] with observation noise of `noise_variance`, in the data's units and, undoing
    the standardisation (mean, std) of the targets, in their original units (there RMSE * std and NLL + D log std)."""
    mean, std = target_standardisation
    original_samples, original_y = samples * std + mean, y * std + mean
    values = (
        root_mean_squared_error(samples, y),
        gaussian_predictive_nll(samples, y, noise_variance),
        root_mean_squared_error(original_samples, original_y),
        gaussian_predictive_nll(original_samples, original_y, noise_variance * std**2),
    )
    return dict(zip(SPLIT_METRICS["regression"], values, strict=True))


@torch.no_grad()
def evaluate(
    method: torch.nn.Module,
    data: dict[str, tuple[torch.Tensor, ...]],
    task: str,
    splits: tuple[str, ...] = ("val", "test"),
    target_standardisation: tuple[float, float] = (0.0, 1.0),
) -> dict[str, float]:
    """`SPLIT_METRICS` on `splits` (a split without inputs or targets has none: `has_targets`); the last evaluation
    of a run adds the training split (SDE-BNN Table 4 reports training-set accuracy and NLL).

    Classification: accuracy, NLL and ECE of `method.predict(x)` (predictive probabilities [N, C]).
    Regression: RMSE of the predictive mean (the mean over `method.predict(x)`'s samples [S, N, D]) and the Gaussian
    predictive NLL with `method.noise_variance()`, in the data's units and in the original units of targets
    standardised with `target_standardisation` (mean, std) (Splits.target_standardisation)."""
    method.eval()
    values = {}
    for split in splits:
        x, y = data[split]
        if not has_targets(x, y):
            continue
        if task == "classification":
            split_values = classification_metrics(method.predict(x), y)
        else:
            split_values = regression_metrics(method.predict(x), y, method.noise_variance(), target_standardisation)
        values.update({f"{split}_{name}": value for name, value in split_values.items()})
    return values


def selection_fix(cfg: DictConfig) -> str:
    """Where a run's train.select_by is set: its protocol file."""
    return (
        f"set train.select_by in config/train/protocol/{cfg.dataset.name}_{cfg.scale.name}.yaml "
        "(or override it: train.select_by=...)"
    )


def selectable_metrics(task: str) -> tuple[str, ...]:
    """The metrics of every evaluation of a `task` run that train.select_by may name besides epoch and the
    method's diagnostics: those of the validation and test splits."""
    return tuple(f"{split}_{name}" for split in ("val", "test") for name in SPLIT_METRICS.get(task, ()))


def check_selection(cfg: DictConfig, data: dict[str, tuple[torch.Tensor, ...]]) -> None:
    """Before the first epoch: ValueError unless train.select_mode is one of SELECT_MODES and train.select_by is
    epoch, one of `selectable_metrics` on a split of `data` with targets, or a name that does not begin with val_
    or test_ (a method diagnostic, known only at the first evaluation: `check_selected_diagnostic`)."""
    select_by, select_mode, task = cfg.train.select_by, cfg.train.select_mode, cfg.dataset.task
    if select_mode not in SELECT_MODES:
        raise ValueError(
            f"train.select_mode={select_mode!r} is not one of {', '.join(SELECT_MODES)}: set train.select_mode to max "
            "(the selected evaluation maximises train.select_by) or min (it minimises it, as for val_rmse or val_nll)"
        )
    if not select_by.startswith(("val_", "test_")):
        return
    if select_by not in selectable_metrics(task):
        valid = ", ".join(("epoch", *selectable_metrics(task)))
        raise ValueError(
            f"train.select_by={select_by!r} is not recorded by the evaluations of a {task} run; valid: {valid}, or a "
            f"diagnostic of method {cfg.method.name!r}: {selection_fix(cfg)}"
        )
    split = select_by.split("_", 1)[0]
    if not has_targets(*data[split]):
        raise ValueError(
            f"train.select_by={select_by!r}, but the {split} split of dataset {cfg.dataset.name!r} is empty, so no "
            f"evaluation records it; select by epoch or a metric of another split: {selection_fix(cfg)}"
        )


def check_selected_diagnostic(cfg: DictConfig, diagnostics: dict[str, float]) -> None:
    """At the first evaluation: ValueError unless train.select_by is epoch, one of `selectable_metrics` (checked
    at the start: `check_selection`) or one of the method's `diagnostics`."""
    select_by, task = cfg.train.select_by, cfg.dataset.task
    if select_by == "epoch" or select_by in selectable_metrics(task) or select_by in diagnostics:
        return
    raise ValueError(
        f"train.select_by={select_by!r} is neither epoch, a metric of the evaluations of a {task} run "
        f"({', '.join(selectable_metrics(task)) or 'none'}) nor a diagnostic of method {cfg.method.name!r} "
        f"({', '.join(diagnostics) or 'none'}): {selection_fix(cfg)}"
    )


def train(cfg: DictConfig, run: RunFolder) -> dict:
    """Train, evaluate and checkpoint one run; return its metrics."""
    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    digest = config_digest(resolved)
    run.write_text(RunFolder.CONFIG, resolved)
    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)

    splits = load_splits(cfg.dataset)
    data = {
        s: (
            torch.as_tensor(splits.x(s), device=device),
            torch.as_tensor(splits.y(s), device=device),
        )
        for s in ("train", "val", "test")
    }
    x_train, y_train = data["train"]
    num_train = len(x_train)
    check_selection(cfg, data)
    method = build_method(cfg, splits.spec(cfg.dataset.task))
    shuffle = torch.Generator().manual_seed(cfg.seed)
    start_epoch, history, timing, seconds = 0, [], [], 0.0

    state = run.load_resume(digest)
    if state is not None:
        method.prepare_resume(state["model"])
    method.to(device)
    optimizer = Adam(method.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    if state is not None:
        method.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        shuffle.set_state(state["shuffle_rng"])
        start_epoch, history, timing, seconds = state["epoch"], state["history"], state["timing"], state["seconds"]
        log.info("resumed %s from epoch %d", run.path, start_epoch)

    epochs = cfg.train.epochs
    for epoch in range(start_epoch + 1, epochs + 1):
        started = time.perf_counter()
        method.train()
        loss_sum = 0.0
        try:
            for batch in torch.randperm(num_train, generator=shuffle).split(cfg.train.batch_size):
                method.adapt_architecture(optimizer)
                batch = batch.to(device)
                loss_sum += method.training_step(x_train[batch], y_train[batch], num_train, optimizer) * len(batch)
                # torchsde's Brownian intervals are reference cycles holding their noise: free them each step
                gc.collect(1)
        except DivergedError as err:
            raise DivergedError(
                f"run {run.path} diverged at epoch {epoch}: {err}. "
                f"Lower optim.lr (now {cfg.optim.lr}) or check the data"
            ) from None
        seconds += time.perf_counter() - started
        timing.append({"epoch": epoch, "train_seconds": seconds, "peak_memory_mib": peak_memory_mib(device)})
        if epoch % cfg.train.eval_every == 0 or epoch == epochs:
            method.adapt_architecture(optimizer)
            method.fit_posterior(x_train, y_train)
            splits_now = ("train", "val", "test") if epoch == epochs else ("val", "test")
            evaluation = evaluate(method, data, cfg.dataset.task, splits_now, splits.target_standardisation())
            diagnostics = method.diagnostics()
            if not history:
                check_selected_diagnostic(cfg, diagnostics)
            record = {
                "epoch": epoch,
                "train_loss": loss_sum / num_train,  # the epoch's mean training loss per datum (negative ELBO / N)
                **evaluation,
                **diagnostics,
            }
            history.append(record)
            log.info(
                "epoch %d  %s",
                epoch,
                "  ".join(f"{k}={v:.4g}" for k, v in record.items() if k != "epoch"),
            )
        if epoch % cfg.train.checkpoint_every == 0 and epoch < epochs:
            run.save(
                RunFolder.RESUME,
                {
                    "config_digest": digest,
                    "epoch": epoch,
                    "history": history,
                    "timing": timing,
                    "seconds": seconds,
                    "model": method.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "shuffle_rng": shuffle.get_state(),
                },
            )

    metrics = summarise(history, cfg.train.select_by, cfg.train.select_mode)
    result = {
        "metrics": metrics, "history": history, "timing": timing, "train_seconds": seconds, "epochs": epochs,
        "standin": is_standin(cfg.dataset.path),
        "ran_on": {"host": platform.node(), "device": str(device), "slurm_job_id": os.environ.get("SLURM_JOB_ID")},
    }  # fmt: skip
    run.finish(result, {"config_digest": digest, "model": method.state_dict()})
    return result


def summarise(history: list[dict], select_by: str, select_mode: str) -> dict[str, float]:
    """Metrics at the evaluation that maximises (select_mode max) or minimises (min) `select_by`, the earliest on
    ties, and at the last one."""
    if select_mode == "max":
        best = max(history, key=lambda record: (record[select_by], -record["epoch"]))
    elif select_mode == "min":
        best = min(history, key=lambda record: (record[select_by], record["epoch"]))
    else:
        raise ValueError(f"select_mode must be one of {', '.join(SELECT_MODES)}, got {select_mode!r}")
    metrics = {("selected_epoch" if k == "epoch" else k): v for k, v in best.items()}
    metrics.update({f"last_{k}": v for k, v in history[-1].items() if k != "epoch"})
    return metrics


def main(argv: list[str] | None = None) -> None:
    overrides = sys.argv[1:] if argv is None else argv
    cfg = compose_config(overrides)
    run = RunFolder(Path(cfg.run_dir))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(message)s",
        handlers=[logging.StreamHandler(), logging.FileHandler(run.file(RunFolder.LOG))],
    )
    train(cfg, run)


if __name__ == "__main__":
    main()

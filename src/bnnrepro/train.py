"""One training job: `python -m bnnrepro.train method=udn dataset=spirals run_dir=... [overrides]`.

Hydra composes config/train with the overrides; the job writes into `run_dir` its resolved config, a log, the
metrics JSON (the evaluation selected by `train.select_by` and `train.select_mode`, which are checked before the
first epoch, and the last one, the evaluation history, and per epoch the cumulative training seconds and the peak
memory) and the final checkpoint. Every `train.checkpoint_every` epochs it saves a resumable state, so a killed
job rerun with the same configuration continues where it stopped and ends with the same metrics. The optimiser is
`optim.name`, its learning rates set at the start of every epoch by `optim.lr_schedule` (bnnrepro.optim); the training
batches, never the evaluations, go through `train.augmentation` (bnnrepro.data.augmentation) with their own generator,
checkpointed like the shuffle's. Heavy libraries (pandas, plotting) stay out of this path.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from pathlib import Path

import torch
from omegaconf import DictConfig

from bnnrepro.data.augmentation import training_augmentation
from bnnrepro.data.registry import is_standin, load_splits
from bnnrepro.device import peak_memory_mib
from bnnrepro.errors import DivergedError
from bnnrepro.methods import build_method, own_training_job
from bnnrepro.methods.architecture import architecture
from bnnrepro.methods.protocol import observation_variance
from bnnrepro.metrics import classification_metrics, forecasting_metrics, has_targets, regression_metrics
from bnnrepro.model_selection import check_selected_diagnostic, check_selection, summarise
from bnnrepro.optim import (
    apply_learning_rate_schedule,
    build_optimizer,
    check_learning_rate_schedule,
    scaled_learning_rate_schedule,
)
from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.run_identity import identity_record
from bnnrepro.runs import RunFolder, ran_on, restore_progress, start_job
from bnnrepro.train_configs import compose_config
from bnnrepro.training_health import health_text, training_health

log = logging.getLogger("bnnrepro.train")

PROGRESS_SECONDS = 30.0
"""Wall seconds between the progress lines of a run's log (epoch, loss, time left), so that a long run is seen to
move between its evaluations."""


def progress_line(epoch: int, epochs: int, loss: float, seconds: float) -> str:
    """'epoch 120/4000  train_loss=0.1234  3m 02s trained, about 1h 38m left' (from the mean time per epoch so far)."""
    left = seconds / epoch * (epochs - epoch)
    return f"epoch {epoch}/{epochs}  train_loss={loss:.4g}  {duration(seconds)} trained, about {duration(left)} left"


def duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


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
    Forecasting: the MSE and NLL of `method.predict(x)`'s forecasts [S, N, L, D] (`forecasting_metrics`).
    Regression: RMSE of the predictive mean (the mean over `method.predict(x)`'s samples [S, N, D]) and the Gaussian
    predictive NLL with the method's observation noise (`observation_variance`), in the data's units and in the
    original units of targets standardised with `target_standardisation` (mean, std) (Splits.target_standardisation)."""
    method.eval()
    values = {}
    for split in splits:
        x, y = data[split]
        if not has_targets(x, y):
            continue
        if task == "classification":
            split_values = classification_metrics(method.predict(x), y)
        elif task == "forecasting":
            split_values = forecasting_metrics(method.predict(x), y, method.noise_variance())
        else:
            noise = observation_variance(method, x)
            split_values = regression_metrics(method.predict(x), y, noise, target_standardisation)
        values.update({f"{split}_{name}": value for name, value in split_values.items()})
    return values


def train(cfg: DictConfig, run: RunFolder) -> dict:
    """Train, evaluate and checkpoint one run; return its metrics."""
    digest, device = start_job(cfg, run)

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
    check_learning_rate_schedule(cfg.optim.lr_schedule)
    schedule = scaled_learning_rate_schedule(cfg.optim.lr_schedule, cfg.optim.lr_schedule_epochs, cfg.train.epochs)
    augment = training_augmentation(cfg.train.augmentation, cfg.dataset)
    method = build_method(cfg, splits.spec(cfg.dataset.task), splits)
    shuffle = torch.Generator().manual_seed(cfg.seed)
    augmentation = torch.Generator().manual_seed(cfg.seed)
    start_epoch, history, timing, seconds, initial_loss = 0, [], [], 0.0, None

    generators = {"shuffle": shuffle, "augmentation": augmentation}

    state = run.load_resume(digest)
    if state is not None:
        method.prepare_resume(state["model"])
    method.to(device)
    optimizer = build_optimizer(cfg.optim, method.parameter_groups(cfg.optim.lr, cfg.optim.depth_lr_ratio))
    if state is not None:
        progress = restore_progress(state, method, optimizer, generators)
        start_epoch, history, timing = progress["epoch"], progress["history"], progress["timing"]
        seconds = progress["seconds"]
        initial_loss = progress.get("initial_loss")  # absent from states saved before it was recorded
        log.info("resumed %s from epoch %d", run.path, start_epoch)

    epochs, last_progress = cfg.train.epochs, time.perf_counter()
    for epoch in range(start_epoch + 1, epochs + 1):
        started = time.perf_counter()
        apply_learning_rate_schedule(optimizer, schedule, epoch)
        method.train()
        loss_sum = 0.0
        try:
            for batch in torch.randperm(num_train, generator=shuffle).split(cfg.train.batch_size):
                method.adapt_architecture(optimizer)
                batch = batch.to(device)
                x = x_train[batch] if augment is None else augment(x_train[batch], generator=augmentation)
                loss = method.training_step(x, y_train[batch], num_train, optimizer)
                initial_loss = loss if initial_loss is None else initial_loss  # the loss at initialisation
                loss_sum += loss * len(batch)
                # torchsde's Brownian intervals are reference cycles holding their noise: free them each step
                gc.collect(1)
            method.end_epoch(x_train, y_train)
        except DivergedError as err:
            raise DivergedError(
                f"run {run.path} diverged at epoch {epoch}: {err}. "
                f"Lower optim.lr (now {cfg.optim.lr}) or check the data"
            ) from None
        seconds += time.perf_counter() - started
        timing.append({"epoch": epoch, "train_seconds": seconds, "peak_memory_mib": peak_memory_mib(device)})
        if time.perf_counter() - last_progress >= PROGRESS_SECONDS:
            log.info(progress_line(epoch, epochs, loss_sum / num_train, seconds))
            last_progress = time.perf_counter()
        if epoch % cfg.train.eval_every == 0 or epoch == epochs:
            method.adapt_architecture(optimizer)
            method.fit_posterior(x_train, y_train)
            final_train = epoch == epochs and cfg.train.evaluate_training_split
            splits_now = ("train", "val", "test") if final_train else ("val", "test")
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
            run.save_progress(
                digest, method, optimizer, generators,
                epoch=epoch, history=history, timing=timing, seconds=seconds, initial_loss=initial_loss,
            )  # fmt: skip

    metrics = summarise(history, cfg.train.select_by, cfg.train.select_mode)
    classes = len(torch.unique(y_train)) if cfg.dataset.task == "classification" else 0
    last = history[-1]
    health = training_health(initial_loss, last["train_loss"], last.get("test_accuracy"), classes, reported=metrics)
    if health["flags"]:
        log.warning("run %s: %s", run.path, health_text(health))
    result = {
        "metrics": metrics, "history": history, "timing": timing, "train_seconds": seconds, "epochs": epochs,
        "standin": is_standin(cfg.dataset.path), "health": health,
        "ran_on": ran_on(device, cfg.cpu_arithmetic), "architecture": architecture(method, cfg.method),
    }  # fmt: skip
    result["identity"] = identity_record(cfg, digest, result)
    run.finish(result, {"config_digest": digest, "model": method.state_dict()})
    return result


def main(argv: list[str] | None = None) -> None:
    overrides = sys.argv[1:] if argv is None else argv
    cfg = compose_config(overrides)
    run = RunFolder(Path(cfg.run_dir))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(message)s",
        handlers=[logging.StreamHandler(), logging.FileHandler(run.file(RunFolder.LOG))],
    )
    (own_training_job(cfg.method.name) or train)(cfg, run)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

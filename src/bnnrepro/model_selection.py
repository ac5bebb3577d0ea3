"""Which evaluation of a run its metrics report: `train.select_by` (a validation or test metric, `epoch`, or a
method diagnostic) maximised or minimised (`train.select_mode`), checked before the first epoch so that a name the
run never records fails at once, not after training."""

from __future__ import annotations

import torch
from omegaconf import DictConfig

from bnnrepro.metrics import SPLIT_METRICS, has_targets

SELECT_MODES = ("max", "min")
"""train.select_mode: whether the selected evaluation maximises or minimises train.select_by."""


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

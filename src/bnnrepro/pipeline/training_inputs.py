"""What a training job declares as its inputs besides its data: the source files it runs and the config/train files
its Hydra composition reads. The workflow's rule `train` declares these (workflow/rules/common.smk), and the fidelity
results record a digest of them per batch (`bnnrepro.fidelity.code_digest`): one definition for both.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from bnnrepro.methods import METHOD_MODULES, config_method_name
from bnnrepro.pipeline.sources import source_files
from bnnrepro.train_configs import composed_files, protocol_override

if TYPE_CHECKING:
    from bnnrepro.pipeline.studies import Run, Study

TRAINING_ENTRY = "bnnrepro.train"
"""The module a training job runs (`python -m bnnrepro.train`)."""


def method_module(study: Study, run: Run) -> str:
    """The module of a run's method (its study's variant names the method)."""
    return METHOD_MODULES[config_method_name(study.method_variants[run.method]["method"])]


def training_code(study: Study, run: Run, record: Path | None = None) -> list[str]:
    """Project-relative paths of the source files the run's training job runs. `record`: see
    `bnnrepro.pipeline.sources.import_graph`."""
    return source_files(TRAINING_ENTRY, method_module(study, run), record=record)


def training_overrides(study: Study, run: Run, scale: str, real_data: Collection[str] | str = ()) -> list[str]:
    """The run's Hydra overrides that say what it composes (the workflow adds its run folder, device and threads)."""
    return [*study.overrides(run, real_data), f"scale={scale}", *protocol_override(run.dataset, scale)]


def training_configs(study: Study, run: Run, scale: str, real_data: Collection[str] | str = ()) -> list[str]:
    """Project-relative paths of the config/train files the run's composition reads."""
    return composed_files(training_overrides(study, run, scale, real_data))

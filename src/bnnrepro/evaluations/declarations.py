"""The evaluations declared in config/evaluations/, one file `<name>.yaml` each: the module that computes it, the
registry datasets it reads besides its run's, the device it computes on and its settings per scale."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from bnnrepro.data.registry import prepared_file
from bnnrepro.files import read_yaml
from bnnrepro.paths import config_dir

DEVICES = ("cpu", "run")
"""Where an evaluation computes: on the CPU, or on the run's device (its config's `device`, as its training did)."""


@dataclass(frozen=True)
class DeclaredEvaluation:
    """The declaration config/evaluations/<name>.yaml: the module that computes it, the registry datasets it reads
    besides its run's (a list, or {run's dataset: list} where each run reads only its own: an OOD set paired with
    the training set), its device (DEVICES) and its settings per scale."""

    code: str
    data: tuple[str, ...] | Mapping[str, tuple[str, ...]] = ()
    device: str = "cpu"
    settings: Mapping[str, Mapping] = field(default_factory=dict)

    def data_of(self, run_dataset: str | None = None) -> tuple[str, ...]:
        """The extra datasets a run on `run_dataset` reads; all of them for None (every run's)."""
        if not isinstance(self.data, Mapping):
            return self.data
        if run_dataset is not None:
            return self.data.get(run_dataset, ())
        return tuple(dict.fromkeys(name for names in self.data.values() for name in names))


def declaration_file(name: str) -> Path:
    """The file that declares evaluation `name`: the one input of its jobs that says what they compute."""
    return config_dir() / "evaluations" / f"{name}.yaml"


@cache
def evaluation_names() -> list[str]:
    """The declared evaluations' names (their files' names; none of the files is read)."""
    return sorted(path.stem for path in declaration_file("*").parent.glob("*.yaml"))


@cache
def declared_evaluation(name: str) -> DeclaredEvaluation:
    """The declaration of evaluation `name`, read from its file alone (what its jobs declare as their input); an
    unknown name is an error that lists the known ones."""
    path = declaration_file(name)
    if not path.is_file():
        raise KeyError(
            f"unknown evaluation {name!r}: config/evaluations/ declares {', '.join(evaluation_names())} "
            f"(declare a new one in config/evaluations/{name}.yaml, with the module that computes it)"
        )
    e = read_yaml(path)
    data = e.get("data", ())
    data = {run: tuple(names) for run, names in data.items()} if isinstance(data, Mapping) else tuple(data)
    declared = DeclaredEvaluation(e["code"], data, e.get("device", "cpu"), e.get("settings", {}))
    if declared.device not in DEVICES:
        raise ValueError(f"config/evaluations/{path.name}: device {declared.device!r}; use one of {DEVICES}")
    return declared


def declared_evaluations() -> dict[str, DeclaredEvaluation]:
    """Every declaration, by name."""
    return {name: declared_evaluation(name) for name in evaluation_names()}


def extra_data_files(
    name: str, scale: str, real_data: Collection[str] | str = (), run_dataset: str | None = None
) -> dict[str, str]:
    """{dataset: prepared file} of the datasets evaluation `name` reads besides its run's (a run on `run_dataset`:
    only those its declaration pairs with that dataset), chosen as for the training runs' own datasets
    (`registry.prepared_file`: the offline stand-in below the `paper` scale unless `real_data` names the download);
    none for a name that is no evaluation, e.g. a run's metrics.json."""
    names = declared_evaluation(name).data_of(run_dataset) if name in evaluation_names() else ()
    return {data: prepared_file(data, scale, real_data) for data in names}

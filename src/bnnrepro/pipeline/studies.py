"""Studies: one experiment each (config/studies/<name>.yaml), expanded into training runs.

A study holds grids at the `paper` scale (Cartesian products of method variants, datasets, Hydra
overrides and seeds) and, under `scales:`, replacements of grid values for smaller scales. Each grid
point is one `Run`, i.e. one training job with its own run folder (`bnnrepro.layout.run_folder`), which every study
planning the same run shares: its name is the run's, with a digest of its method variant's overrides, not the study's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, partial
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema

from bnnrepro import layout, train_configs
from bnnrepro.data.registry import GeneratedDataset, data_path, dataset, prepared_file, registry_file, table_task_error
from bnnrepro.files import read_yaml
from bnnrepro.methods import config_method_name
from bnnrepro.paths import project_root, studies_dir, train_config_dir
from bnnrepro.pipeline.benchmark_grids import benchmark_grids
from bnnrepro.pipeline.dag_cache import cached, files_digest
from bnnrepro.pipeline.method_tasks import method_tasks, methods_taking, table_error, why_not
from bnnrepro.pipeline.published_references import with_referenced_published
from bnnrepro.pipeline.study_error import StudyError
from bnnrepro.train_configs import SCALES, compose_config, composed_files, dataset_task

if TYPE_CHECKING:
    from omegaconf import DictConfig

STUDY_SCHEMA = Path(__file__).parent / "study.schema.yaml"


@dataclass(frozen=True)
class Run:
    """One training job: a method variant on a dataset with hyperparameter overrides and a seed."""

    study: str
    scale: str
    method: str
    dataset: str
    seed: int
    hparams: tuple[tuple[str, object], ...]  # (Hydra key, value), in grid order
    variant_digest: str  # of the method variant's overrides in its study (`Study.variant_digest`)

    @property
    def hparam_slug(self) -> str:
        pairs = (f"{key.rsplit('.', 1)[-1]}={value}" for key, value in self.hparams)
        return layout.PAIR_SEPARATOR.join(pairs) or "default"

    @property
    def id(self) -> str:
        return layout.run_id(self.method, self.dataset, self.hparam_slug, self.seed)

    @property
    def folder_name(self) -> str:
        """The run's folder below `results/<scale>/runs/` (the `run` wildcard of its jobs)."""
        return layout.run_folder_name(self.id, self.variant_digest)

    @property
    def folder(self) -> str:
        return layout.run_folder(self.scale, self.folder_name)

    def file(self, name: str) -> str:
        """A file of the run's folder (a `layout.RUN_*` name or a `layout.evaluation_file`)."""
        return layout.run_file(name, self.scale, self.folder_name)

    def data_file(self, real_data: Collection[str] | str = ()) -> str:
        """A download's prepared file (its stand-in below the `paper` scale unless the workflow's `real_data` names
        it: `registry.uses_real_data`), a packaged dataset's prepared file, or a generated instance."""
        entry = dataset(self.dataset)
        if not isinstance(entry, GeneratedDataset):
            return prepared_file(self.dataset, self.scale, real_data)
        keys = entry.data_keys
        values = {
            k.split(".", 1)[1]: v for k, v in self.hparams if k.startswith("dataset.") and k.split(".", 1)[1] in keys
        }
        return data_path(self.dataset, values, self.seed)


SEED_SAME_AS = "same_as"
"""A grid's `seed: {same_as: <grid key>}`: each run's seed is its value of that key (e.g. one seed per split)."""

OWN = "own"
"""The `paper` of a study of your own: it belongs to none of the five works and gets a report section of its own."""


SENSITIVITY_GRID = "sensitivity_"
"""The name prefix of a grid that varies a setting around the paper's to look into a finding (a committed sensitivity
batch): it runs like any grid, and the study's artifacts leave out the runs that only such grids have."""


@dataclass(frozen=True)
class Study:
    name: str
    paper: str
    description: str
    artifacts: tuple[str, ...]
    grids: dict
    scales: dict
    method_variants: dict
    common: dict  # Hydra overrides of every run, before (and overridden by) its method variant's
    benchmark: dict | None = None  # a benchmark's block (task, select_by, published, ...), expanded into `grids`
    bases: tuple[Path, ...] = ()  # the study files it reads besides its own (`method_variants_from`, `published`)

    @property
    def files(self) -> tuple[Path, ...]:
        """The study's file and those it takes method variants or published numbers from: what its jobs read of
        config/studies."""
        return (studies_dir() / f"{self.name}.yaml", *self.bases)

    def variant_overrides(self, variant: str) -> dict:
        """The Hydra overrides of method variant `variant`: the study's common ones, then the variant's own."""
        return {**self.common, **self.method_variants[variant]}

    def variant_digest(self, variant: str) -> str:
        """The `variant_folder_digest` of `variant_overrides`: in the name of its runs' folders, so that two studies
        share a run only where they give its variant the same overrides."""
        return variant_folder_digest(self.variant_overrides(variant))

    @property
    def is_own(self) -> bool:
        return self.paper == OWN

    def runs(self, scale: str, sensitivity: bool = True) -> list[Run]:
        """Every run of the study at `scale`, without duplicates, in grid order; without those only `sensitivity_*`
        grids have where `sensitivity` is False (what the study's artifacts draw)."""
        runs: dict[str, Run] = {}
        digests = {variant: self.variant_digest(variant) for variant in self.method_variants}
        for name, grid in self.scale_grids(scale).items():
            if not sensitivity and name.startswith(SENSITIVITY_GRID):
                continue
            seeds = grid["seed"]
            keys = [k for k in grid if k != "seed" or not isinstance(seeds, Mapping)]
            for values in itertools.product(*(grid[k] for k in keys)):
                point = dict(zip(keys, values, strict=True))
                seed = point[seeds[SEED_SAME_AS]] if isinstance(seeds, Mapping) else point["seed"]
                hparams = tuple((k, v) for k, v in point.items() if k not in ("method", "dataset", "seed"))
                variant = point["method"]
                digest = digests.get(variant, "")  # an unknown variant: the study's check names it
                run = Run(self.name, scale, variant, point["dataset"], int(seed), hparams, digest)
                runs.setdefault(run.id, run)
        return list(runs.values())

    def datasets_by_task(self, scale: str) -> dict[str, list[str]]:
        """{task: the study's datasets at `scale` of that task (config/train/dataset `task`)}, in grid order: the
        report draws a section per task of a study of your own."""
        by_task: dict[str, list[str]] = {}
        for name in dict.fromkeys(run.dataset for run in self.runs(scale)):
            by_task.setdefault(dataset_task(name) or "regression", []).append(name)
        return by_task

    def scale_grids(self, scale: str) -> dict[str, dict]:
        """The grids at `scale`: each paper grid with the values its `scales` entry replaces."""
        return {name: {**grid, **self.scales.get(scale, {}).get(name, {})} for name, grid in self.grids.items()}

    def grid_values(self, scale: str, key: str) -> list:
        """The distinct values, sorted, that the runs at `scale` take for a grid key ('seed', 'dataset', 'method' or
        a Hydra key such as 'train.epochs'); a run whose grid lacks the key contributes nothing."""
        named = {"seed": lambda r: r.seed, "dataset": lambda r: r.dataset, "method": lambda r: r.method}
        value = named.get(key, lambda r: dict(r.hparams).get(key))
        return sorted({value(run) for run in self.runs(scale)} - {None})

    def overrides(self, run: Run, real_data: Collection[str] | str = ()) -> list[str]:
        """Hydra overrides of a run (besides scale, device and run folder, which the workflow adds); `real_data`:
        the downloads read as real data below the `paper` scale (`registry.uses_real_data`)."""
        return [
            *(f"{k}={v}" for k, v in self.variant_overrides(run.method).items()),
            f"dataset={run.dataset}",
            *(f"{k}={v}" for k, v in run.hparams),
            f"seed={run.seed}",
            f"dataset.path='{run.data_file(real_data)}'",
        ]

    def variant_config(self, variant: str, dataset: str) -> DictConfig:
        """The run config that method variant `variant` composes on `dataset` (config/train with the variant's
        overrides, its method file's defaults list included): what a run of it reads, for tables that describe or
        rebuild its network."""
        overrides = [f"{key}={value}" for key, value in self.variant_overrides(variant).items()]
        return compose_config([*overrides, f"dataset={dataset}", "dataset.path=unused", "run_dir=unused"])


def variant_folder_digest(overrides: Mapping) -> str:
    """The first 8 hex digits of the SHA-256 of Hydra overrides {key: value} as sorted JSON (a method variant's, in
    its runs' folder names: `bnnrepro.layout.run_folder_name`)."""
    return hashlib.sha256(json.dumps(overrides, sort_keys=True, default=str).encode()).hexdigest()[:8]


def configured_scale(config: Mapping, study: str) -> str:
    """The scale a study runs at in a workflow config: its entry in 'study_scales', else 'scale'."""
    return config.get("study_scales", {}).get(study, config["scale"])


@cache
def study_schema() -> dict:
    """The JSON schema of a study file (src/bnnrepro/pipeline/study.schema.yaml), read once."""
    return read_yaml(STUDY_SCHEMA)


@cache
def _validator(definition: str | None = None) -> jsonschema.protocols.Validator:
    """A validator of a study file, or with `definition` of one of its schema's `$defs`; the schema itself is
    checked once here (`jsonschema.validate` checks it again on every call: seconds per `snakemake` call)."""
    schema = study_schema()
    if definition is not None:
        schema = {**schema["$defs"][definition], "$defs": schema["$defs"]}
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _schema_error(instance: object, definition: str | None = None) -> jsonschema.ValidationError | None:
    """The most relevant error of `instance` against the study schema (or one of its `$defs`), as
    `jsonschema.validate` would raise it; None when it is valid."""
    return jsonschema.exceptions.best_match(_validator(definition).iter_errors(instance))


def available_studies() -> list[str]:
    return sorted(p.stem for p in studies_dir().glob("*.yaml"))


@cache
def load_study(name: str, record: Path | None = None) -> Study:
    """Read and check config/studies/<name>.yaml: its schema, grids, method variants and datasets (its Hydra
    overrides are checked by `check_overrides`, which the workflow calls before any job runs). With `record`
    (`bnnrepro.pipeline.dag_cache`), a study file checked before, with the same schema and dataset registry, is not
    checked again (the check expands its grids at every scale)."""
    path = studies_dir() / f"{name}.yaml"
    if name == layout.RUNS:
        raise StudyError(f"{path.relative_to(project_root())}: a study cannot be called {name!r} (results/<scale>/"
                         f"{layout.RUNS}/ holds the run folders that studies share); rename it")  # fmt: skip
    if not path.exists():
        raise StudyError(f"unknown study {name!r}; available studies: {', '.join(available_studies())}")
    raw, bases = _with_inherited_variants(read_yaml(path), path, (name,))
    raw, referenced = with_referenced_published(raw, path)
    bases = tuple(dict.fromkeys((*bases, *referenced)))

    def check() -> bool:
        for base in bases:  # checked as a study of its own, so that its errors name its file
            load_study(base.stem, record)
        if (err := _schema_error(raw)) is not None:
            where = "/".join(str(p) for p in err.absolute_path) or "top level"
            raise StudyError(f"{path.relative_to(project_root())}: {err.message} (at {where})") from None
        _check(_study(name, raw, bases), path.relative_to(project_root()))
        return True

    methods = sorted(p.stem for p in (train_config_dir() / "method").glob("*.yaml"))  # identity variants' configs
    checked = files_digest([path, *bases, STUDY_SCHEMA, registry_file()], *methods)
    cached(record, f"checked_study:{name}", checked, check)
    return _study(name, raw, bases)


def _with_inherited_variants(raw: dict, path: Path, names: tuple[str, ...]) -> tuple[dict, tuple[Path, ...]]:
    """`raw` with the method variants of the study its `method_variants_from` names (and that study's own, in turn)
    under its own, which replace those of the same name; and the files read for them. `names`: the studies read so
    far, from the first, to catch a loop."""
    base = raw.get("method_variants_from")
    if base is None:
        return raw, ()
    where, base_path = path.relative_to(project_root()), studies_dir() / f"{base}.yaml"
    if base in names:
        chain = " -> ".join([*names, base])
        raise StudyError(f"{where}: method_variants_from loops back ({chain}); make one of them list its variants")
    if not base_path.is_file():
        raise StudyError(
            f"{where}: method_variants_from names {base!r}, which is not a study; available studies: "
            f"{', '.join(available_studies())}"
        )
    base_raw, further = _with_inherited_variants(read_yaml(base_path), base_path, (*names, base))
    variants = {**(base_raw.get("method_variants") or {}), **(raw.get("method_variants") or {})}
    return {**raw, "method_variants": variants}, (base_path, *further)


def _study(name: str, raw: dict, bases: tuple[Path, ...]) -> Study:
    if "benchmark" in raw:
        raw = {**raw, **benchmark_grids(raw["benchmark"], name)}
    return Study(
        name,
        raw["paper"],
        raw.get("description", ""),
        tuple(raw.get("artifacts", [])),
        raw["grids"],
        raw.get("scales", {}),
        _with_identity_variants(raw),
        raw.get("common", {}),
        raw.get("benchmark"),
        bases,
    )


def _with_identity_variants(raw: dict) -> dict:
    """The study's method variants, and `{method: <name>}` for each method a grid names without a variant of that
    name whose config/train/method/<name>.yaml exists (a study lists `method: [gp, mfvi]` and nothing else for the
    methods as configured)."""
    variants = dict(raw.get("method_variants") or {})
    grids = [raw["grids"], *(raw.get("scales") or {}).values()]
    named = {m for grid_set in grids for grid in (grid_set or {}).values() for m in _listed(grid.get("method"))}
    for method in sorted(named - set(variants)):
        if (train_config_dir() / "method" / f"{method}.yaml").is_file():
            variants[method] = {"method": method}
    return variants


def _listed(value: object) -> list:
    return value if isinstance(value, list) else []


def _check(study: Study, path: Path) -> None:
    for scale, grids in study.scales.items():
        for grid_name, values in grids.items():
            if grid_name not in study.grids:
                raise StudyError(f"{path}: scales.{scale} names grid {grid_name!r}; grids: {', '.join(study.grids)}")
            extra = set(values) - set(study.grids[grid_name])
            if extra:
                raise StudyError(
                    f"{path}: scales.{scale}.{grid_name} sets {sorted(extra)}, which the grid does not vary"
                )
    for scale in SCALES:
        for grid_name, grid in study.scale_grids(scale).items():
            if not grid["method"]:
                if scale == "paper":
                    raise StudyError(f"{path}: grids.{grid_name} has no method; an empty list goes under scales")
                continue  # left out at this scale
            if (err := _schema_error(grid, "grid")) is not None:
                key = err.absolute_path[0] if err.absolute_path else "the grid"
                where = f"grids.{grid_name}" if scale == "paper" else f"grids.{grid_name} with scales.{scale}"
                raise StudyError(f"{path}: {where}: {key}: {err.message}") from None
            seeds = grid["seed"]
            if isinstance(seeds, Mapping) and seeds[SEED_SAME_AS] not in set(grid) - {"seed"}:
                raise StudyError(
                    f"{path}: grids.{grid_name}.seed is the same as {seeds[SEED_SAME_AS]!r}, which the grid does not "
                    f"vary; name one of: {', '.join(k for k in grid if k != 'seed')}"
                )
        for run in study.runs(scale):
            if run.method not in study.method_variants:
                raise StudyError(
                    f"{path}: unknown method {run.method!r}; add it to method_variants or use one of: "
                    f"{', '.join(study.method_variants)}"
                )
            try:
                dataset(run.dataset)
            except KeyError as err:
                raise StudyError(f"{path}: {err.args[0]}") from None


def overrides_digest(study: Study, scale: str) -> str | None:
    """A digest of everything composing a study's overrides at `scale` reads: its file, the config/train files those
    compositions read (`composed_files`), config/datasets.yaml, this module, bnnrepro.train_configs and the Hydra
    version. None when a variant names an option that has no file (its composition then says which)."""
    try:
        configs = {
            file
            for _, variant, dataset_name in _grid_pairs(study, scale)
            for file in composed_files(_pair_overrides(study, variant, dataset_name, scale))
        }
    except FileNotFoundError:
        return None
    files = [
        *study.files,
        Path(__file__),
        Path(train_configs.__file__),
        registry_file(),
        *(project_root() / f for f in sorted(configs)),
    ]
    return files_digest(files, study.name, scale, f"hydra-core {version('hydra-core')}")


def _grid_pairs(study: Study, scale: str) -> Iterator[tuple[str, str, str]]:
    """(grid name, method variant, dataset) of each point of the study's grids at `scale`, up to seeds and keys."""
    for grid_name, grid in study.scale_grids(scale).items():
        for variant, dataset_name in itertools.product(grid["method"], grid["dataset"]):
            yield grid_name, variant, dataset_name


def _pair_overrides(study: Study, variant: str, dataset_name: str, scale: str) -> list[str]:
    """The Hydra overrides of a method variant on a dataset at a scale, as the check composes them."""
    overrides = [f"{k}={v}" for k, v in study.variant_overrides(variant).items()]
    return [*overrides, f"dataset={dataset_name}", f"scale={scale}", "run_dir=unused"]


def check_overrides(study: Study, scales: Collection[str] = SCALES, record: Path | None = None) -> None:
    """Compose the Hydra config of each method variant on each dataset of the study's grids at each of `scales`, and
    check each grid key against it (a key of config/train, values of its default's kind), so that a mistyped key or
    value stops the workflow before any job starts. The workflow composes at the scale it runs a study at (a study's
    paper grid is composed when a call asks for `paper`: every study's, ~300 compositions, cost a minute) and
    checks the values every scale gives each key against those compositions; the tests compose every scale. With
    `record` (`bnnrepro.pipeline.dag_cache`), a study and scale checked before with exactly the files of
    `overrides_digest` are not checked again: editing a config/train file checks again the studies that compose it,
    not the others. Then each method must take the task of each dataset a grid pairs it with (`task_mismatch`, below;
    the methods' declared tasks are read back from `record` while no method module changed)."""
    path = (studies_dir() / f"{study.name}.yaml").relative_to(project_root())
    for scale in scales:
        digest = overrides_digest(study, scale)
        check = partial(_compose_overrides, study, scale, path)
        cached(record if digest else None, f"study_checks/{study.name}/{scale}", digest or "", check)
        if mismatch := task_mismatch(study, study.runs(scale), record):
            raise StudyError(mismatch)


def _compose_overrides(study: Study, scale: str, path: Path) -> None:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    composed: dict[tuple[str, str], DictConfig] = {}
    with initialize_config_dir(config_dir=str(train_config_dir()), version_base="1.3"):
        for grid_name, variant, dataset_name in _grid_pairs(study, scale):
            if (variant, dataset_name) not in composed:
                overrides = _pair_overrides(study, variant, dataset_name, scale)
                try:
                    composed[variant, dataset_name] = compose(config_name="config", overrides=overrides)
                except (HydraException, OmegaConfBaseException) as err:
                    raise StudyError(
                        f"{path}: method variant {variant} on {dataset_name} has an invalid Hydra override: "
                        f"{err}. Overrides: {' '.join(overrides)}; keys are those of config/train/"
                    ) from None
            where = f"{path}: grids.{grid_name} ({variant} on {dataset_name})"
            # a key's kind is the same at every scale: the values other scales give it are checked here too
            for values in (study.scale_grids(other)[grid_name] for other in SCALES):
                _check_grid_keys(values, composed[variant, dataset_name], where)


VALUE_KINDS = {"a number": (int, float), "a boolean": (bool,), "a string": (str,)}


def _check_grid_keys(grid: dict, config: DictConfig, where: str) -> None:
    """Each Hydra key of a grid is a value of the run config, and its grid values are of the kind of its default (a
    number, a boolean or a string): `dataset.omgea`, or a value Hydra would take as a string, such as
    `optim.lr: [fast]` or `dataset.omega: [two]`, fails here and not in a job."""
    from omegaconf import DictConfig, OmegaConf

    missing = object()
    for key, values in grid.items():
        if key in ("method", "dataset", "seed"):
            continue
        default = OmegaConf.select(config, key, default=missing)
        if default is missing or isinstance(default, DictConfig):
            raise StudyError(
                f"{where}: {key} is not a value of the run config, an invalid Hydra override; keys are those of "
                "config/train/ (grids set values, a method variant sets the method)"
            )
        kind = next((k for k, types in VALUE_KINDS.items() if _is_kind(default, types)), None)
        for value in values if kind is not None else ():
            if not _is_kind(value, VALUE_KINDS[kind]):
                raise StudyError(
                    f"{where}: {key}: {value!r} is not {kind}, as its default in config/train is ({default!r})"
                )


def _is_kind(value: object, types: tuple[type, ...]) -> bool:
    """isinstance, with booleans apart from numbers."""
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def task_mismatch(study: Study, runs: Iterable[Run], record: Path | None = None) -> str | None:
    """The error naming the study file, the method, the dataset, its task, why the method does not take it (where its
    module says) and the methods that do, when one of `runs` pairs a method with a dataset whose task the method does
    not take (None when none does); each distinct (method variant, dataset) once. First, a table whose training
    config and registry entry disagree on its task (`table_task_error`); and a method config paired with a table
    it does not train on (`method_tasks.table_error`)."""
    pairs = {(run.method, run.dataset): run for run in runs}
    declared = method_tasks(record)
    dataset_tasks = {name: dataset_task(name) for name in {name for _, name in pairs}}
    if errors := [error for name, task in sorted(dataset_tasks.items()) if (error := table_task_error(name, task))]:
        return errors[0]
    path = (studies_dir() / f"{study.name}.yaml").relative_to(project_root())
    for run in pairs.values():
        config = study.method_variants[run.method]["method"]
        method = config_method_name(config)
        if refused := table_error(config, run.dataset):
            return f"{path}: method {run.method!r}: {refused} (grid {', '.join(_grids_with(study, run))})"
        tasks, task = declared[method], dataset_tasks[run.dataset]
        if task in tasks:
            continue
        named = f"method {run.method!r}" + (f" (method {method!r})" if method != run.method else "")
        reason = f" ({why})" if (why := why_not(method, task)) else ""
        return (
            f"{path}: {named} takes {' or '.join(tasks)} data only{reason}, but dataset {run.dataset!r} is {task} "
            f"(grid {', '.join(_grids_with(study, run))}); remove the pair from the grid or pick a method that "
            f"takes {task}: {', '.join(methods_taking(task, record)) or 'none does'}"
        )
    return None


def _grids_with(study: Study, run: Run) -> list[str]:
    """The names of the study's grids at the run's scale that pair its method variant with its dataset."""
    grids = study.scale_grids(run.scale).items()
    return [name for name, grid in grids if run.method in grid["method"] and run.dataset in grid["dataset"]]

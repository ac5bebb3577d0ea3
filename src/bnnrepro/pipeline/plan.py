"""The workflow's DAG in plain Python: studies -> runs -> evaluations -> artifacts -> result files, with the inputs
each job declares.

`Plan.build(config)` reads the configuration (config/config.yaml's values, the studies, the dataset registry, the
artifact and evaluation declarations) and checks it, raising `PlanError` with the fix; it changes no file.
`workflow/rules/common.smk` adapts it to Snakemake: each input function there is a method of the plan, called with
the job's wildcards (any object with the attributes the method reads, e.g. `scale`, `study`, `run`), so the DAG can
be built and tested here without Snakemake.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from bnnrepro import layout
from bnnrepro.artifacts.declarations import ArtifactDeclaration, declarations
from bnnrepro.artifacts.registry import CATALOG, catalog
from bnnrepro.data import registry as registry_module
from bnnrepro.data.registry import (
    RegistryError,
    check_real_data,
    check_references,
    data_path,
    dataset,
    prepared_file,
    registry_file,
)
from bnnrepro.evaluations.declarations import declaration_file, declared_evaluation, extra_data_files
from bnnrepro.fidelity.kept_files import paper_result_files
from bnnrepro.files import UnreadableFileError
from bnnrepro.paths import project_root
from bnnrepro.pipeline import data_checks, training_inputs
from bnnrepro.pipeline.config_keys import DuplicateKeyError, check_unique_keys, workflow_config_files
from bnnrepro.pipeline.dag_cache import cached, files_digest
from bnnrepro.pipeline.data_jobs import DataJobInputs
from bnnrepro.pipeline.drawing_jobs import DrawingJobs
from bnnrepro.pipeline.input_lists import input_list_name
from bnnrepro.pipeline.result_checks import verify_files
from bnnrepro.pipeline.run_results import RunResults
from bnnrepro.pipeline.sources import PACKAGE_DIR, project_paths, source_files
from bnnrepro.pipeline.studies import (
    Run,
    Study,
    StudyError,
    available_studies,
    check_overrides,
    configured_scale,
    load_study,
)
from bnnrepro.report import files as report_files
from bnnrepro.train_configs import check_protocol_files

DATA_SOURCES = sorted(Path(registry_module.__file__).parent.rglob("*.py"))
"""The data package's sources, where config/datasets.yaml's function references resolve."""

EXECUTION_SETTINGS = ("device", "threads_per_job", "job_server")
"""Config keys that say where and how fast jobs compute, not what: no rerun trigger (each run records the device it
ran on)."""


class PlanError(ValueError):
    """A configuration the workflow cannot build its DAG from; the message names the problem and the fix."""


@dataclass
class Plan(DataJobInputs, RunResults, DrawingJobs):
    """The DAG of one workflow configuration (config/config.yaml with its command-line overrides)."""

    config: Mapping
    studies: dict[str, Study]
    record: Path | None = None
    """Work done while the DAG is built and kept for the next build (`bnnrepro.pipeline.dag_cache`)."""
    input_lists: dict[str, list[str]] = field(default_factory=dict)
    """{name: files} of the input lists that this DAG's jobs declare (`bnnrepro.pipeline.input_lists`), filled as
    the jobs' inputs are asked for."""

    @classmethod
    def build(
        cls, config: Mapping, record: Path | None = None, check_study_overrides: bool = True, configfiles=()
    ) -> Plan:
        """The plan of `config`, checked: no key given twice in the workflow's YAML files and in `configfiles` (those
        of --configfile), the dataset registry and config 'real_data', the studies and their scales, the protocol
        files of every run, and every artifact the studies list (with `check_study_overrides`, each study's Hydra
        overrides too: the main process checks them, a cluster job's own Snakemake trusts it)."""
        try:
            config_files = [*workflow_config_files(project_root()), *map(Path, configfiles)]
            _checked_once(record, "unique_keys", config_files, lambda: check_unique_keys(config_files))
            _checked_once(record, "registry_references", [registry_file(), *DATA_SOURCES], check_references)
            check_real_data(config["real_data"])
            plan = cls(config, _load_studies(config, record), record)
            if check_study_overrides:
                for name, study in plan.studies.items():
                    check_overrides(study, [plan.scale(name)], record)
        except (DuplicateKeyError, RegistryError, StudyError) as err:
            raise PlanError(str(err)) from None
        for scale in sorted({plan.scale(name) for name in plan.studies}):
            try:
                check_protocol_files(
                    [run for study, run in plan.runs.values() if plan.scale(study.name) == scale], scale
                )
            except (FileNotFoundError, ValueError) as err:
                raise PlanError(str(err)) from None
        plan.check_local_tables()
        plan.artifacts  # noqa: B018 (checks every artifact the studies list)
        return plan

    def check_local_tables(self) -> None:
        """PlanError where the header of a CSV download a run reads, fetched already, lacks the declared target or
        feature columns or repeats a name (`data_checks.check_local_tables`): found before any job, not in the first
        prepare job."""
        try:
            data_checks.check_local_tables([run.dataset for _, run in self.runs.values()], self.record)
        except data_checks.DataCheckError as err:
            raise PlanError(str(err)) from None

    # --- studies and runs ---

    def scale(self, study_name: str) -> str:
        """The scale a study runs at (config 'study_scales', else 'scale')."""
        return configured_scale(self.config, study_name)

    def study_runs(self, study: Study) -> list[Run]:
        """The runs of a study at its scale."""
        return study.runs(self.scale(study.name))

    @cached_property
    def runs(self) -> dict[str, tuple[Study, Run]]:
        """{run folder: (study, run)} of every run of the enabled studies at their scales; a folder that two studies
        plan is one run (the first study's), and it must compose the same overrides in both."""
        runs: dict[str, tuple[Study, Run]] = {}
        for study in self.studies.values():
            for run in self.study_runs(study):
                other, planned = runs.setdefault(run.folder, (study, run))
                if other is not study and other.overrides(planned) != study.overrides(run):
                    raise PlanError(
                        f"{run.folder}: studies {other.name} and {study.name} both plan this run folder with other "
                        f"overrides ({' '.join(other.overrides(planned))} against {' '.join(study.overrides(run))}): "
                        "their grids name different keys that end alike; rename the method variant in one of them"
                    )
        return runs

    @property
    def real_data(self) -> object:
        return self.config["real_data"]

    @property
    def own_studies(self) -> list[str]:
        """The enabled studies of your own (`paper: own`)."""
        return [name for name, study in self.studies.items() if study.is_own]

    def run_of(self, wildcards) -> tuple[Study, Run]:
        """(study, run) of a job's wildcards (`scale`, `run`: the run folder's name); a folder that is no run of this
        DAG is an error that says why."""
        folder = layout.run_folder(wildcards.scale, wildcards.run)
        if folder in self.runs:
            return self.runs[folder]
        scales = sorted({self.scale(name) for name in self.studies})
        if wildcards.scale not in scales:
            why = f"no study runs at scale {wildcards.scale!r} (config 'scale', 'study_scales': {', '.join(scales)})"
        else:
            why = f"no enabled study ({', '.join(self.studies)}) has this run in its grid at {wildcards.scale!r}"
        raise PlanError(
            f"{folder}: not a run of this workflow: {why}. Ask for a run a grid has: "
            f"`python -m bnnrepro.fidelity targets STUDY --scale {wildcards.scale}` lists a study's"
        )

    def verify_data(self) -> list[data_checks.IncompleteDownload]:
        """The data the runs and config 'datasets' read, checked before any job starts: each download's raw files and
        its prepared data's record of them against the registry (`bnnrepro.pipeline.data_checks`), and each prepared
        file the runs read opened. A truncated file would otherwise rerun every run that reads it (deleting their
        results first) only for each job to fail on it (`bnnrepro.pipeline.result_checks`). Returns the download
        folders that lack files, for the workflow to fetch again; changes nothing."""
        data_files = [run.data_file(self.real_data) for _, run in self.runs.values()]
        try:
            incomplete = data_checks.check_downloads([*data_files, *self.prepared_datasets()], self.record)
            verify_files(data_files, self.record)
        except (data_checks.DataCheckError, UnreadableFileError) as err:
            raise PlanError(str(err)) from None
        return incomplete

    # --- input lists ---

    def listed(self, kind: str, files) -> str:
        """The input list of `files`, declared in their place: one input for Snakemake's scheduler to check instead
        of dozens, made again (and so rerunning the job) whenever one of them is newer than it."""
        name = input_list_name(kind, files)
        self.input_lists[name] = sorted(set(files))
        return layout.input_list_file(name)

    def listed_files(self, wildcards) -> list[str]:
        """The files of input list `wildcards.name`."""
        if wildcards.name not in self.input_lists:
            raise PlanError(
                f"{layout.input_list_file(wildcards.name)}: no job of this DAG reads that input list "
                f"(it is made for the jobs that declare it); ask for a result file instead"
            )
        return self.input_lists[wildcards.name]

    # --- data jobs ---

    def prepared_datasets(self) -> list[str]:
        """The datasets of config 'datasets', which `snakemake data` prepares ahead of the runs (a run of the
        workflow prepares only the data its studies read), ready for their loaders: a download's real data at the
        `paper` scale (or where config 'real_data' names it) and its stand-in below it; a packaged dataset's data; a
        generated dataset's instance with the paper's values and seed 0."""
        files = []
        for name in self.config["datasets"]:
            try:
                entry = dataset(name)
            except KeyError as err:
                raise PlanError(f"config 'datasets': {err.args[0]}") from None
            generated = hasattr(entry, "generator")
            files.append(
                data_path(name, {}, 0) if generated else prepared_file(name, self.config["scale"], self.real_data)
            )
        return files

    # --- training and evaluation jobs ---

    def run_data(self, wildcards) -> str:
        return self.run_of(wildcards)[1].data_file(self.real_data)

    def train_code(self, wildcards) -> str:
        """Source files the training job runs, as an input list: a code change reruns exactly the runs it affects."""
        return self._training_code_list(*self.run_of(wildcards))

    def _training_code_list(self, study: Study, run: Run) -> str:
        return self.listed("train_code", training_inputs.training_code(study, run, record=self.record))

    def train_configs(self, wildcards) -> list[str]:
        """The config/train files a training job composes (5-10: not worth an input list, as they vary from run to
        run): editing one reruns exactly the runs that read it."""
        return training_inputs.training_configs(*self.run_of(wildcards), wildcards.scale, self.real_data)

    def run_overrides(self, wildcards) -> str:
        """Hydra overrides of one training job, shell-quoted: what it trains (rule `train` adds device and threads)."""
        study, run = self.run_of(wildcards)
        overrides = [
            *training_inputs.training_overrides(study, run, wildcards.scale, self.real_data),
            f"run_dir='{run.folder}'",
        ]
        return " ".join(shlex.quote(o) for o in overrides)

    def evaluation_code(self, wildcards) -> str:
        """Source files an evaluation job runs (the entry point, the run's method, the evaluation's own module) and
        its declaration (config/evaluations/<name>.yaml), as an input list: editing one declaration reruns only its
        jobs."""
        return self._evaluation_code_list(*self.run_of(wildcards), wildcards.evaluation)

    def _evaluation_code_list(self, study: Study, run: Run, evaluation: str) -> str:
        modules = [
            "bnnrepro.evaluations.__main__",
            training_inputs.method_module(study, run),
            declared_evaluation(evaluation).code,
        ]
        files = source_files(*modules, record=self.record)
        return self.listed("evaluation_code", [*files, str(declaration_file(evaluation).relative_to(project_root()))])

    def _evaluation_data_files(self, wildcards) -> dict[str, str]:
        run_dataset = wildcards.run.split("/")[1]  # <variant>~<digest>/<dataset>/<hparams>/seed=<seed> (layout)
        return extra_data_files(wildcards.evaluation, wildcards.scale, self.real_data, run_dataset)

    def evaluation_data(self, wildcards) -> list[str]:
        """The prepared files of the datasets an evaluation of this run reads besides its run's
        (config/evaluations/<name>.yaml `data`, those paired with the run's dataset where it pairs them): a
        download's offline stand-in below the `paper` scale, the real data at `paper`."""
        return list(self._evaluation_data_files(wildcards).values())

    def evaluation_data_arguments(self, wildcards) -> str:
        """`--data DATASET=FILE` for each of those datasets, shell-quoted."""
        files = self._evaluation_data_files(wildcards)
        return " ".join(f"--data {shlex.quote(f'{name}={path}')}" for name, path in files.items())

    def evaluation_on_run_device(self, wildcards) -> bool:
        """Whether an evaluation computes on its run's device (`device: run` in its declaration), else on the CPU."""
        return declared_evaluation(wildcards.evaluation).device == "run"

    # --- aggregation ---

    def study_run_metrics(self, wildcards) -> list[str]:
        """metrics.json of every run of a study at the scale of the tidy CSV asked for."""
        return [run.file(layout.RUN_METRICS) for run in self.studies[wildcards.study].runs(wildcards.scale)]

    def study_metrics(self, wildcards) -> str:
        """The tidy metrics CSV of a study at its scale."""
        return layout.study_metrics_file(self.scale(wildcards.study), wildcards.study)

    def all_study_metrics(self) -> list[str]:
        """The tidy metrics CSV of every enabled study at its scale (the report says which runs carry no data)."""
        return [layout.study_metrics_file(self.scale(name), name) for name in self.studies]

    def reported_study_metrics(self, wildcards=None) -> list[str]:
        """`all_study_metrics`, for the report; PlanError where config 'studies' is empty: a report of no study would
        replace the last one (asked for data alone, the report is not built and nothing stops)."""
        if not self.studies:
            raise PlanError(
                "config 'studies' is empty: the report would show no study and replace reports/report.pdf. Name at "
                "least one (config/config.yaml 'studies', or --config 'studies=[udn_spirals]'); for the data alone, "
                "ask for it: snakemake data --config 'studies=[]'"
            )
        return self.all_study_metrics()

    def own_study_results(self) -> list[str]:
        """Every file the report shows of each enabled study of your own: its tables and figures per task of its
        datasets (rule own_study)."""
        return [
            path
            for name in self.own_studies
            for task in self.studies[name].datasets_by_task(self.scale(name))
            for files in report_files.own_study_files(name, task).values()
            for path in files.values()
        ]

    def study_bases(self, wildcards) -> list[str]:
        """The study files a study takes method variants or published numbers from (`Study.bases`), which its jobs
        read with its own."""
        return [str(path.relative_to(project_root())) for path in self.studies[wildcards.study].bases]

    def own_study_datasets(self, wildcards) -> list[str]:
        """The datasets of a study of your own of the task of rule own_study's job."""
        study = self.studies[wildcards.study]
        return study.datasets_by_task(self.scale(wildcards.study)).get(wildcards.task, [])

    # --- artifacts ---

    @cached_property
    def artifacts(self) -> dict[str, tuple[Study, ArtifactDeclaration]]:
        """{stem: (study, declaration)} of the artifacts the enabled studies list; an id that is not in the catalog
        or that no function draws is an error naming it."""
        known = {entry["id"] for entry in catalog()["artifacts"]}
        declared = {scale: declarations(scale, self.record) for scale in {self.scale(name) for name in self.studies}}
        artifacts = {}
        for study in self.studies.values():
            drawn = declared[self.scale(study.name)]
            for artifact_id in study.artifacts:
                if artifact_id not in known:
                    raise PlanError(
                        f"config/studies/{study.name}.yaml: unknown artifact {artifact_id!r} "
                        "(ids are listed in src/bnnrepro/artifacts/catalog.yaml)"
                    )
                if artifact_id not in drawn:
                    raise PlanError(
                        f"study {study.name!r} lists artifact {artifact_id!r}, but no function draws it: "
                        f"register one with @figure/@table in src/bnnrepro/artifacts/"
                    )
                artifacts[drawn[artifact_id].stem] = (study, drawn[artifact_id])
        return artifacts

    # --- the report ---

    def report_code(self, module: str) -> list[str]:
        """Source files of a report step, and the catalog it reads."""
        return source_files(module, record=self.record) + project_paths([CATALOG])

    def draw_function_files(self) -> list[str]:
        """The files of the functions that draw the figures and tables: the manifest names each function by its
        line, so that a change to one of them rebuilds the manifest."""
        return project_paths({PACKAGE_DIR / impl.source_file for _, impl in self.artifacts.values()})

    @staticmethod
    def paper_result_files() -> list[str]:
        """The committed paper-scale results the report shows verdicts from (docs/fidelity/)."""
        return paper_result_files(project_root())

    def report_config(self) -> str:
        """The configuration but its EXECUTION_SETTINGS, shell-quoted, for the report's provenance."""
        kept = {k: v for k, v in self.config.items() if k not in EXECUTION_SETTINGS}
        return shlex.quote(json.dumps(kept, sort_keys=True))

    # --- every result ---

    def result_files(self) -> list[str]:
        """Every file the workflow makes at the studies' scales: the data the runs read, runs, tidy metrics,
        figures, tables, the report."""
        runs = [run for _, run in self.runs.values()]
        scale = self.config["scale"]
        drawn_run_files = [
            f
            for study, impl in self.artifacts.values()
            if impl.uses == "runs"
            for f in self.artifact_run_files(study, impl)
        ]
        return sorted(
            {
                *(run.data_file(self.real_data) for run in runs),
                *(run.file(name) for run in runs for name in layout.TRAINING_OUTPUTS.values()),
                *self.all_study_metrics(),
                *(f for _, impl in self.artifacts.values() if impl.uses == "data" for f in impl.data_files),
                *drawn_run_files,
                *self.evaluation_extra_data(),
                *self.job_input_lists(),
                *self.artifact_files("figure"),
                *self.artifact_files("table"),
                *self.artifact_checks_files(),
                *self.own_study_results(),
                layout.report_manifest_file(scale),
                report_files.REPORT_PDF,
                report_files.REPORT_TYPST,
            }
        )  # fmt: skip

    def job_input_lists(self) -> set[str]:
        """The input lists of every training run, of every evaluation that an artifact draws from and of every
        drawing job (results: `results/<scale>/timestamps.json` must record them, so that a DVC checkout keeps them
        older than the jobs that read them)."""
        lists = {self._training_code_list(study, run) for study, run in self.runs.values()}
        lists |= set(self._drawing_configs.values())
        for study, impl in self.artifacts.values():
            if (evaluation := self.artifact_evaluation(impl)) is not None:
                lists |= {
                    self._evaluation_code_list(study, run, evaluation)
                    for run in self.study_runs(study)
                    if impl.reads(run)
                }
        return lists

    def evaluation_extra_data(self) -> list[str]:
        """The extra datasets (config/evaluations/<name>.yaml `data`) of the evaluations that artifacts draw from."""
        needed = {(self.artifact_evaluation(impl), self.scale(study.name)) for study, impl in self.artifacts.values()}
        return [
            f
            for name, scale in needed
            if name is not None
            for f in extra_data_files(name, scale, self.real_data).values()
        ]


def _checked_once(record: Path | None, key: str, files: list[Path], check: Callable[[], None]) -> None:
    """Run `check` (it raises on a problem) unless it passed before on exactly these files (`record`,
    `bnnrepro.pipeline.dag_cache`): a no-op `snakemake -n` parses no YAML it parsed before."""
    cached(record, f"checked:{key}", files_digest(files), lambda: check() or True)


def _load_studies(config: Mapping, record: Path | None = None) -> dict[str, Study]:
    """The studies of config 'studies', loaded; config 'study_scales' may name only those."""
    unknown = [name for name in config["studies"] if name not in available_studies()]
    if unknown:
        raise PlanError(
            f"config 'studies': unknown study {', '.join(map(repr, unknown))}; "
            f"available studies: {', '.join(available_studies())} (files in config/studies/)"
        )
    studies = {name: load_study(name, record) for name in config["studies"]}
    unknown = sorted(set(config.get("study_scales", {})) - set(studies))
    if unknown:
        raise PlanError(
            f"config 'study_scales': {', '.join(map(repr, unknown))} not among the enabled studies "
            f"({', '.join(studies) or 'none'}); add it to 'studies' or remove it from 'study_scales'"
        )
    return studies

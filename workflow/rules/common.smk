# Helpers of the workflow: config validation, the runs of each study, and input functions.
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading

from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

from bnnrepro import layout
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.artifacts.registry import CATALOG, catalog
from bnnrepro.config_keys import DuplicateKeyError, check_unique_keys, workflow_config_files
from bnnrepro.data.registry import (
    SCHEMA as REGISTRY_SCHEMA,
    RegistryError,
    check_real_data,
    check_references,
    data_path,
    dataset,
    downloads,
    packaged,
    prepared_file,
    registry_file,
)
from bnnrepro.evaluations.declarations import declaration_file, declared_evaluation, extra_data_files
from bnnrepro.files import UnreadableFileError
from bnnrepro.fidelity.kept_files import paper_result_files
from bnnrepro.input_lists import NAME_PATTERN as INPUT_LIST_NAME, input_list_name
from bnnrepro import training_inputs
from bnnrepro.job_server import ADDRESS_VARIABLE, StartedServer, server_environment
from bnnrepro.paths import project_root, studies_dir
from bnnrepro.report import INVOCATION_VARIABLE
from bnnrepro.result_checks import verify_files
from bnnrepro.result_timestamps import outdate_changed_sources, record, restore, workflow_source_files
from bnnrepro.sources import project_paths, source_files
from bnnrepro.studies import (
    SCALES,
    STUDY_SCHEMA,
    StudyError,
    available_studies,
    check_overrides,
    configured_scale,
    load_study,
)
from bnnrepro.train_configs import check_protocol_files, composed_files

validate(config, schema="../schemas/config.schema.yaml")

# The command that runs the workflow, for the report's provenance (bnnrepro.report.manifest); a job's own
# snakemake (a cluster job) keeps the one of the snakemake that started it.
os.environ.setdefault(INVOCATION_VARIABLE, shlex.join(["snakemake", *sys.argv[1:]]))

SCALE = config["scale"]
SCALE_NAMES = "|".join(SCALES)
config.setdefault("study_scales", {})
REAL_DATA = config["real_data"]

# A key given twice in one of the workflow's YAML files (YAML keeps the last silently); config/datasets.yaml against
# its schema, its function references, and config 'real_data': before any job runs.
try:
    check_unique_keys(workflow_config_files(project_root()))
    check_references()
    check_real_data(REAL_DATA)
except (DuplicateKeyError, RegistryError) as err:
    raise WorkflowError(str(err)) from None
TIMESTAMPS = layout.timestamps_file(SCALE)
# Work done while the DAG is built and kept for the next call (bnnrepro.dag_cache): the studies' override checks,
# the artifact declarations, the package's import graph.
DAG_RECORD = Path(layout.DAG_CACHE)

# Job priorities: of the jobs ready to run, Snakemake's scheduler starts those of higher priority first and then those
# with the largest inputs, so without them data preparation (whose only inputs are its code) ran last: at smoke, the
# CIFAR-10-C stand-in that four evaluations wait on started 108 s into the DAG. Data first, then evaluations, whose
# figures wait on them.
DATA_PRIORITY, EVALUATION_PRIORITY = 2, 1

# Results checked out by `dvc pull`/`dvc checkout` carry new, shuffled modification times; put back the
# order recorded when they were made, so that Snakemake sees them as up to date (bnnrepro.result_timestamps).
if workflow.is_main_process and (restored := restore(Path(TIMESTAMPS))):
    logger.info(f"Restored the recorded time order of {restored} cached result files ({TIMESTAMPS}).")
# Whether a result is current is decided by content: a source file (code, config) whose content is not the one the
# recorded results were made from, but that looks older than them (a checkout, pull or copy), gets the current time,
# so that Snakemake reruns what reads it (bnnrepro.result_timestamps).
if workflow.is_main_process and (outdated := outdate_changed_sources(Path(TIMESTAMPS), workflow_source_files())):
    logger.info(
        f"{len(outdated)} source files differ from those the results in {TIMESTAMPS} were made from; the jobs that "
        f"read them run again: {', '.join(outdated[:5])}{' ...' if len(outdated) > 5 else ''}"
    )


def _load_studies():
    unknown = [name for name in config["studies"] if name not in available_studies()]
    if unknown:
        raise WorkflowError(
            f"config 'studies': unknown study {', '.join(map(repr, unknown))}; "
            f"available studies: {', '.join(available_studies())} (files in config/studies/)"
        )
    try:
        studies = {name: load_study(name) for name in config["studies"]}
        if workflow.is_main_process:  # a job's own Snakemake (SLURM) trusts the main process's check
            for name, study in studies.items():  # at the scale each study runs at
                check_overrides(study, [configured_scale(config, name)], DAG_RECORD)
    except (StudyError, RegistryError) as err:
        raise WorkflowError(str(err)) from None
    return studies


STUDIES = _load_studies()
OWN_STUDY_NAMES = "|".join(name for name, study in STUDIES.items() if study.is_own) or "^$"


def _check_study_scales():
    """config 'study_scales' may name only enabled studies (its values are checked by the schema)."""
    unknown = sorted(set(config["study_scales"]) - set(STUDIES))
    if unknown:
        raise WorkflowError(
            f"config 'study_scales': {', '.join(map(repr, unknown))} not among the enabled studies "
            f"({', '.join(STUDIES) or 'none'}); add it to 'studies' or remove it from 'study_scales'"
        )


_check_study_scales()


def study_scale(name):
    """The scale a study runs at (config 'study_scales', else 'scale')."""
    return configured_scale(config, name)


def study_runs(study):
    """The runs of a study at its scale."""
    return study.runs(study_scale(study.name))


RUNS = {run.folder: (study, run) for study in STUDIES.values() for run in study_runs(study)}
try:
    for scale in sorted({study_scale(name) for name in STUDIES}):
        check_protocol_files([run for study, run in RUNS.values() if study_scale(study.name) == scale], scale)
except (FileNotFoundError, ValueError) as err:
    raise WorkflowError(str(err)) from None

# The prepared data the runs read, checked before any job starts: a truncated file would otherwise rerun every run
# that reads it (deleting their results first) only for each job to fail on it (bnnrepro.result_checks).
try:
    verify_files([run.data_file(REAL_DATA) for _, run in RUNS.values()], DAG_RECORD)
except UnreadableFileError as err:
    raise WorkflowError(str(err)) from None


def _implemented_artifacts():
    """{stem: (study, declaration)} of the artifacts the enabled studies list; an id that is not in the catalog
    or that no function draws stops the DAG build with a message naming it."""
    known = {entry["id"] for entry in catalog()["artifacts"]}
    artifacts = {}
    declared = {scale: declarations(scale, DAG_RECORD) for scale in {study_scale(name) for name in STUDIES}}
    for study in STUDIES.values():
        drawn = declared[study_scale(study.name)]
        for artifact_id in study.artifacts:
            if artifact_id not in known:
                raise WorkflowError(
                    f"config/studies/{study.name}.yaml: unknown artifact {artifact_id!r} "
                    "(ids are listed in src/bnnrepro/artifacts/catalog.yaml)"
                )
            if artifact_id not in drawn:
                raise WorkflowError(
                    f"study {study.name!r} lists artifact {artifact_id!r}, but no function draws it: "
                    f"register one with @figure/@table in src/bnnrepro/artifacts/"
                )
            artifacts[drawn[artifact_id].stem] = (study, drawn[artifact_id])
    return artifacts


ARTIFACTS = _implemented_artifacts()


def study_run_metrics(wildcards):
    """metrics.json of every run of a study at the scale of the tidy CSV asked for."""
    return [run.file(layout.RUN_METRICS) for run in STUDIES[wildcards.study].runs(wildcards.scale)]


def study_metrics(wildcards):
    """The tidy metrics CSV of a study at its scale."""
    return layout.study_metrics_file(study_scale(wildcards.study), wildcards.study)


def all_study_metrics():
    """The tidy metrics CSV of every enabled study at its scale (the report says which runs carry no data)."""
    return [layout.study_metrics_file(study_scale(name), name) for name in STUDIES]


def study_run(wildcards):
    """(study, run) of a training job's wildcards; a folder that is no run of this DAG is an error that says why."""
    folder = layout.run_folder(wildcards.scale, wildcards.study, wildcards.run)
    if folder in RUNS:
        return RUNS[folder]
    if wildcards.study not in STUDIES:
        why = f"study {wildcards.study!r} is not among config 'studies' ({', '.join(STUDIES)})"
    elif wildcards.scale != study_scale(wildcards.study):
        why = (
            f"study {wildcards.study!r} runs at scale {study_scale(wildcards.study)!r} (config 'scale', 'study_scales')"
        )
    else:
        why = f"its grid at {wildcards.scale!r} has no run {wildcards.run!r} (config/studies/{wildcards.study}.yaml)"
    raise WorkflowError(
        f"{folder}: not a run of this workflow: {why}. Ask for a run the grid has: "
        f"`python -m bnnrepro.fidelity targets {wildcards.study} --scale {wildcards.scale}` lists them"
    )


def run_data(wildcards):
    return study_run(wildcards)[1].data_file(REAL_DATA)


INPUT_LISTS = {}
"""{name: files} of the input lists that this DAG's jobs declare (bnnrepro.input_lists), for rule `input_list`."""


def listed(kind, files):
    """The input list of `files`, declared in their place: one input for Snakemake's scheduler to check instead of
    dozens, made again (and so rerunning the job) whenever one of them is newer than it."""
    name = input_list_name(kind, files)
    INPUT_LISTS[name] = sorted(set(files))
    return layout.input_list_file(name)


def listed_files(wildcards):
    """The files of input list `wildcards.name`."""
    if wildcards.name not in INPUT_LISTS:
        raise WorkflowError(
            f"{layout.input_list_file(wildcards.name)}: no job of this DAG reads that input list "
            f"(it is made for the jobs that declare it); ask for a result file instead"
        )
    return INPUT_LISTS[wildcards.name]


def method_module(study, run):
    """The module of a run's method (its study's variant names the method)."""
    return training_inputs.method_module(study, run)


def train_code(wildcards):
    """Source files the training job runs, as an input list: a code change reruns exactly the runs it affects."""
    return training_code_list(*study_run(wildcards))


def training_code_list(study, run):
    return listed("train_code", training_inputs.training_code(study, run, record=DAG_RECORD))


def evaluation_code(wildcards):
    """Source files an evaluation job runs (the entry point, the run's method, the evaluation's own module) and its
    declaration (config/evaluations/<name>.yaml), as an input list: editing one declaration reruns only its jobs."""
    return evaluation_code_list(*study_run(wildcards), wildcards.evaluation)


def evaluation_code_list(study, run, evaluation):
    modules = ["bnnrepro.evaluations.__main__", method_module(study, run), declared_evaluation(evaluation).code]
    files = source_files(*modules, record=DAG_RECORD)
    return listed("evaluation_code", [*files, str(declaration_file(evaluation).relative_to(project_root()))])


def evaluation_data(wildcards):
    """The prepared files of the datasets an evaluation reads besides its run's (config/evaluations/<name>.yaml `data`):
    a download's offline stand-in below the `paper` scale, the real data at `paper`."""
    return list(extra_data_files(wildcards.evaluation, wildcards.scale, REAL_DATA).values())


def evaluation_data_arguments(wildcards):
    """`--data DATASET=FILE` for each of those datasets, shell-quoted."""
    files = extra_data_files(wildcards.evaluation, wildcards.scale, REAL_DATA)
    return " ".join(f"--data {shlex.quote(f'{name}={path}')}" for name, path in files.items())


def data_code(wildcards):
    generator_module = dataset(wildcards.dataset).generator.split(":")[0]
    return source_files("bnnrepro.data.__main__", generator_module, record=DAG_RECORD)


def data_configs(wildcards):
    """The Hydra dataset option (and the files it extends) whose values a generated instance takes by default, if the
    dataset has one (a dataset no training run reads, e.g. Lorenz before its study, may have none)."""
    if not (project_root() / "config/train/dataset" / f"{wildcards.dataset}.yaml").is_file():
        return []
    return composed_files([f"dataset={wildcards.dataset}"], groups=("dataset",))


def registry_entry(wildcards):
    """A dataset's registry entry as JSON (and, for a packaged dataset, the version of the package that ships it):
    a changed entry (generator, source, options) or package remakes its data."""
    entry = dataset(getattr(wildcards, "dataset", None) or wildcards.download)
    version = {"package": entry.package_version()} if hasattr(entry, "package_version") else {}
    return json.dumps({**dataclasses.asdict(entry), **version}, sort_keys=True)


DOWNLOAD_NAMES = "|".join(entry.name for entry in downloads())
PACKAGED_NAMES = "|".join(entry.name for entry in packaged()) or "^$"


def download_code(step):
    """Source files of a download's or packaged dataset's `prepare`, `standin` or `source` step."""

    def code(wildcards):
        step_module = getattr(dataset(wildcards.download), step).split(":")[0]
        return source_files("bnnrepro.data.__main__", step_module, record=DAG_RECORD)

    return code


def data_mirror():
    """The mirror base URL for downloads ('' for the canonical URLs), shell-quoted."""
    return shlex.quote(config.get("data_mirror") or "")


def prepared_datasets():
    """The datasets of config 'datasets', ready for their loaders: a download's real data at the `paper`
    scale (or where config 'real_data' names it) and its stand-in below it; a packaged dataset's data; a generated
    dataset's instance with the paper's values and seed 0."""
    files = []
    for name in config["datasets"]:
        try:
            entry = dataset(name)
        except KeyError as err:
            raise WorkflowError(f"config 'datasets': {err.args[0]}") from None
        if hasattr(entry, "generator"):
            files.append(data_path(name, {}, 0))
        else:
            files.append(prepared_file(name, SCALE, REAL_DATA))
    return files


def run_override_list(wildcards):
    """Hydra overrides of one training job: what it trains (rule `train` adds where, device and threads)."""
    study, run = study_run(wildcards)
    return [
        *training_inputs.training_overrides(study, run, wildcards.scale, REAL_DATA),
        f"run_dir='{run.folder}'",
    ]


def run_overrides(wildcards):
    """Hydra overrides of one training job, shell-quoted."""
    return " ".join(shlex.quote(o) for o in run_override_list(wildcards))


def train_configs(wildcards):
    """The config/train files a training job composes (5-10: not worth an input list, as they vary from run to run):
    editing one reruns exactly the runs that read it."""
    return training_inputs.training_configs(*study_run(wildcards), wildcards.scale, REAL_DATA)


def gpu_visible():
    """Whether this machine shows a GPU (nvidia-smi lists one, and CUDA_VISIBLE_DEVICES does not hide it);
    a cheap check that keeps torch out of the DAG build."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1") or shutil.which("nvidia-smi") is None:
        return False
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return listing.returncode == 0 and "GPU" in listing.stdout


TRAINING_GPUS = 1 if config["device"] == "cuda" or (config["device"] == "auto" and gpu_visible()) else 0


def check_device():
    """device=cuda on a machine without a GPU stops the run before any job starts: a job would fail only after
    Snakemake deleted the outputs it replaces. Called by onstart (not in a dry run, nor when nothing is to be done);
    not on a cluster, whose jobs run on nodes other than this one."""
    if workflow.local_exec and config["device"] == "cuda" and not gpu_visible():
        raise WorkflowError(
            "config 'device' is cuda, but this machine shows no GPU (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES "
            "hides it); run with --config device=auto (a GPU where there is one, else the CPU) or device=cpu, or on a "
            "machine with a GPU (a cluster profile runs the jobs on its GPU nodes)"
        )


def training_gpus(wildcards):
    """GPU jobs declare gpu=1: the profile's `resources: gpu=N` caps how many run at once on a workstation,
    and the SLURM plugin turns it into --gpus=1. A job then uses the GPU it is given (CUDA_VISIBLE_DEVICES)."""
    return TRAINING_GPUS


def evaluation_gpus(wildcards):
    """An evaluation declared with `device: run` (config/evaluations/<name>.yaml) computes on the run's device, as its
    training did; the others on the CPU."""
    return TRAINING_GPUS if declared_evaluation(wildcards.evaluation).device == "run" else 0


def study_artifacts(name):
    """{stem: declaration} of the artifacts study `name` draws."""
    return {stem: impl for stem, (study, impl) in ARTIFACTS.items() if study.name == name}


def artifact_results(study, implementation):
    """{'metrics': [CSV], 'data': [...], 'runs': [...]}: the results one artifact is drawn from."""
    results = {}
    # the caption claims of a figure drawn from runs may rest on the study's metrics too
    if implementation.uses == "metrics" or (implementation.claims_module and study_runs(study)):
        results["metrics"] = [layout.study_metrics_file(study_scale(study.name), study.name)]
    if implementation.uses == "data":
        results["data"] = list(implementation.data_files)
    if implementation.uses == "runs":
        results["runs"] = artifact_run_files(study, implementation)
    return results


def artifact_run_files(study, implementation, name=None):
    """The file an artifact draws from each run of its study whose method it names, on the datasets it names if
    any (e.g. config.yaml, or eval/<evaluation>.npz, which rule `evaluate` makes), or the file `name` of those runs."""
    return [run.file(name or implementation.run_file) for run in study_runs(study) if implementation.reads(run)]


def artifact_evaluation(implementation):
    """The evaluation whose arrays an artifact draws (config/evaluations/<name>.yaml), or None."""
    return layout.evaluation_name(implementation.run_file) if implementation.uses == "runs" else None


def drawing_inputs(name):
    """What the job drawing a study's artifacts reads: the code of each drawing module and of its caption claims,
    the catalog, the configuration it reads (`drawing_configs`) and the results each artifact is drawn from. An edit
    to one of them redraws the study's artifacts."""
    artifacts = study_artifacts(name).values()
    modules = {impl.module for impl in artifacts} | {impl.claims_module for impl in artifacts if impl.claims_module}
    code = source_files("bnnrepro.artifacts.__main__", *sorted(modules), record=DAG_RECORD)
    results = {f for impl in artifacts for files in artifact_results(STUDIES[name], impl).values() for f in files}
    # an artifact drawn from run files says whether they trained on stand-ins, which their metrics.json say
    results |= {
        f
        for impl in artifacts
        if impl.uses == "runs"
        for f in artifact_run_files(STUDIES[name], impl, layout.RUN_METRICS)
    }
    return {"code": code + project_paths([CATALOG]), "configs": drawing_configs(name), "results": sorted(results)}


@cache
def drawing_configs(name):
    """The configuration a study's drawing job reads, as an input list: the study's file and the dataset registry
    (with their schemas), the declarations of the evaluations its artifacts draw from, and the config/train files
    its runs compose at every scale (tables and notes state their settings; some describe a method variant as it
    composes at the default scale, `Study.variant_config`)."""
    study = STUDIES[name]
    evaluations = {artifact_evaluation(impl) for impl in study_artifacts(name).values()}
    configs = [studies_dir() / f"{name}.yaml", registry_file()]
    configs += [declaration_file(e) for e in evaluations if e is not None]
    files = {
        *(str(path.relative_to(project_root())) for path in configs),
        *project_paths([STUDY_SCHEMA, REGISTRY_SCHEMA]),
        *(
            f
            for scale in SCALES
            for run in study.runs(scale)
            for f in training_inputs.training_configs(study, run, scale, REAL_DATA)
        ),
    }
    return listed("draw_configs", files)


def drawing_outputs(name):
    """Every file of a study's artifacts; figures' PDFs and tables' CSVs are in Snakemake's report."""
    outputs = []
    for stem, impl in study_artifacts(name).items():
        files = layout.artifact_files(impl.output, stem)
        shown = "pdf" if impl.output == "figure" else "csv"
        category = "Figures" if impl.output == "figure" else "Tables"
        labels = {"artifact": stem}
        outputs.append(report(files.pop(shown), caption="../report/artifact.rst", category=category, labels=labels))
        outputs += [*files.values(), layout.artifact_checks_file(stem)]
    return outputs


def drawing_arguments(name):
    """`python -m bnnrepro.artifacts` arguments: the study and scale, then each artifact's results and files."""
    arguments = ["--study", name, "--scale", study_scale(name)]
    for stem, impl in study_artifacts(name).items():
        arguments += ["--artifact", impl.artifact_id]
        for option, files in artifact_results(STUDIES[name], impl).items():
            arguments += [f"--{option}", *files]
        arguments += ["--outputs", *layout.artifact_files(impl.output, stem).values()]  # in ARTIFACT_FORMATS order
        arguments += ["--checks", layout.artifact_checks_file(stem)]
    return " ".join(map(shlex.quote, arguments))


def drawn_studies():
    """The enabled studies that draw at least one artifact (each gets its rule `draw_<study>`)."""
    return sorted({study.name for study, _ in ARTIFACTS.values()})


def artifact_files(kind):
    """Output files of every implemented figure ('figure') or table ('table')."""
    return [
        path
        for stem, (_, implementation) in ARTIFACTS.items()
        if implementation.output == kind
        for path in layout.artifact_files(kind, stem).values()
    ]


def artifact_checks_files():
    """The checks (caption claims, table cells) of every implemented figure and table."""
    return [layout.artifact_checks_file(stem) for stem in ARTIFACTS]


def result_files():
    """Every file the workflow makes at the studies' scales: data, runs, tidy metrics, figures, tables, the report."""
    runs = [run for study in STUDIES.values() for run in study_runs(study)]
    return sorted(
        {
            *prepared_datasets(),
            *(run.data_file(REAL_DATA) for run in runs),
            *(run.file(name) for run in runs for name in layout.TRAINING_OUTPUTS.values()),
            *(layout.study_metrics_file(study_scale(study), study) for study in STUDIES),
            *(f for _, impl in ARTIFACTS.values() if impl.uses == "data" for f in impl.data_files),
            *(f for study, impl in ARTIFACTS.values() if impl.uses == "runs" for f in artifact_run_files(study, impl)),
            *evaluation_extra_data(),
            *job_input_lists(),
            *artifact_files("figure"),
            *artifact_files("table"),
            *artifact_checks_files(),
            *(
                path
                for table in own_study_tables()
                for path in layout.artifact_files("table", Path(table).stem).values()
            ),
            layout.report_manifest_file(SCALE),
            layout.REPORT_PDF,
            layout.REPORT_TYPST,
        }
    )


def job_input_lists():
    """The input lists of every training run, of every evaluation that an artifact draws from and of every drawing
    job (results: `results/<scale>/timestamps.json` must record them, so that a DVC checkout keeps them older than
    the jobs that read them)."""
    lists = {training_code_list(study, run) for study in STUDIES.values() for run in study_runs(study)}
    lists |= {drawing_configs(name) for name in drawn_studies()}
    for study, impl in ARTIFACTS.values():
        if (evaluation := artifact_evaluation(impl)) is not None:
            lists |= {evaluation_code_list(study, run, evaluation) for run in study_runs(study) if impl.reads(run)}
    return lists


def evaluation_extra_data():
    """The extra datasets (config/evaluations/<name>.yaml `data`) of the evaluations that artifacts draw from."""
    needed = {(artifact_evaluation(impl), study_scale(study.name)) for study, impl in ARTIFACTS.values()}
    return [f for name, scale in needed if name is not None for f in extra_data_files(name, scale, REAL_DATA).values()]


def own_study_tables():
    """The results table (CSV) of each enabled study of your own (`paper: own`)."""
    return [
        layout.artifact_file("table", "csv", layout.study_summary_stem(name))
        for name, study in STUDIES.items()
        if study.is_own
    ]


def report_code(module):
    """Source files of a report step, and the catalog it reads."""
    return source_files(module, record=DAG_RECORD) + project_paths([CATALOG])


def draw_function_files():
    """The files of the functions that draw the figures and tables: the manifest names each function by its
    line, so that a change to one of them rebuilds the manifest."""
    return project_paths({impl.source_file for _, impl in ARTIFACTS.values()})


EXECUTION_SETTINGS = ("device", "threads_per_job", "job_server")
"""Config keys that say where and how fast jobs compute, not what: no rerun trigger (each run records the device it
ran on)."""


def report_config():
    """The run's configuration but its EXECUTION_SETTINGS, shell-quoted, for the report's provenance."""
    return shlex.quote(json.dumps({k: v for k, v in config.items() if k not in EXECUTION_SETTINGS}, sort_keys=True))


def stop_rate_limiter_timers():
    """Cancel the reevaluation timers that Snakemake's job-rate limiter leaves behind (one threading.Timer per
    scheduling pass, `max-jobs-per-timespan`): they are not daemon threads, so with the profiles' long timespans the
    process would otherwise wait up to that long before exiting. Called by the Snakefile's onsuccess and onerror."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


OUTDATED_REPORT = f"{layout.REPORTS}/report-outdated.pdf"


def set_aside_outdated_report():
    """The report never outlives its inputs: when a run fails, Snakemake has deleted the outputs of its failed jobs,
    which reports/report.pdf may still show. If a result the report reads is missing, the report is moved to
    reports/report-outdated.pdf (kept for reference, not lost); the next run that succeeds writes reports/report.pdf
    again. Called by onerror."""
    pdf = Path(layout.REPORT_PDF)
    if not pdf.exists():
        return
    missing = [f for f in result_files() if f not in (layout.REPORT_PDF, layout.REPORT_TYPST) and not Path(f).exists()]
    if missing:
        os.replace(pdf, OUTDATED_REPORT)
        logger.warning(
            f"{layout.REPORT_PDF} showed results that are missing now ({len(missing)}, e.g. {missing[0]}): moved to "
            f"{OUTDATED_REPORT}; the next run that succeeds writes {layout.REPORT_PDF} again"
        )


def drop_superseded_report():
    """After a run that succeeds, reports/report.pdf is current: a report set aside as outdated goes. Called by
    onsuccess."""
    Path(OUTDATED_REPORT).unlink(missing_ok=True)


JOB_SERVERS = []
"""The job server of this run while it runs."""


def start_job_server():
    """Start the job server (bnnrepro.job_server, config `job_server`) and give this run's jobs its socket: each job
    then starts as a fork of one process that has imported torch, pandas and matplotlib. Called by onstart; a job
    that starts before the server is ready runs as a plain process."""
    if not config["job_server"]:
        return
    log = Path(layout.log_file("job_server", "server"))
    try:  # the thread counts of train and evaluate jobs, most of the jobs
        server = StartedServer(log, server_environment(config["threads_per_job"]))
    except ValueError as error:
        logger.warning(f"No job server, every job starts a new Python process: {error}")
        return
    os.environ[ADDRESS_VARIABLE] = server.address
    JOB_SERVERS.append(server)


def stop_job_server():
    """Stop the job server when the run ends (onsuccess, onerror)."""
    os.environ.pop(ADDRESS_VARIABLE, None)
    while JOB_SERVERS:
        JOB_SERVERS.pop().stop()

# The workflow's adapter to its plan: the DAG is modelled in plain Python (bnnrepro.pipeline.plan, tested without
# Snakemake); the rules take their input functions and file lists from PLAN, and the Snakefile's hooks call the named
# steps of bnnrepro.pipeline.run_steps.
import os
import sys

from pathlib import Path

# The workflow and every job run this project's own code (its src/), whichever copy of the project the environment
# was installed from: a copied or moved project runs, and records as its results' sources, the code it holds.
PROJECT_SOURCE = str(Path(workflow.main_snakefile).parent.resolve() / "src")
if sys.path[:1] != [PROJECT_SOURCE]:
    sys.path.insert(0, PROJECT_SOURCE)
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != PROJECT_SOURCE:
    os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [PROJECT_SOURCE, os.environ.get("PYTHONPATH")])))

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

from bnnrepro import cpu_arithmetic, layout
from bnnrepro.data.fetch import staging_folder
from bnnrepro.pipeline import run_steps
from bnnrepro.pipeline.input_lists import NAME_PATTERN as INPUT_LIST_NAME
from bnnrepro.pipeline.method_tasks import KNOWN_TASKS
from bnnrepro.pipeline.plan import Plan, PlanError
from bnnrepro.pipeline.result_timestamps import record, workflow_source_files
from bnnrepro.pipeline.run_results import replan
from bnnrepro.pipeline.sources import source_files
from bnnrepro.report import INVOCATION_VARIABLE, invocation_record
from bnnrepro.report import files as report_files
from bnnrepro.train_configs import SCALES

validate(config, schema="../schemas/config.schema.yaml")
config.setdefault("study_scales", {})

# The command that runs the workflow, for the report's provenance (bnnrepro.report.manifest); a job's own
# snakemake (a cluster job) keeps the one of the snakemake that started it. Every job inherits it: a command with
# thousands of targets is recorded with the middle ones left out (invocation_record), or no job could start.
os.environ.setdefault(INVOCATION_VARIABLE, invocation_record(["snakemake", *sys.argv[1:]]))

# The CPU arithmetic of every job (bnnrepro.cpu_arithmetic): its variables are read when torch loads, so they are set
# here, for this process, the job server it starts and every job (a cluster job's snakemake sets them again).
os.environ.update(cpu_arithmetic.environment(config["cpu_arithmetic"]))

SCALE = config["scale"]
SCALE_NAMES = "|".join(SCALES)
TIMESTAMPS = layout.timestamps_file(SCALE)
# Job priorities: of the jobs ready to run, Snakemake's scheduler starts those of higher priority first and then those
# with the largest inputs, so without them data preparation (whose only inputs are its code) ran last. Data first,
# then evaluations, whose figures wait on them.
DATA_PRIORITY, EVALUATION_PRIORITY = 2, 1

# The plan reads and checks the configuration (a cluster job's own Snakemake trusts the main process's override
# checks); the main process then checks the prepared data the runs read, and finds what it changes in the tree before
# Snakemake decides what runs (run_steps.TreeRepairs, made by the first input function Snakemake asks: `planned`).
try:
    PLAN = Plan.build(
        config,
        Path(layout.DAG_CACHE),
        check_study_overrides=workflow.is_main_process,
        configfiles=workflow.overwrite_configfiles,
    )
    if workflow.is_main_process:
        REPAIRS = run_steps.TreeRepairs(Path(TIMESTAMPS), PLAN.verify_data())
except PlanError as err:
    raise WorkflowError(str(err)) from None

OWN_STUDY_NAMES = "|".join(PLAN.own_studies) or "^$"
TRAINING_GPUS = run_steps.training_gpus(config["device"])
JOB_SERVER = run_steps.RunJobServer(config["job_server"], config["threads_per_job"])


def planned(method):
    """An input function of the plan whose errors read as the workflow's (a run or input list no job has). The first
    one Snakemake asks, while it builds the DAG and before it decides what runs, makes the tree repairs (on disk, or in
    a dry run in Snakemake's view only: run_steps.TreeRepairs)."""

    def input_function(wildcards):
        if workflow.is_main_process:
            view = (workflow.dryrun, workflow.iocache.mtime, workflow.dag.forcefiles)
            for message in REPAIRS.make(*view):
                logger.info(message)
        try:
            return method(wildcards)
        except PlanError as err:
            raise WorkflowError(str(err)) from None

    return input_function


@planned
def every_result(wildcards):
    """The default target's inputs, every result (PLAN.result_files); asked for while Snakemake builds the DAG, before
    it decides what runs: results that are not the current runs' own (a DVC checkout, a copy) are planned again
    (bnnrepro.pipeline.run_results.replan)."""
    if workflow.is_main_process and (replanned := replan(PLAN.stale_results(), workflow.dag)):
        logger.info(replanned)
    return PLAN.result_files()


def evaluation_gpus(wildcards):
    """An evaluation declared with `device: run` computes on the run's device, as its training did; others on the CPU."""
    return TRAINING_GPUS if PLAN.evaluation_on_run_device(wildcards) else 0


def drawing_outputs(name):
    """Every file of a study's artifacts; figures' PDFs and tables' CSVs are in Snakemake's report."""
    outputs = []
    for path, category in PLAN.drawing_outputs(name):
        if category:
            labels = {"artifact": Path(path).stem}
            path = report(path, caption="../report/artifact.rst", category=category, labels=labels)
        outputs.append(path)
    return outputs


def own_study_outputs():
    """The files of rule own_study by name (`table_csv`, ...); its tables' CSVs and figures' PDFs are in Snakemake's
    report."""
    outputs = {}
    for name, files in report_files.own_study_files().items():
        for extension, path in files.items():
            if extension in ("csv", "pdf"):
                path = report(
                    path,
                    caption="../report/metrics.rst",
                    category="Studies of your own",
                    labels={"study": "{study}", "result": name},
                )
            outputs[f"{name}_{extension}"] = path
    return outputs


def on_start():
    """Named steps before the first job (not in a dry run, nor when nothing is to be done)."""
    try:
        run_steps.check_device(config["device"], local=workflow.local_exec)
    except RuntimeError as err:
        raise WorkflowError(str(err)) from None
    if message := JOB_SERVER.start():
        logger.warning(message)


def on_end(succeeded):
    """Named steps when the run ends: the job server stops; the report is current, or set aside if it shows results
    that are missing now; the job-rate limiter's timers go."""
    JOB_SERVER.stop()
    if succeeded:
        run_steps.drop_superseded_report()
    elif message := run_steps.set_aside_outdated_report(PLAN.result_files()):
        logger.warning(message)
    run_steps.stop_rate_limiter_timers()

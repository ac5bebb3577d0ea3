"""The results layout: every file and folder the workflow writes, named once (the reports' in bnnrepro.report.files).

Paths are relative to the project root (the Snakemake working directory). A function called with values
returns a concrete path; its defaults are Snakemake wildcards, so the same function called without them
returns the pattern a rule declares (`run_folder()` is `results/{scale}/runs/{run}`).

    data/raw/<download>/                        a download's raw files (DVC stage data/dvc.yaml:fetch@<download>)
    results/data/<download>.npz                 a download prepared for its loader ...
    results/data/<download>-standin.npz         ... and its offline stand-in (below the `paper` scale)
    results/data/<dataset>/<k>=<v>+...+seed=<seed>.npz    an instance of a generated dataset
    results/<scale>/runs/<variant>~<digest>/<dataset>/<hparams>/seed=<seed>/    a training run, shared by every
        study that plans it (the digest is of the method variant's overrides: `run_folder_name`): config.yaml,
        metrics.json, checkpoint.pt, train.log, resume.pt (while it runs), eval/<evaluation>.npz
    results/<scale>/<study>/metrics.csv         the study's tidy metrics
    results/<scale>/report_manifest.json        what the report shows, with provenance
    results/<scale>/timestamps.json             the results' recorded time order (bnnrepro.pipeline.result_timestamps)
    reports/...                                 figures, tables, their checks and the PDF (bnnrepro.report.files)
    logs/<step>/...                             one log per job
    .snakemake/bnnrepro/dag_cache.json          DAG-time work kept between snakemake calls (bnnrepro.pipeline.dag_cache)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RESULTS, REPORTS, LOGS, RAW_DATA = "results", "reports", "logs", "data/raw"
PREPARED_DATA = f"{RESULTS}/data"
INPUT_LISTS = f"{RESULTS}/inputs"
RUNS = "runs"

# Separator of key=value pairs in data instance and run folder names. Not a comma: Snakemake passes a remote job's
# wildcards comma-separated (`--target-jobs rule:a=1,b=2`), so a comma inside a value breaks cluster jobs.
PAIR_SEPARATOR = "+"
STANDIN_SUFFIX = "-standin"

# The files of a run folder: what a training job writes (resume.pt is removed when the run ends).
RUN_CONFIG, RUN_METRICS, RUN_CHECKPOINT, RUN_LOG, RUN_RESUME = (
    "config.yaml",
    "metrics.json",
    "checkpoint.pt",
    "train.log",
    "resume.pt",
)
TRAINING_OUTPUTS = {"metrics": RUN_METRICS, "config": RUN_CONFIG, "checkpoint": RUN_CHECKPOINT}
"""The declared outputs of a training job, by the key of the `train` rule's outputs. Not train.log, which the job
appends to and Snakemake leaves alone (it would restore a failed job's copy from before the job), nor resume.pt."""

EVALUATIONS = "eval"


# --- data ----------------------------------------------------------------------------------------------------


def raw_download_folder(download: str = "{download}") -> str:
    return f"{RAW_DATA}/{download}"


def prepared_download_file(download: str = "{download}", standin: bool = False) -> str:
    return f"{PREPARED_DATA}/{download}{STANDIN_SUFFIX if standin else ''}.npz"


def download_declaration_file(download: str = "{download}") -> str:
    """A download's registry entry as its prepare job reads it (rule declare_download): rewritten only when the entry
    changes, so that a new checksum or option prepares again and retrains its runs in the same call."""
    return f"{PREPARED_DATA}/{download}.declared.json"


def generated_data_file(dataset: str = "{dataset}", instance: str = "{instance}") -> str:
    return f"{PREPARED_DATA}/{dataset}/{instance}.npz"


def is_standin(path: str | Path) -> bool:
    """Whether a prepared data file is a download's offline stand-in."""
    return Path(path).name.endswith(f"{STANDIN_SUFFIX}.npz")


def input_list_file(name: str = "{name}") -> str:
    """A list of files that jobs declare as one input (bnnrepro.pipeline.input_lists): results/inputs/<name>.txt."""
    return f"{INPUT_LISTS}/{name}.txt"


# --- runs ----------------------------------------------------------------------------------------------------


def study_folder(scale: str = "{scale}", study: str = "{study}") -> str:
    return f"{RESULTS}/{scale}/{study}"


def run_id(method: str, dataset: str, hparams: str, seed: int) -> str:
    """A run's id within its study (the `run` of its tidy metrics): '<method>/<dataset>/<hparams>/seed=<seed>'."""
    return f"{method}/{dataset}/{hparams}/seed={seed}"


def run_method(run_id: str) -> str:
    """The method variant of a run id (`run_id`'s first part)."""
    return run_id.split("/", 1)[0]


VARIANT_DIGEST = "~"
"""Between a method variant's name and the digest of its overrides in a run folder's name."""


def run_folder_name(run_id: str, variant_digest: str) -> str:
    """A run's folder below `results/<scale>/runs/`: its id with the digest of its method variant's overrides after the
    variant's name, so that studies planning the same run (same variant overrides, dataset, hyperparameters and seed)
    share its folder whatever they are called, and studies giving one variant name other overrides do not."""
    variant, rest = run_id.split("/", 1)
    return f"{variant}{VARIANT_DIGEST}{variant_digest}/{rest}"


def run_folder(scale: str = "{scale}", run: str = "{run}") -> str:
    """A run's folder (`run`: its `run_folder_name`)."""
    return f"{RESULTS}/{scale}/{RUNS}/{run}"


def run_file(name: str, scale: str = "{scale}", run: str = "{run}") -> str:
    """A file of a run folder: one of the RUN_* names, or an `evaluation_file`."""
    return f"{run_folder(scale, run)}/{name}"


def evaluation_file(evaluation: str = "{evaluation}") -> str:
    """The arrays of an evaluation of a finished run, relative to the run folder."""
    return f"{EVALUATIONS}/{evaluation}.npz"


def evaluation_name(name: str) -> str | None:
    """The evaluation whose `evaluation_file` is `name` (a file name relative to a run folder), else None."""
    match = re.fullmatch(rf"{EVALUATIONS}/([^/]+)\.npz", name)
    return match.group(1) if match else None


@dataclass(frozen=True)
class RunPath:
    """A path in a run folder, split into the scale's folder that holds `runs/`, the run folder's name and the file."""

    scale_folder: Path
    run: str  # the run folder's name (`run_folder_name`)
    file: str  # relative to the run folder; '' for the folder itself

    @property
    def folder(self) -> Path:
        return self.scale_folder / RUNS / self.run

    @property
    def run_id(self) -> str:
        """The run's id in its studies (`run_id`): the folder's name without the variant's digest."""
        variant, rest = self.run.split("/", 1)
        return f"{variant.rsplit(VARIANT_DIGEST, 1)[0]}/{rest}"

    def sibling(self, name: str) -> Path:
        """Another file of the same run folder."""
        return self.folder / name


_SEED_FOLDER = re.compile(r"seed=-?\d+")


def parse_run_path(path: str | Path) -> RunPath:
    """Split a path made by `run_file` or `run_folder` (absolute, or below any folder) into its parts."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part == RUNS and len(parts) >= i + 5 and _SEED_FOLDER.fullmatch(parts[i + 4]):
            return RunPath(Path(*parts[:i]), "/".join(parts[i + 1 : i + 5]), "/".join(parts[i + 5 :]))
    raise ValueError(
        f"{path} is not in a run folder: expected "
        f".../{RUNS}/<variant>~<digest>/<dataset>/<hparams>/seed=<seed>[/<file>], as bnnrepro.layout.run_file names it"
    )


# --- per scale -----------------------------------------------------------------------------------------------


def study_metrics_file(scale: str = "{scale}", study: str = "{study}") -> str:
    return f"{study_folder(scale, study)}/metrics.csv"


def report_manifest_file(scale: str = "{scale}") -> str:
    return f"{RESULTS}/{scale}/report_manifest.json"


def timestamps_file(scale: str = "{scale}") -> str:
    return f"{RESULTS}/{scale}/timestamps.json"


# --- logs and the workflow's own records -------------------------------------------------------------


DAG_CACHE = ".snakemake/bnnrepro/dag_cache.json"
"""The record of work done while the DAG is built (bnnrepro.pipeline.dag_cache): the studies whose overrides composed
(bnnrepro.pipeline.studies.check_overrides) and the artifacts' declarations (bnnrepro.artifacts.declarations), so that
neither is redone on every `snakemake` call while the files they read stay the same."""


def log_file(step: str, name: str) -> str:
    """The log of one job of a workflow step: logs/<step>/<name>.log."""
    return f"{LOGS}/{step}/{name}.log"

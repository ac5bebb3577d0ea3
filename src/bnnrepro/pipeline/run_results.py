"""The runs' results as the plan sees them: the identity a training job is given, and the results that are not the
current runs' own (`bnnrepro.run_identity`), as methods of the plan (`bnnrepro.pipeline.plan.Plan` mixes this class
in; it provides `config`, `record`, `runs`, `run_of`, `train_configs` and `run_overrides`).

Snakemake decides by file times and its own records of the jobs it ran. Neither sees results that `dvc checkout`
or a copy put in place of others: the records describe the results they replaced. So before the DAG is built, every
finished run's metrics.json is checked against the run as planned now (`stale_results`): a result that names
other inputs than the run's current ones, another run, or another config, or that lacks a key or a number, is
planned again (`replan`: as Snakemake's --forcerun would, when the workflow builds its default target, every
result).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from bnnrepro import layout
from bnnrepro.pipeline import training_inputs
from bnnrepro.pipeline.dag_cache import cached_each
from bnnrepro.run_identity import digest_of, result_problem

if TYPE_CHECKING:
    from bnnrepro.pipeline.studies import Run


class RunResults:
    """The identity of each run as planned, and the check of its result against it."""

    config: Mapping
    record: Path | None

    def run_identity(self, wildcards) -> str:
        """The job's `identity` overrides: the digest of its code, and of its code, config/train files, overrides
        and CPU arithmetic (what Snakemake reruns it for; its data is checked apart, by `verify_data`)."""
        code, inputs = self._planned_identity(wildcards)
        return f"identity.code={code} identity.inputs={inputs}"

    def _planned_identity(self, wildcards) -> tuple[str, str]:
        """The digests of a run's code, and of its code, config files, overrides and CPU arithmetic."""
        study, run = self.run_of(wildcards)
        code_files = tuple(training_inputs.training_code(study, run, record=self.record))
        known = self.__dict__.setdefault("_code_digests", {})  # runs of one method share their code: one digest
        if code_files not in known:
            known[code_files] = digest_of(code_files)
        code = known[code_files]
        inputs = digest_of(
            self.train_configs(wildcards), code, self.run_overrides(wildcards), self.config["cpu_arithmetic"]
        )
        return code, inputs

    def stale_results(self) -> dict[str, str]:
        """{metrics.json: why it is not the current run's own result} of the runs whose metrics.json exists. What a
        result records is read again only where its metrics.json or config.yaml changed (kept in the DAG record)."""
        runs = {run.file(layout.RUN_METRICS): run for _, run in self.runs.values()}
        signatures = {file: _signature(file, runs[file].file(layout.RUN_CONFIG)) for file in runs}
        recorded = cached_each(
            self.record, f"run_results/{self.config['scale']}",
            {file: signature for file, signature in signatures.items() if signature[0] is not None},
            lambda file: _recorded(file, runs[file]),
        )  # fmt: skip
        stale = {}
        for file, read in recorded.items():
            if read is None:
                continue  # unreadable: the readers' own check names it with its fix (`bnnrepro.files.read_json`)
            problem, inputs = read
            if problem is None and inputs != self._planned_identity(_wildcards(runs[file]))[1]:
                problem = "it was made from other code, config files or settings than the run's current ones"
            if problem is not None:
                stale[file] = problem
        return stale


def _wildcards(run: Run) -> SimpleNamespace:
    return SimpleNamespace(scale=run.scale, run=run.folder_name)


def _signature(*files: str) -> list:
    """Size and times of each of `files` (None for a missing one)."""
    stats = [Path(file).stat() if Path(file).exists() else None for file in files]
    return [None if s is None else [s.st_size, s.st_mtime_ns, s.st_ctime_ns] for s in stats]


def _recorded(file: str, run: Run) -> list[str | None] | None:
    """[why the result in `file` is not `run`'s own (None when it is), the inputs digest it records] (a list, as the
    DAG record gives it back); None for a file that is no JSON."""
    try:
        result = json.loads(Path(file).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    problem = result_problem(result, run.folder, Path(run.file(layout.RUN_CONFIG)))
    return [problem, None if problem else result["identity"].get("inputs")]


def replan(stale: Mapping[str, str], dag) -> str | None:
    """Add the `stale` results to the files Snakemake's `dag` forces to rerun (as --forcerun would), before it decides
    what runs; the message for the workflow's log, None with nothing stale."""
    if not stale:
        return None
    dag.forcefiles.update(stale)
    listed = "; ".join(f"{file}: {why}" for file, why in list(stale.items())[:5]) + (" ..." if len(stale) > 5 else "")
    return f"{len(stale)} run results do not match their runs as planned now, planned again: {listed}"

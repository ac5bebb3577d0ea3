"""Whether the code that trained a collected study's batches is the current code: each batch's recorded code digests
(`bnnrepro.fidelity.code_digest`, per method and dataset) against those the current checkout gives for the same
runs. The fidelity document shows, per study, the batches whose code has changed since, the commands that rerun and
keep them again, and where the study's tables mix runs trained by different code for the same method.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from bnnrepro.fidelity.code_digest import batch_runs, code_digests
from bnnrepro.fidelity.collect import PROVENANCE_FILE, grid_part
from bnnrepro.fidelity.kept_files import KEPT_RESULTS, provenance_batches
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import Run, StudyError, load_study


def stale_keys(folder: Path, current_tree: Path | None = None) -> list[dict]:
    """Per batch of a collected study's folder, in order: its commit, its recorded `code_digests` of the runs still
    kept from it (None when it has none; a method and dataset whose runs a later batch replaced is that batch's), the
    current tree's digests of those runs (`current_tree`: the project root by default) and the method/dataset keys
    whose digest differs (or that the current code no longer has), with the batch's runs."""
    tree = current_tree or project_root()
    batches = []
    for batch, runs in _kept_batches(folder):
        kept = {"/".join(run.split("/")[:2]) for run in runs}  # run ids begin with the key: method/dataset/...
        recorded = batch.get("code_digests")
        recorded = None if recorded is None else {key: recorded[key] for key in recorded if key in kept}
        try:
            current = code_digests(tree, batch["study"], batch["scale"], runs)
        except StudyError:  # the study is gone: none of its code is current
            current = {}
        stale = sorted(key for key in recorded or {} if current.get(key) != recorded[key])
        batches.append({"commit": batch["commit"], "digests_commit": batch.get("code_digests_commit"),
                        "recorded": recorded, "current": current, "stale": stale, "runs": runs})  # fmt: skip
    return batches


def kept_batch_runs(folder: Path, commit: str) -> set[str]:
    """The run ids of the batch(es) of a collected study's folder trained at `commit` (as its provenance names it);
    an error naming the batches' commits where none was trained at `commit`."""
    if not (folder / PROVENANCE_FILE).is_file():
        raise SystemExit(f"no batch is kept in {folder}: `python -m bnnrepro.fidelity collect` keeps one")
    batches = _kept_batches(folder)
    if commit not in (commits := [batch["commit"] for batch, _ in batches]):
        raise SystemExit(f"no batch in {folder} was trained at {commit}; its batches are at {', '.join(commits)}")
    return {run for batch, runs in batches if batch["commit"] == commit for run in runs}


def _kept_batches(folder: Path) -> list[tuple[dict, list[str]]]:
    """Each batch's provenance in a collected study's folder, with its run ids."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    return list(zip(provenance_batches(provenance), batch_runs(folder), strict=True))


def rerun_command(study_name: str, scale: str, kept: str, commit: str, batch: list[Run], runs: list[Run]) -> str:
    """The `snakemake ... $(python -m bnnrepro.fidelity targets STUDY ... --batch COMMIT)` that trains `runs`, the
    stale ones of the batch `batch` trained at `commit` and kept in `kept`, again: the batch's runs of the methods
    and datasets of `runs` (named where those are not all of the batch's), so no run of another batch or grid is
    trained with them."""
    keep = ""
    for key in ("method", "dataset"):
        taken = {getattr(run, key) for run in runs}
        if taken != {getattr(run, key) for run in batch}:
            keep += f" {key}={','.join(sorted(taken))}"
    kept_option = "" if kept == KEPT_RESULTS else f" --kept {shlex.quote(kept)}"
    return _train_command(study_name, scale, f"{keep} --batch {commit}{kept_option}")


def _train_command(study_name: str, scale: str, selection: str) -> str:
    """`snakemake ... $(python -m bnnrepro.fidelity targets STUDY <selection>) --config ...` at `scale`."""
    scales = shlex.quote(f"study_scales={{{study_name}: {scale}}}")
    scale_option = "" if scale == "paper" else f" --scale {scale}"
    targets = f"$(python -m bnnrepro.fidelity targets {study_name}{scale_option}{selection})"
    return f"snakemake --cores 2 {targets} --config {scales}"


def code_section(folder: Path, current_tree: Path | None = None) -> list[str]:
    """The Markdown paragraph on the code of a collected study's batches: which batches' code has changed since for
    which methods, with the commands that rerun them, and the methods whose kept runs mix code digests."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    study_name, scale = provenance["study"], provenance["scale"]
    batches = stale_keys(folder, current_tree)
    kept_in = _shown(folder.parents[1], current_tree or project_root())
    out_option = "" if kept_in == KEPT_RESULTS else f" --out {shlex.quote(kept_in)}"
    lines = []
    unrecorded = [batch["commit"] for batch in batches if batch["recorded"] is None]
    if unrecorded:
        lines += [f"Code: no code digest recorded for the batch(es) at {_listed(unrecorded)} "
                  "(`python -m bnnrepro.fidelity backfill-digests` records them), so whether their code is the "
                  "current one is not known.", ""]  # fmt: skip
    stale = [batch for batch in batches if batch["stale"]]
    if not stale and not unrecorded:
        lines += ["Code: every batch was trained by the current code (its code digest is the current one).", ""]
    runs = {run.id: run for run in _study_runs(study_name, scale)}
    for batch in stale:
        at = f"`{batch['commit']}`" + (
            f" (digests of `{batch['digests_commit']}`, which committed what it ran)" if batch["digests_commit"] else ""
        )
        keys = _methods_on_datasets(batch["stale"])
        lines += [f"**Stale code:** the batch at {at} was trained by code that has changed since for {keys} "
                  "(its code digest differs from the current code's), so their rows may differ from what the "
                  "current code gives (any edit of those files changes the digest, also one that leaves the numbers "
                  "alone). To rerun and keep them:", ""]  # fmt: skip
        members = [runs[run_id] for run_id in batch["runs"] if run_id in runs]
        rerun = [run for run in members if _key(run) in batch["stale"]]
        if rerun:
            keep = f"python -m bnnrepro.fidelity collect . --studies {study_name} --scale {scale} --add{out_option}"
            command = rerun_command(study_name, scale, kept_in, batch["commit"], members, rerun)
            lines += ["```bash", command, keep, "```", ""]
        else:
            lines += ["(none of its runs is a run of the current study; collect the study again)", ""]
    by_grouping: dict[tuple, list[str]] = {}
    for key, commits in mixed_code(batches).items():
        by_grouping.setdefault(tuple(map(tuple, commits)), []).append(key)
    for commits, keys in by_grouping.items():
        groups = " and ".join(_listed(list(group)) for group in commits)
        lines += [f"**Mixed code: batches at {groups}** trained {_methods_on_datasets(keys)} by different code (their "
                  "code digests differ): the study's rows and claims of these methods mix the two.", ""]  # fmt: skip
    return lines


def kept_run_ids(folder: Path) -> set[str]:
    """The run ids of every batch kept in a collected study's folder."""
    return {run for _, runs in _kept_batches(folder) for run in runs}


def missing_runs_section(folder: Path) -> list[str]:
    """The Markdown paragraph on the runs of the study's current grid at the kept scale that no kept batch has (a
    grid grown since, e.g. more seeds), with the command that trains and keeps them; nothing where there are none."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    study_name, scale = provenance["study"], provenance["scale"]
    runs = _study_runs(study_name, scale)
    missing = [run for run in runs if run.id not in kept_run_ids(folder)]
    if not missing:
        return []
    keep = f"python -m bnnrepro.fidelity collect . --studies {study_name} --scale {scale} --add"
    return [f"**Not yet run:** {grid_part(missing, runs)} are in the study's grid but in no kept batch (left out of "
            "its batches, or added to the grid since), so its rows and claims rest on the kept runs alone. To run and "
            "keep them:", "", "```bash", _train_command(study_name, scale, " --missing"), keep, "```", ""]  # fmt: skip


def _methods_on_datasets(keys: list[str]) -> str:
    """'`udn`, `dun_10` on spirals' for method/dataset keys (per method where their datasets differ)."""
    datasets: dict[str, list[str]] = {}
    for key in sorted(keys):
        method, _, dataset = key.partition("/")
        datasets.setdefault(method, []).append(dataset)
    if len({tuple(names) for names in datasets.values()}) == 1:
        return f"{', '.join(f'`{method}`' for method in datasets)} on {', '.join(next(iter(datasets.values())))}"
    return "; ".join(f"`{method}` on {', '.join(names)}" for method, names in datasets.items())


def mixed_code(batches: list[dict]) -> dict[str, list[list[str]]]:
    """{method/dataset key: the batches' commits grouped by recorded digest} for the keys whose runs in different
    batches were trained by different code."""
    by_key: dict[str, dict[str, list[str]]] = {}
    for batch in batches:
        for key, digest in (batch["recorded"] or {}).items():
            by_key.setdefault(key, {}).setdefault(digest, []).append(batch["commit"])
    return {key: list(groups.values()) for key, groups in by_key.items() if len(groups) > 1}


def _shown(path: Path, root: Path) -> str:
    """`path` relative to the project `root` where it is under it, else in full."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()


def _key(run: Run) -> str:
    return f"{run.method}/{run.dataset}"


def _listed(commits: list[str]) -> str:
    return ", ".join(f"`{commit}`" for commit in dict.fromkeys(commits))


def _study_runs(study_name: str, scale: str) -> list[Run]:
    try:
        return load_study(study_name).runs(scale)
    except StudyError:
        return []

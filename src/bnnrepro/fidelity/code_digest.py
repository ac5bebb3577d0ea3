"""The code digest of a run's training: a sha256 over the content of the files its training job declares as its code and
config inputs (`bnnrepro.pipeline.training_inputs`: the source files `python -m bnnrepro.train` runs for the run's
method and the config/train files its Hydra composition reads), so that committed results say which code made them
and the fidelity document can tell the batches whose code has changed since.

A tree is a folder holding the project's files at some commit: the current checkout, or a git worktree of an older
commit (`git worktree add /tmp/wt-<commit> <commit>`). The list of a tree's files is made by that tree's own code, in
a Python process whose `bnnrepro` is the tree's (PYTHONPATH=<tree>/src, run from the tree), not by the current code
reading the old files: which modules a run imports is a property of the code at that commit (an import added since
did not run then), and the listing functions read the package they belong to (`bnnrepro.pipeline.sources` walks the
imports from its own folder, `bnnrepro.methods` finds the method modules beside itself), so reading another tree
takes a process that imports it. A tree from before `bnnrepro.pipeline.training_inputs` (or
`bnnrepro.training_inputs`) lists them as rule `train` then did, from the same functions (`source_files`,
`METHOD_MODULES`, `config_method_name`, `composed_files`; unchanged since the first paper-scale batch). A change of
the listing rule itself therefore changes the digests too, which errs on the side of calling a batch stale.

The digest of a set of files is the sha256 of the lines '<sha256 of the file's bytes>  <project-relative path>', one
per file in path order (the format of `sha256sum`): renaming a file changes it, as does editing one.

Batches record `code_digests` in their provenance (`bnnrepro.fidelity.collect`): {"<method>/<dataset>": digest} over
the files of the batch's runs of that method variant on that dataset (all runs of one method and dataset declare the
same files; the dataset is in the key because the dataset's config and protocol files are inputs)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import bnnrepro
from bnnrepro.run_identity import digest_of


def _training_inputs(study_name: str, scale: str, run_ids: list[str]) -> dict[str, list]:
    """{run id: [method/dataset key, sorted files]} of the runs `run_ids` of the study at `scale`, listed by the
    code of the tree this runs in; runs that are not (or no longer) runs of the study are left out. Self-contained:
    `tree_inputs` runs its source in another tree's Python process."""
    try:  # the workflow's machinery in one package, bnnrepro.pipeline
        from bnnrepro.pipeline.studies import load_study
        from bnnrepro.pipeline.training_inputs import training_code, training_configs
    except ImportError:  # a tree from before: its modules at the package's top level
        from bnnrepro.studies import load_study

        try:
            from bnnrepro.training_inputs import training_code, training_configs
        except ImportError:  # a tree from before bnnrepro.training_inputs: rule `train`'s inputs as it then wrote them
            from bnnrepro.methods import METHOD_MODULES, config_method_name
            from bnnrepro.sources import source_files
            from bnnrepro.train_configs import composed_files

            def training_code(study, run):
                method = study.method_variants[run.method]["method"]
                return source_files("bnnrepro.train", METHOD_MODULES[config_method_name(method)])

            def training_configs(study, run, scale):
                return composed_files([*study.overrides(run), f"scale={scale}"])

    study = load_study(study_name)
    runs = {run.id: run for run in study.runs(scale)}
    return {
        run_id: [
            f"{runs[run_id].method}/{runs[run_id].dataset}",
            sorted({*training_code(study, runs[run_id]), *training_configs(study, runs[run_id], scale)}),
        ]
        for run_id in run_ids
        if run_id in runs
    }


def _is_current(tree: Path) -> bool:
    """Whether `tree` is the checkout this process imports `bnnrepro` from and reads its config from."""
    from bnnrepro.paths import project_root

    package = Path(bnnrepro.__file__).resolve().parent
    return package == (tree / "src" / "bnnrepro").resolve() and project_root() == tree.resolve()


def tree_inputs(tree: Path, study_name: str, scale: str, run_ids: Iterable[str]) -> dict[str, list]:
    """`_training_inputs` as the code of `tree` gives them: in this process for the current checkout, else in a
    Python process that imports the tree's `bnnrepro` (see the module's docstring)."""
    run_ids = list(dict.fromkeys(run_ids))
    if _is_current(tree):
        return _training_inputs(study_name, scale, run_ids)
    script = "\n".join([
        "import json, sys", inspect.getsource(_training_inputs),
        "print(json.dumps(_training_inputs(*json.loads(sys.stdin.read()))))",
    ])  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(tree.resolve() / "src"), "BNNREPRO_ROOT": str(tree.resolve())}
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps([study_name, scale, run_ids]), cwd=tree, env=environment,
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: listing the training inputs of {study_name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def files_digest(tree: Path, files: Iterable[str]) -> str:
    """The sha256 of '<sha256 of the file>  <path>' lines, one per file of `tree` in path order
    (`bnnrepro.run_identity.digest_of`, which the training runs record too)."""
    return digest_of(files, root=tree)


def run_digest(tree: Path, study_name: str, scale: str, run_id: str) -> str:
    """The code digest of one run's training in `tree`."""
    inputs = tree_inputs(tree, study_name, scale, [run_id])
    if run_id not in inputs:
        raise KeyError(f"{tree}: {run_id} is not a run of study {study_name} at {scale} there")
    return files_digest(tree, inputs[run_id][1])


def code_digests(tree: Path, study_name: str, scale: str, run_ids: Iterable[str]) -> dict[str, str]:
    """{"<method>/<dataset>": code digest} of the runs `run_ids` in `tree` (the union of their files per key); runs
    that the tree's study does not have are left out."""
    files: dict[str, set[str]] = {}
    for key, listed in tree_inputs(tree, study_name, scale, run_ids).values():
        files.setdefault(key, set()).update(listed)
    return {key: files_digest(tree, files[key]) for key in sorted(files)}


def is_project_tree(tree: Path) -> bool:
    """Whether `tree` holds the project's sources (a checkout or worktree), whose digests can be computed."""
    return (tree / "src" / "bnnrepro" / "train.py").is_file() and (tree / "config" / "train").is_dir()


def batch_runs(folder: Path) -> list[list[str]]:
    """The run ids of each batch of a collected study's folder, in the order of its provenance's batches (one batch:
    every run of its metrics.csv; several: batches.csv says which)."""
    import pandas as pd

    from bnnrepro.fidelity.kept_files import BATCHES_FILE, METRICS_FILE, PROVENANCE_FILE, provenance_batches

    batches = provenance_batches(json.loads((folder / PROVENANCE_FILE).read_text()))
    if len(batches) == 1:
        return [list(dict.fromkeys(pd.read_csv(folder / METRICS_FILE)["run"]))]
    membership = pd.read_csv(folder / BATCHES_FILE)
    return [list(membership[membership["batch"] == index]["run"]) for index in range(len(batches))]


def commit_tree(commit: str, repository: Path) -> Path:
    """A git worktree of `commit` of `repository`, /tmp/wt-<commit> (added unless it is there)."""
    tree = Path(f"/tmp/wt-{commit}")
    if not tree.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=repository, check=True,
                       capture_output=True)  # fmt: skip
    return tree


def backfill(folder: Path, repository: Path, tries: int = 20) -> list[str]:
    """Record `code_digests` for each batch of a collected study's folder that has none, computed in a worktree of
    the batch's recorded commit of `repository` (`commit_tree`); what was filled, as lines.

    A batch trained in a tree with uncommitted work may record a commit that does not yet hold its study or some of
    its runs: then the digests are those of the first later commit (of up to `tries` on the ancestry path to HEAD)
    that holds them all, the commit that committed what the batch ran, recorded as `code_digests_commit`. A batch
    whose commit is not one of the repository's (e.g. 'unknown') is left without, and named."""
    from bnnrepro.fidelity.kept_files import PROVENANCE_FILE, provenance_batches

    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    batches = provenance_batches(provenance)
    done, added = [], []
    for batch, runs in zip(batches, batch_runs(folder), strict=True):
        if batch.get("code_digests"):
            continue
        known = subprocess.run(["git", "cat-file", "-e", f"{batch['commit']}^{{commit}}"], cwd=repository)
        if known.returncode != 0:
            done.append(f"{folder}: batch at {batch['commit']} is not a commit of {repository}; left without")
            continue
        for commit in _commits_from(batch["commit"], repository)[:tries]:
            if not Path(f"/tmp/wt-{commit}").is_dir():
                added.append(commit)
            tree = commit_tree(commit, repository)
            inputs = tree_inputs(tree, batch["study"], batch["scale"], runs) if _has_study(tree, batch) else {}
            if len(inputs) == len(set(runs)):
                batch["code_digests"] = code_digests(tree, batch["study"], batch["scale"], runs)
                if commit != batch["commit"]:
                    batch["code_digests_commit"] = commit
                done.append(f"{folder}: batch at {batch['commit']}, {len(batch['code_digests'])} digests at {commit}")
                break
        else:
            done.append(f"{folder}: batch at {batch['commit']}: no commit of {tries} from it holds all its runs")
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")
    for commit in added:  # the worktrees it added, removed again
        subprocess.run(["git", "worktree", "remove", "--force", f"/tmp/wt-{commit}"], cwd=repository, check=True)
    return done


def _has_study(tree: Path, batch: dict) -> bool:
    return (tree / "config" / "studies" / f"{batch['study']}.yaml").is_file()


def _commits_from(commit: str, repository: Path) -> list[str]:
    """`commit`, then the commits on the ancestry path from it to HEAD, oldest first (short hashes)."""
    listed = subprocess.run(["git", "rev-list", "--abbrev-commit", "--reverse", "--ancestry-path", f"{commit}..HEAD"],
                            cwd=repository, capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return [commit, *listed]

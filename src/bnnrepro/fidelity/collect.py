"""Keep what a tree's finished runs of a study at one scale show, as small files: their tidy metrics, the study's
tables (ours beside the published numbers, by the same functions the workflow draws them with), the check of each
caption claim (`bnnrepro.artifacts.claims`) and where and how long they ran. No checkpoint or array is kept: the
fidelity document is generated from these files alone.

The runs may be a part of the study's grid (those that finished, e.g. the ones a CPU reaches at `paper`); the
provenance says which part. A later batch, trained in another tree, is added to what is kept (`add=True`): the kept
metrics of the runs the tree does not hold stay, and the tables and claims are drawn again from all of them.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from bnnrepro import layout
from bnnrepro.aggregate import tidy_metrics
from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.artifacts.registry import implementations
from bnnrepro.artifacts.render import compare_with_published
from bnnrepro.cpu_arithmetic import cpu_model
from bnnrepro.fidelity.code_digest import code_digests, is_project_tree
from bnnrepro.fidelity.kept_files import (
    BATCHES_FILE,
    CLAIM_COLUMNS,
    CLAIMS_FILE,
    METRICS_FILE,
    PROVENANCE_FILE,
    REPRODUCTION_FILE,
    TABLES,
    provenance_batches,
)
from bnnrepro.pipeline.studies import Run, load_study


def commit_of(tree: Path) -> str:
    """The short commit of the git checkout `tree`, or a note that it is none."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown (not a git checkout)"


def finished_runs(tree: Path, study_name: str, scale: str) -> list[Run]:
    return [run for run in load_study(study_name).runs(scale) if (tree / run.file(layout.RUN_METRICS)).is_file()]


def grid_part(runs: list[Run], all_runs: list[Run]) -> str:
    """Which part of the grid `runs` are: 'the whole grid', or the values each varied key takes."""
    if len(runs) == len(all_runs):
        return f"the whole grid, {len(runs)} runs"
    values: dict[str, set] = {}
    for run in runs:
        for key, value in [("method", run.method), ("dataset", run.dataset), *run.hparams, ("seed", run.seed)]:
            values.setdefault(key.rsplit(".", 1)[-1], set()).add(value)
    listed = "; ".join(f"{key} in {{{', '.join(map(str, sorted(v, key=_value_order)))}}}" for key, v in values.items())
    return f"{len(runs)} of the grid's {len(all_runs)} runs: {listed}"


def _value_order(value: object) -> tuple:
    """Numbers in numeric order, then the other values by their text."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return (not number, value if number else str(value))


def artifact_context(tree: Path, runs: list[Run], scale: str, artifact_id: str, metrics: Path) -> ArtifactContext:
    """The context the workflow gives the artifact's draw function, over those of `runs` whose file it draws has been
    made, with the tidy metrics `metrics` always set (claims about a figure drawn from runs may rest on the metrics
    too)."""
    declaration = declarations(scale)[artifact_id]
    candidates = [tree / run.file(declaration.run_file) for run in runs if declaration.reads(run)]
    run_files = [path for path in candidates if path.is_file()]
    study = runs[0].study
    return ArtifactContext(study, scale, metrics, [tree / f for f in declaration.data_files], run_files)


def collect(
    tree: Path, study_name: str, scale: str, out: Path, wall_seconds: float | None = None, add: bool = False
) -> Path:
    """Write out/<scale>/<study>/ from the study's finished runs in `tree`: metrics.csv, tables/<stem>.csv,
    claims.csv, provenance.json. `wall_seconds`: the batch's wall time, where measured. `add`: keep the runs already
    collected there (earlier batches) beside the tree's (`add_to_kept`)."""
    study = load_study(study_name)
    runs = finished_runs(tree, study_name, scale)
    if not runs:
        raise FileNotFoundError(f"{tree}: no finished run of {study_name} at {scale}; train some first")
    folder = out / scale / study_name
    tidy = tidy_metrics(study_name, scale, tree, runs)
    batch = batch_provenance(tree, study_name, scale, runs, tidy, wall_seconds)
    kept = add_to_kept(folder, tree, study_name, scale, tidy, batch) if add else Kept(tidy, {}, {}, batch, None)
    tidy, kept_rows, kept_tables, provenance = kept.tidy, kept.claim_rows, kept.tables, kept.provenance
    kept_ids = set(tidy["run"])
    runs = [run for run in study.runs(scale) if run.id in kept_ids]
    shutil.rmtree(folder / TABLES, ignore_errors=True)  # the other files are overwritten; findings.yaml is kept
    for reproduced in folder.glob(REPRODUCTION_FILE.format("*")):  # records of the runs kept before
        reproduced.unlink()
    (folder / TABLES).mkdir(parents=True)
    tidy.to_csv(folder / METRICS_FILE, index=False)
    if kept.membership is not None:
        kept.membership.to_csv(folder / BATCHES_FILE, index=False)
    else:
        (folder / BATCHES_FILE).unlink(missing_ok=True)

    drawn, rows = implementations(), []
    for artifact_id in study.artifacts:
        stem = drawn[artifact_id].stem
        if artifact_id in kept_rows:  # drawn from run files only the earlier batch's tree holds: kept as it was
            rows += kept_rows[artifact_id]
            if stem in kept_tables:
                kept_tables[stem].to_csv(folder / TABLES / f"{stem}.csv", index=False)
            continue
        context = artifact_context(tree, runs, scale, artifact_id, folder / METRICS_FILE)
        if drawn[artifact_id].output == "table":
            table = compare_with_published(artifact_id, drawn[artifact_id].draw(context), context.uses_standin())
            table.to_csv(folder / TABLES / f"{stem}.csv", index=False)
        for claim in claims_of(artifact_id):
            rows.append({"artifact": artifact_id, "claim": claim.text, **check(claim, context).record()})
    write_claims(folder, rows)
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")
    return folder


def write_claims(folder: Path, rows: list[dict]) -> None:
    """claims.csv of a kept study: a row per claim, {artifact, claim, holds, status, evidence}."""
    pd.DataFrame(rows, columns=CLAIM_COLUMNS).to_csv(folder / CLAIMS_FILE, index=False)


def batch_provenance(
    tree: Path, study_name: str, scale: str, runs: list[Run], tidy: pd.DataFrame, wall_seconds: float | None
) -> dict:
    """Where and when `runs` (of one tree) ran, which part of the grid they are, how long they trained, and the code
    digest of each method on each dataset (`code_digests`: {"<method>/<dataset>": sha256 of the files its training
    declares as inputs, `bnnrepro.fidelity.code_digest`}; None for a tree that does not hold the project's sources)."""
    train_seconds = tidy[tidy["metric"] == "train_seconds"]["value"]
    digests = code_digests(tree, study_name, scale, [run.id for run in runs]) if is_project_tree(tree) else None
    return {
        "study": study_name, "scale": scale, "commit": commit_of(tree),
        "machine": f"{platform.machine()} ({cpu_model()}), {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "collected": datetime.now(UTC).strftime("%Y-%m-%d"), "runs": len(runs),
        "grid": grid_part(runs, load_study(study_name).runs(scale)), "standin": bool(tidy["standin"].any()),
        "train_seconds": round(float(train_seconds.sum()), 1),
        "longest_run_seconds": round(float(train_seconds.max()), 1), "wall_seconds": wall_seconds,
        "code_digests": digests,
    }  # fmt: skip


@dataclass
class Kept:
    """What a study's kept results become: the tidy metrics; the claims (artifact -> rows) and tables (stem -> table)
    kept as they were; the provenance; which batch each run came from (None: one batch)."""

    tidy: pd.DataFrame
    claim_rows: dict[str, list[dict]]
    tables: dict[str, pd.DataFrame]
    provenance: dict
    membership: pd.DataFrame | None


def add_to_kept(folder: Path, tree: Path, study_name: str, scale: str, tidy: pd.DataFrame, batch: dict) -> Kept:
    """The tidy metrics of the runs kept in `folder` that the tree does not hold, with the tree's `tidy`; the claims
    and tables to keep as they are (artifacts drawn from run files only the earlier trees hold); the provenance of
    all the batches (`batches`: each one's own, in order), whose totals cover them all; and which batch each run came
    from. The tree's runs replace the kept ones of the same id, and a batch none of whose runs is left is dropped (so
    collecting the same tree again replaces its batch).

    An artifact drawn from run files (uses='runs') whose runs are partly in the tree and partly kept cannot be
    drawn from either: that is an error (collect those batches from one tree)."""
    if not (folder / PROVENANCE_FILE).is_file():
        raise FileNotFoundError(f"{folder}: nothing collected yet to add to; collect the first batch without --add")
    earlier = json.loads((folder / PROVENANCE_FILE).read_text())
    kept = pd.read_csv(folder / METRICS_FILE)
    kept = kept[~kept["run"].isin(set(tidy["run"]))]
    study_runs = {run.id: run for run in load_study(study_name).runs(scale)}
    gone = sorted(set(kept["run"]) - set(study_runs))
    if gone:
        raise ValueError(
            f"{folder}: {len(gone)} kept runs are no longer runs of study {study_name} at {scale} (e.g. {gone[0]}): "
            "the study changed since; collect again from a tree that holds every batch"
        )
    kept_runs = [study_runs[run_id] for run_id in dict.fromkeys(kept["run"])]
    tree_runs = [study_runs[run_id] for run_id in dict.fromkeys(tidy["run"])]
    claims = pd.read_csv(folder / CLAIMS_FILE)
    kept_rows, kept_tables = {}, {}
    for artifact_id in load_study(study_name).artifacts:
        declaration = declarations(scale)[artifact_id]
        earlier_only = [run for run in kept_runs if declaration.reads(run)]
        if not earlier_only:
            continue
        if any(declaration.reads(run) for run in tree_runs):
            raise ValueError(
                f"{artifact_id} is drawn from the runs' {declaration.run_file}, and its runs are partly in {tree} and "
                f"partly kept from an earlier batch ({len(earlier_only)}, e.g. {earlier_only[0].id}) whose files "
                "are not there: collect those batches from one tree"
            )
        own = claims[claims["artifact"] == artifact_id]
        kept_rows[artifact_id] = own.astype(object).where(own.notna(), None).to_dict("records")
        table_file = folder / TABLES / f"{declaration.stem}.csv"
        if table_file.is_file():
            kept_tables[declaration.stem] = pd.read_csv(table_file)
    merged = pd.concat([kept, tidy], ignore_index=True)
    batches, membership = batch_membership(folder, earlier, kept, tidy, batch)
    if len(batches) == 1:  # the tree holds every kept run
        return Kept(merged, kept_rows, kept_tables, batch, None)
    merged_ids = set(merged["run"])
    all_runs = [run for run in study_runs.values() if run.id in merged_ids]
    train_seconds = merged[merged["metric"] == "train_seconds"]["value"]
    walls = [b["wall_seconds"] for b in batches]
    provenance = {
        **{key: value for key, value in batch.items() if key != "code_digests"},  # each batch has its own
        "commit": ", ".join(dict.fromkeys(b["commit"] for b in batches)),
        "machine": "; ".join(dict.fromkeys(b["machine"] for b in batches)),
        "collected": ", ".join(dict.fromkeys(b["collected"] for b in batches)),
        "runs": len(all_runs), "grid": batches_grid(all_runs, list(study_runs.values()), membership),
        "standin": any(b["standin"] for b in batches),
        "train_seconds": round(float(train_seconds.sum()), 1),
        "longest_run_seconds": round(float(train_seconds.max()), 1),
        "wall_seconds": sum(walls) if None not in walls else None,
        "batches": batches,
    }  # fmt: skip
    return Kept(merged, kept_rows, kept_tables, provenance, membership)


def batch_membership(
    folder: Path, earlier: dict, kept: pd.DataFrame, tidy: pd.DataFrame, batch: dict
) -> tuple[list[dict], pd.DataFrame]:
    """The batches that still have kept runs, then the tree's (`batch`), and the batch index of every run."""
    if (folder / BATCHES_FILE).is_file():
        membership = pd.read_csv(folder / BATCHES_FILE)
    else:  # one earlier batch: every kept run is its
        membership = pd.DataFrame({"run": list(dict.fromkeys(kept["run"])), "batch": 0})
    membership = membership[membership["run"].isin(set(kept["run"]))]
    left = sorted(set(membership["batch"]))
    earlier_batches = provenance_batches(earlier)
    membership = membership.assign(batch=membership["batch"].map({old: new for new, old in enumerate(left)}))
    own = pd.DataFrame({"run": list(dict.fromkeys(tidy["run"])), "batch": len(left)})
    return [*(earlier_batches[i] for i in left), batch], pd.concat([membership, own], ignore_index=True)


def batches_grid(runs: list[Run], all_runs: list[Run], membership: pd.DataFrame) -> str:
    """'120 of the grid's 515 runs, in 2 batches: 90 runs with method in {...}; 30 runs with ...': the `grid_part` of
    all the kept `runs`, then of each batch's runs that are still kept (`membership`: run -> batch), as the grid is
    now (a batch that was the whole grid when collected may no longer be, and a later batch may replace some of its
    runs; its own provenance keeps what it was)."""
    by_id = {run.id: run for run in runs}
    parts = []
    for _, own in membership.groupby("batch", sort=True):
        part = grid_part([by_id[run_id] for run_id in own["run"]], all_runs)
        parts.append(f"{len(own)} runs with {part.partition(': ')[2] or 'the whole grid'}")
    return f"{grid_part(runs, all_runs).partition(': ')[0]}, in {len(parts)} batches: " + "; ".join(parts)

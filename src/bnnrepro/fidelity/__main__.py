"""`python -m bnnrepro.fidelity targets STUDY [--scale paper] [--batch COMMIT | --missing] [--kept DIR] [KEY=V ...]`:
the metrics.json of the study's runs whose grid values are among those given (and, with --batch, that its batch
trained at COMMIT has, as kept in docs/fidelity/ or DIR; with --missing, that no kept batch has), and the run files
its artifacts draw from them (evaluations such as eval/forecast_paths.npz): Snakemake targets for a part of a grid;
`python -m bnnrepro.fidelity collect TREE --studies S ... [--scale paper] [--wall-seconds N] [--out DIR]`;
`python -m bnnrepro.fidelity document`;
`python -m bnnrepro.fidelity backfill-digests [--scale paper] [--studies S ...]`: record the code digest of each kept
batch that has none, at the batch's commit (`bnnrepro.fidelity.code_digest`);
`python -m bnnrepro.fidelity reproduce TREE --study S [--scale paper] [--kept DIR] [--record]`: whether the tree's runs
give the kept numbers bit for bit (`bnnrepro.fidelity.reproduce`; exit status 1 where one differs; --record keeps the
outcome in the kept provenance.json). See `bnnrepro.fidelity`."""

import argparse
import sys
from pathlib import Path

from bnnrepro import layout
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.fidelity.code_digest import backfill
from bnnrepro.fidelity.collect import PROVENANCE_FILE, collect
from bnnrepro.fidelity.document import fidelity_document
from bnnrepro.fidelity.kept_files import KEPT_RESULTS
from bnnrepro.fidelity.reproduce import record_reproduction, reproduce
from bnnrepro.fidelity.run_selection import selected_runs
from bnnrepro.fidelity.staleness import kept_batch_runs, kept_run_ids
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import Run, load_study

RESULTS = Path(KEPT_RESULTS)
DOCUMENT = Path("docs/fidelity.md")


def target_files(study_name: str, scale: str, runs: list[Run]) -> list[str]:
    """Each run's metrics.json, then the files of it that the study's artifacts draw (`ArtifactDeclaration.reads`)."""
    declared = declarations(scale)
    drawn = [declared[a] for a in load_study(study_name).artifacts if a in declared]
    files = [run.file(layout.RUN_METRICS) for run in runs]
    files += [run.file(d.run_file) for run in runs for d in drawn if d.reads(run) and d.run_file != layout.RUN_METRICS]
    return list(dict.fromkeys(files))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.fidelity")
    commands = parser.add_subparsers(dest="command", required=True)
    targets = commands.add_parser("targets", help="the metrics.json files of a part of a study's grid")
    targets.add_argument("study")
    targets.add_argument("--scale", default="paper")
    targets.add_argument("--batch", metavar="COMMIT", help="only the runs of the batch trained at COMMIT, as kept")
    targets.add_argument("--missing", action="store_true", help="only the runs that no kept batch has")
    targets.add_argument("--kept", type=Path, default=RESULTS, help=f"where --batch is kept (default: {RESULTS})")
    targets.add_argument("keep", nargs="*", help="KEY=V1,V2: keep the runs whose KEY (short name) is one of these")
    keep = commands.add_parser("collect", help="keep a tree's finished runs of some studies under docs/fidelity/")
    keep.add_argument("tree", type=Path, help="a project folder with finished runs at --scale")
    keep.add_argument("--studies", nargs="+", required=True)
    keep.add_argument("--scale", default="paper")
    keep.add_argument("--wall-seconds", type=float, help="the batch's measured wall time")
    keep.add_argument("--add", action="store_true", help="add the tree's runs to those kept (a later batch)")
    keep.add_argument("--out", type=Path, help=f"where to keep them (default: {RESULTS}/ of the project)")
    commands.add_parser("document", help="write docs/fidelity.md from docs/fidelity/")
    digests = commands.add_parser("backfill-digests", help="record the code digest of kept batches that have none")
    digests.add_argument("--scale", default="paper")
    digests.add_argument("--studies", nargs="*", help="(default: every study kept at --scale)")
    again = commands.add_parser("reproduce", help="whether a tree's runs give the kept numbers bit for bit")
    again.add_argument("tree", type=Path, help="a project folder where some kept runs were trained again")
    again.add_argument("--study", required=True)
    again.add_argument("--scale", default="paper")
    again.add_argument("--kept", type=Path, default=RESULTS, help=f"where the study is kept (default: {RESULTS})")
    again.add_argument("--record", action="store_true", help="keep the outcome in the kept provenance.json")
    args, rest = parser.parse_known_args()  # `targets` takes KEY=V filters after its options too
    if args.command != "targets" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    root = project_root()
    if args.command == "targets":
        filters = [*args.keep, *rest]
        if wrong := [item for item in filters if item.startswith("-") or "=" not in item]:
            parser.error(f"unrecognized arguments: {' '.join(wrong)} (the filters of `targets` are KEY=V1,V2)")
        kept = {key: set(values.split(",")) for key, _, values in (item.partition("=") for item in filters)}
        runs = selected_runs(load_study(args.study).runs(args.scale), kept)
        if args.batch:
            batch = kept_batch_runs(root / args.kept / args.scale / args.study, args.batch)
            runs = [run for run in runs if run.id in batch]
        if args.missing:
            folder = root / args.kept / args.scale / args.study
            kept_runs = kept_run_ids(folder) if (folder / PROVENANCE_FILE).is_file() else set()
            runs = [run for run in runs if run.id not in kept_runs]
        print("\n".join(target_files(args.study, args.scale, runs)))
    elif args.command == "collect":
        for study in args.studies:
            out = args.out or root / RESULTS
            print(collect(args.tree.resolve(), study, args.scale, out, args.wall_seconds, args.add))
    elif args.command == "backfill-digests":
        folders = sorted(path.parent for path in (root / RESULTS / args.scale).glob(f"*/{PROVENANCE_FILE}"))
        for folder in folders:
            if not args.studies or folder.name in args.studies:
                print("\n".join(backfill(folder, root)))
    elif args.command == "reproduce":
        folder = root / args.kept / args.scale / args.study
        outcome = reproduce(args.tree.resolve(), args.study, args.scale, folder)
        print(outcome.summary())
        if args.record:
            record_reproduction(folder, outcome, args.tree.resolve())
        sys.exit(1 if outcome.differences else 0)
    else:
        (root / DOCUMENT).write_text(fidelity_document(root / RESULTS, RESULTS.as_posix()))
        print(root / DOCUMENT)


if __name__ == "__main__":
    main()

"""`python -m bnnrepro.fidelity targets STUDY [--scale paper] [KEY=V1,V2 ...]`: the metrics.json of the study's runs
whose grid values are among those given (Snakemake targets for a part of a grid);
`python -m bnnrepro.fidelity collect TREE --studies S ... [--scale paper] [--wall-seconds N] [--out DIR]`;
`python -m bnnrepro.fidelity document`;
`python -m bnnrepro.fidelity backfill-digests [--scale paper] [--studies S ...]`: record the code digest of each kept
batch that has none, at the batch's commit (`bnnrepro.fidelity.code_digest`). See `bnnrepro.fidelity`."""

import argparse
from pathlib import Path

from bnnrepro import layout
from bnnrepro.fidelity.code_digest import backfill
from bnnrepro.fidelity.collect import PROVENANCE_FILE, collect
from bnnrepro.fidelity.document import fidelity_document
from bnnrepro.paths import project_root
from bnnrepro.studies import Run, load_study

RESULTS = Path("docs/fidelity")
DOCUMENT = Path("docs/fidelity.md")


def selected(run: Run, keep: dict[str, set[str]]) -> bool:
    """Whether each grid value of `run` named in `keep` (by its key's short name) is among the kept ones."""
    values = {"method": run.method, "dataset": run.dataset, "seed": run.seed}
    values |= {key.rsplit(".", 1)[-1]: value for key, value in run.hparams}
    unknown = set(keep) - set(values)
    if unknown:
        raise SystemExit(f"unknown grid key(s) {', '.join(sorted(unknown))}; the runs have {', '.join(values)}")
    return all(str(values[key]) in kept for key, kept in keep.items())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.fidelity")
    commands = parser.add_subparsers(dest="command", required=True)
    targets = commands.add_parser("targets", help="the metrics.json files of a part of a study's grid")
    targets.add_argument("study")
    targets.add_argument("--scale", default="paper")
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
    args = parser.parse_args()
    root = project_root()
    if args.command == "targets":
        kept = {key: set(values.split(",")) for key, _, values in (item.partition("=") for item in args.keep)}
        runs = [run for run in load_study(args.study).runs(args.scale) if selected(run, kept)]
        print("\n".join(run.file(layout.RUN_METRICS) for run in runs))
    elif args.command == "collect":
        for study in args.studies:
            out = args.out or root / RESULTS
            print(collect(args.tree.resolve(), study, args.scale, out, args.wall_seconds, args.add))
    elif args.command == "backfill-digests":
        folders = sorted(path.parent for path in (root / RESULTS / args.scale).glob(f"*/{PROVENANCE_FILE}"))
        for folder in folders:
            if not args.studies or folder.name in args.studies:
                print("\n".join(backfill(folder, root)))
    else:
        (root / DOCUMENT).write_text(fidelity_document(root / RESULTS, RESULTS.as_posix()))
        print(root / DOCUMENT)


if __name__ == "__main__":
    main()

"""`python -m bnnrepro.fidelity collect TREE --studies S ... [--scale paper] [--wall-seconds N] [--grid TEXT]` and
`python -m bnnrepro.fidelity document`: see `bnnrepro.fidelity`."""

import argparse
from pathlib import Path

from bnnrepro.fidelity.collect import collect
from bnnrepro.fidelity.document import fidelity_document
from bnnrepro.paths import project_root

RESULTS = Path("docs/fidelity")
DOCUMENT = Path("docs/fidelity.md")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.fidelity")
    commands = parser.add_subparsers(dest="command", required=True)
    keep = commands.add_parser("collect", help="keep a built tree's results of some studies under docs/fidelity/")
    keep.add_argument("tree", type=Path, help="a project folder whose studies are built at --scale")
    keep.add_argument("--studies", nargs="+", required=True)
    keep.add_argument("--scale", default="paper")
    keep.add_argument("--wall-seconds", type=float, help="the batch's measured wall time")
    keep.add_argument("--grid", help="which part of the study's grid ran, where a subset did")
    keep.add_argument("--out", type=Path, help=f"where to keep them (default: {RESULTS}/ of the project)")
    commands.add_parser("document", help="write docs/fidelity.md from docs/fidelity/")
    args = parser.parse_args()
    root = project_root()
    if args.command == "collect":
        for study in args.studies:
            out = args.out or root / RESULTS
            print(collect(args.tree.resolve(), study, args.scale, out, args.wall_seconds, args.grid))
    else:
        (root / DOCUMENT).write_text(fidelity_document(root / RESULTS, RESULTS.as_posix()))
        print(root / DOCUMENT)


if __name__ == "__main__":
    main()

"""`python -m bnnrepro.artifacts ID --study S --scale X [--metrics CSV] [--data F ...] [--runs F ...]
--outputs F ...`.

Draws one artifact and writes its files (figures: PDF, PNG; tables: CSV, Markdown, LaTeX), and checks its caption
claims on the same results (`--checks`: the claims' outcomes and, for a table, how many cells lie within the
published error; the report's verdict is made from them).
"""

import argparse
from pathlib import Path

from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.artifacts.render import compare_with_published, save_checks, save_figure, save_table, stamp_scale
from bnnrepro.job_process import freeze_imported_objects


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.artifacts")
    parser.add_argument("artifact_id")
    parser.add_argument("--study", required=True)
    parser.add_argument("--scale", required=True)
    parser.add_argument("--metrics", type=Path)
    parser.add_argument("--data", type=Path, nargs="*", default=[])
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="a file of each run the artifact draws")
    parser.add_argument("--outputs", type=Path, nargs="+", required=True, help="figure: PDF PNG; table: CSV MD TEX")
    parser.add_argument("--checks", type=Path, required=True, help="JSON of the claims and cells checked")
    args = parser.parse_args()

    drawn = implementation(args.artifact_id)
    context = ArtifactContext(args.study, args.scale, args.metrics, args.data, args.runs)
    result, table = drawn.draw(context), None
    if drawn.output == "figure":
        stamp_scale(result, args.scale, context.uses_standin())
        save_figure(result, *args.outputs)
    else:
        table = compare_with_published(args.artifact_id, result, context.uses_standin())
        save_table(table, *args.outputs)
    outcomes = [(claim, check(claim, context)) for claim in claims_of(args.artifact_id)]
    claims = [{"claim": claim.text, "holds": o.holds, "evidence": o.evidence} for claim, o in outcomes]
    save_checks(args.checks, claims, table)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

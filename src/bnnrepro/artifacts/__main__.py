"""`python -m bnnrepro.artifacts ID --study S --scale X [--metrics CSV] [--data F ...] [--runs F ...]
--outputs F ...`.

Draws one artifact and writes its files (figures: PDF, PNG; tables: CSV, Markdown, LaTeX).
"""

import argparse
from pathlib import Path

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.artifacts.render import compare_with_published, save_figure, save_table
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
    args = parser.parse_args()

    drawn = implementation(args.artifact_id)
    context = ArtifactContext(args.study, args.scale, args.metrics, args.data, args.runs)
    result = drawn.draw(context)
    if drawn.output == "figure":
        save_figure(result, *args.outputs)
    else:
        save_table(compare_with_published(args.artifact_id, result, context.uses_standin()), *args.outputs)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

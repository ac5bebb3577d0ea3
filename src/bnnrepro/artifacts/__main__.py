"""`python -m bnnrepro.artifacts --study S --scale X --artifact ID [--metrics CSV] [--data F ...] [--runs F ...]
--outputs F ... --checks JSON [--artifact ID ...]`.

Draws the artifacts of one study, each after its own `--artifact`, in one process (the workflow's rule
`draw_<study>`: the imports of pandas, matplotlib and seaborn are paid once per study, not once per artifact), and
writes each one's files (figures: PDF, PNG; tables: CSV, Markdown, LaTeX). It also checks each artifact's caption
claims on the same results (`--checks`: the claims' outcomes and, for a table, how many cells lie within the
published error; the report's verdict is made from them).
"""

import argparse
import sys
from pathlib import Path

from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.artifacts.render import compare_with_published, save_checks, save_figure, save_table, stamp_scale
from bnnrepro.pipeline.job_process import freeze_imported_objects

ARTIFACT_OPTION = "--artifact"


def study_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.artifacts", usage=__doc__.split("\n\n")[0])
    parser.add_argument("--study", required=True)
    parser.add_argument("--scale", required=True)
    return parser


def artifact_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m bnnrepro.artifacts ... {ARTIFACT_OPTION}")
    parser.add_argument("artifact_id")
    parser.add_argument("--metrics", type=Path)
    parser.add_argument("--data", type=Path, nargs="*", default=[])
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="a file of each run the artifact draws")
    parser.add_argument("--outputs", type=Path, nargs="+", required=True, help="figure: PDF PNG; table: CSV MD TEX")
    parser.add_argument("--checks", type=Path, required=True, help="JSON of the claims and cells checked")
    return parser


def artifact_arguments(argv: list[str]) -> tuple[list[str], list[list[str]]]:
    """The study's arguments and each artifact's, split at every `--artifact`."""
    starts = [i for i, token in enumerate(argv) if token == ARTIFACT_OPTION]
    if not starts:
        study_parser().error(f"name at least one artifact: {ARTIFACT_OPTION} ID ... --outputs F ... --checks JSON")
    ends = [*starts[1:], len(argv)]
    return argv[: starts[0]], [argv[start + 1 : end] for start, end in zip(starts, ends, strict=True)]


def draw(artifact_id: str, context: ArtifactContext, outputs: list[Path], checks: Path) -> None:
    """Draw one artifact into its files and write the checks of its claims (and table cells)."""
    drawn = implementation(artifact_id)
    result, table = drawn.draw(context), None
    if drawn.output == "figure":
        stamp_scale(result, context.scale, context.uses_standin())
        save_figure(result, *outputs)
    else:
        table = compare_with_published(artifact_id, result, context.uses_standin())
        save_table(table, *outputs)
    outcomes = [(claim, check(claim, context)) for claim in claims_of(artifact_id)]
    claims = [{"claim": claim.text, **outcome.record()} for claim, outcome in outcomes]
    save_checks(checks, claims, table)


def main(argv: list[str] | None = None) -> None:
    study_argv, artifacts_argv = artifact_arguments(sys.argv[1:] if argv is None else argv)
    study = study_parser().parse_args(study_argv)
    for arguments in map(artifact_parser().parse_args, artifacts_argv):
        context = ArtifactContext(study.study, study.scale, arguments.metrics, arguments.data, arguments.runs)
        print(f"drawing {arguments.artifact_id}", flush=True)
        draw(arguments.artifact_id, context, arguments.outputs, arguments.checks)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

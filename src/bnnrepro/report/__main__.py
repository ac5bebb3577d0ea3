"""`python -m bnnrepro.report MANIFEST OUT_PDF`: build the reproduction report PDF, then check its rendered pages
(bnnrepro.report.page_layout) and print what reads wrong as warnings: a layout problem never withholds the report."""

import argparse
import sys
from pathlib import Path

from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.report.page_layout import layout_problems
from bnnrepro.report.typst_report import build_report, printed_figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report")
    parser.add_argument("manifest", type=Path, help="JSON manifest of the artifacts")
    parser.add_argument("out_pdf", type=Path, help="the report PDF (its Typst source is written beside it)")
    args = parser.parse_args()
    build_report(args.manifest, args.out_pdf)
    for problem in layout_problems(args.out_pdf, printed_figures(args.manifest)):
        print(f"warning: {args.out_pdf}: {problem}", file=sys.stderr)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

"""`python -m bnnrepro.report MANIFEST OUT_PDF`: build the reproduction report PDF."""

import argparse
from pathlib import Path

from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.report.typst_report import build_report


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report")
    parser.add_argument("manifest", type=Path, help="JSON manifest of the artifacts")
    parser.add_argument("out_pdf", type=Path, help="the report PDF (its Typst source is written beside it)")
    args = parser.parse_args()
    build_report(args.manifest, args.out_pdf)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

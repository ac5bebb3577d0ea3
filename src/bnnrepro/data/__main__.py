"""Data commands run by the workflow's data rules:

python -m bnnrepro.data generate DATASET INSTANCE OUT   one instance of a synthetic dataset
python -m bnnrepro.data fetch DATASET OUT               download and verify (DVC stage data/dvc.yaml:fetch@DATASET;
                                                        its URL or mirror, else a registry package of its content)
python -m bnnrepro.data prepare DATASET RAW OUT         convert the raw download for its loader (its files checked
                                                        against the registry first; OUT's record of them beside it)
python -m bnnrepro.data standin DATASET OUT             the offline stand-in of a download
python -m bnnrepro.data package DATASET OUT             the arrays of a dataset an installed package ships
"""

import argparse
import os
import sys
from pathlib import Path

from bnnrepro.data.fetch import MIRROR_VARIABLE, SOURCE_VARIABLE, DownloadError, fetch
from bnnrepro.data.raw_content import changed_files, folder_content, raw_record_file, write_raw_record
from bnnrepro.data.registry import dataset, generate_instance, resolve, table_target
from bnnrepro.data.tabular import prepare_packaged
from bnnrepro.pipeline.job_process import freeze_imported_objects


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.data")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="generate one instance of a synthetic dataset")
    gen.add_argument("dataset")
    gen.add_argument("instance", help="data keys and seed, e.g. omega=4+seed=0")
    gen.add_argument("out", type=Path)
    get = sub.add_parser("fetch", help=f"download and verify a dataset (${MIRROR_VARIABLE}, ${SOURCE_VARIABLE})")
    get.add_argument("dataset")
    get.add_argument("out", type=Path)
    prep = sub.add_parser("prepare", help="convert a download for its loader")
    prep.add_argument("dataset")
    prep.add_argument("raw", type=Path)
    prep.add_argument("out", type=Path)
    stand = sub.add_parser("standin", help="write the offline stand-in of a download")
    stand.add_argument("dataset")
    stand.add_argument("out", type=Path)
    pack = sub.add_parser("package", help="write the arrays of a dataset an installed package ships")
    pack.add_argument("dataset")
    pack.add_argument("out", type=Path)
    args = parser.parse_args()

    if args.command == "generate":
        generate_instance(args.dataset, args.instance, args.out)
    elif args.command == "fetch":
        try:
            source = os.environ.get(SOURCE_VARIABLE) or "auto"
            fetch(args.dataset, args.out, os.environ.get(MIRROR_VARIABLE) or None, source)
        except DownloadError as err:
            sys.exit(f"error: {err}")
    elif args.command == "prepare":
        entry = dataset(args.dataset)
        content = folder_content(entry, args.raw)
        if changed := changed_files(entry, args.raw, content):
            sys.exit(f"error: {changed}")
        raw_record_file(args.out).unlink(missing_ok=True)
        resolve(entry.prepare)(args.raw, args.out, **entry.options, **table_target(entry))
        write_raw_record(args.out, content)
    elif args.command == "package":
        prepare_packaged(dataset(args.dataset), args.out)
    else:
        entry = dataset(args.dataset)
        if entry.standin is None:
            sys.exit(f"dataset {entry.name!r} has no stand-in (config/datasets.yaml: real_data: true, no standin:)")
        resolve(entry.standin)(entry, args.out)


if __name__ == "__main__":
    freeze_imported_objects()
    main()

"""What the checks that every `snakemake` call makes before any job cost: repeated YAML keys in the workflow's config
files (bnnrepro.config_keys), the method/data task check of every study (bnnrepro.studies.task_mismatch), and the
record of the workflow's sources against a results record (bnnrepro.result_timestamps: the md5 of every source when
the record is written, which is also what the check at the start costs on a fresh checkout, whose times all differ
from the record's; and that check on an unchanged tree, where sizes and times match).

Usage: python -m benchmarks.startup_checks [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.timing import interleaved_medians, machine
from bnnrepro.config_keys import check_unique_keys, workflow_config_files
from bnnrepro.paths import project_root
from bnnrepro.result_timestamps import outdate_changed_sources, record, source_files
from bnnrepro.studies import available_studies, load_study, task_mismatch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    repeats = parser.parse_args().repeats
    root = project_root()
    studies = [load_study(name) for name in available_studies()]
    sources = source_files(root)
    manifest = Path(tempfile.mkdtemp()) / "timestamps.json"
    record([], manifest, root, sources=sources)
    os.utime(manifest)  # the record newer than every source, as after a run

    steps = {
        "repeated YAML keys": lambda: check_unique_keys(workflow_config_files(root)),
        "method/data tasks, every study at default": lambda: [task_mismatch(s, s.runs("default")) for s in studies],
        "list the sources": lambda: source_files(root),
        "record the sources (md5 of each)": lambda: record([], manifest, root, sources=sources),
        "sources against the record, unchanged tree": lambda: outdate_changed_sources(manifest, sources, root),
    }
    print(machine())
    print(f"{len(workflow_config_files(root))} YAML files, {len(studies)} studies, {len(sources)} source files")
    for name, seconds in interleaved_medians(steps, repeats).items():
        print(f"{name:45s} {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()

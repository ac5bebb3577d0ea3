"""What the checks that every `snakemake` call makes before any job cost: repeated YAML keys in the workflow's config
files (bnnrepro.pipeline.config_keys), the method/data task check of every study
(bnnrepro.pipeline.studies.task_mismatch), and the record of the workflow's sources against a results record
(bnnrepro.pipeline.result_timestamps: the md5 of every source when the record is written, which is also what the
check at the start costs on a fresh checkout, whose times all differ from the record's; and that check on an
unchanged tree, where sizes and times match).

Usage: python -m benchmarks.startup_checks [--repeats N]"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.timing import interleaved_medians, machine
from bnnrepro.paths import project_root
from bnnrepro.pipeline.config_keys import check_unique_keys, workflow_config_files
from bnnrepro.pipeline.result_timestamps import outdate_changed_sources, record, workflow_source_files
from bnnrepro.pipeline.studies import available_studies, load_study, task_mismatch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    repeats = parser.parse_args().repeats
    root = project_root()
    studies = [load_study(name) for name in available_studies()]
    sources = workflow_source_files(root)
    manifest = Path(tempfile.mkdtemp()) / "timestamps.json"
    record([], manifest, root, sources=sources)
    os.utime(manifest)  # the record newer than every source, as after a run

    checkout = manifest.with_name("checkout.json")  # every recorded time other than the tree's, as after a clone
    checkout.write_text(manifest.read_text().replace('"mtime_ns": ', '"mtime_ns": 1'))
    os.utime(checkout)
    steps = {
        "repeated YAML keys": lambda: check_unique_keys(workflow_config_files(root)),
        "method/data tasks, every study at default": lambda: [task_mismatch(s, s.runs("default")) for s in studies],
        "list the sources": lambda: workflow_source_files(root),
        "record the sources (md5 where the time changed)": lambda: record([], manifest, root, sources=sources),
        "sources against the record, unchanged tree": lambda: outdate_changed_sources(manifest, sources, root),
        "sources against the record, fresh clone (md5 each)": lambda: outdate_changed_sources(checkout, sources, root),
    }
    print(machine())
    print(f"{len(workflow_config_files(root))} YAML files, {len(studies)} studies, {len(sources)} source files")
    for name, seconds in interleaved_medians(steps, repeats).items():
        print(f"{name:55s} {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()

"""Input lists: one file that stands for many as a job's inputs (rule `input_list`, workflow/rules/inputs.smk).

`python -m bnnrepro.pipeline.input_lists OUT FILE...` writes OUT, naming each FILE with its md5.

A training job runs about 40 source files; declared one by one, Snakemake's scheduler checks every one of them for
every job that is ready to run at each scheduling pass (on the 500-job default DAG, most of its own CPU). Jobs that
run the same files declare instead one input list, `results/inputs/<kind>-<digest>.txt`, whose inputs are those
files. It is made again whenever one of them is newer than it, and so is every job that declares it: an edit reruns
exactly the jobs that run the edited file, as before.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path

from bnnrepro.files import write_atomic
from bnnrepro.pipeline.job_process import freeze_imported_objects
from bnnrepro.pipeline.result_timestamps import file_md5

NAME_PATTERN = r"[a-z_]+-[0-9a-f]{12}"
"""An input list's name: its kind, then the first 12 hex digits of the sha1 of its sorted file names."""


def input_list_name(kind: str, files: Iterable[str]) -> str:
    """The name of the list of `files` (e.g. 'train_code-3f2a9c01b7d4'): the same files give the same name."""
    digest = hashlib.sha1("\n".join(sorted(set(files))).encode()).hexdigest()
    return f"{kind}-{digest[:12]}"


def write_input_list(files: Iterable[str], path: str | Path) -> None:
    """Write one line per file, 'md5  path' (the format of `md5sum`), in path order."""
    lines = [f"{file_md5(Path(file))}  {file}\n" for file in sorted(set(files))]
    write_atomic(Path(path), lambda tmp: tmp.write_text("".join(lines)))


def main() -> None:
    write_input_list(sys.argv[2:], sys.argv[1])


if __name__ == "__main__":
    freeze_imported_objects()
    main()

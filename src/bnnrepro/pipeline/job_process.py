"""The start of a job's process (`python -m bnnrepro.<entry point>`).

Importing torch, matplotlib and pandas leaves hundreds of thousands of objects that live until the process ends.
Python's cyclic garbage collector scans them again at every full collection while the job runs and once more when
the interpreter exits: about 0.3 s of a training job's 1.3 s start-up (benchmarks/job_overhead.py). Entry points
call `freeze_imported_objects` once their imports are done: `gc.freeze` moves every object alive into the
permanent generation, which the collector no longer scans. Objects made later are collected as before, and no
number changes.
"""

from __future__ import annotations

import gc


def freeze_imported_objects() -> None:
    """Exclude every object alive now (the imported modules' objects) from garbage collection (`gc.freeze`)."""
    gc.freeze()

"""What the step benchmarks share: medians of variants timed in turns, and a line describing the machine."""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable

from bnnrepro.cpu_arithmetic import cpu_model

Step = Callable[[], object]


def interleaved_medians(steps: dict[str, Step], repeats: int) -> dict[str, float]:
    """Median seconds of each step, run in turns (the order alternating each round) after one warm-up each."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        step()
        gc.collect(1)
    for round_ in range(repeats):
        for name in list(steps)[:: 1 if round_ % 2 == 0 else -1]:
            started = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - started)
            gc.collect(1)
    return {name: statistics.median(values) for name, values in times.items()}


def machine() -> str:
    model_name = cpu_model()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model_name}, {os.cpu_count()} cores ({usable} usable), load average {os.getloadavg()[0]:.1f} at start"

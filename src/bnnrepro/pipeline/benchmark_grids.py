"""A benchmark study's grids (a study file's `benchmark:` block, read by `bnnrepro.pipeline.studies.load_study`): its
method variants, each crossed with the benchmark's block grids (datasets and splits) and the variant's tuning values,
and the replacements of its `scales` below `paper`."""

from __future__ import annotations

from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.method_tasks import methods_taking
from bnnrepro.pipeline.study_error import StudyError

BENCHMARK_SCALE_METHODS = "methods"
"""The key of a benchmark's `scales.<scale>` that lists its methods at that scale (the rest replace grid values)."""


def benchmark_methods(benchmark: dict, name: str) -> list[str]:
    """The method variants a benchmark runs: its `methods` list, or with `all` every method that declares its task
    (`bnnrepro.pipeline.method_tasks`, each by its config/train/method/<name>.yaml) less `leave_out`."""
    where = f"config/studies/{name}.yaml: benchmark"
    task, leave_out = benchmark["task"], benchmark.get("leave_out", {})
    taking = methods_taking(task)
    if unknown := sorted(set(leave_out) - set(taking)):
        raise StudyError(f"{where}.leave_out names {unknown}, which do not take {task}; those that do: {taking}")
    if benchmark.get("methods", "all") != "all":
        return list(benchmark["methods"])
    methods = [method for method in taking if method not in leave_out]
    if missing := [m for m in methods if not (train_config_dir() / "method" / f"{m}.yaml").is_file()]:
        raise StudyError(
            f"{where}: methods {missing} take {task} but have no config/train/method/<name>.yaml; list the "
            "benchmark's methods, or leave those out with the reason"
        )
    return methods


def benchmark_grids(benchmark: dict, name: str) -> dict:
    """A benchmark's `grids` and `scales`: one grid per method variant and block grid (`<method>/<grid>`), the block
    grid with the variant's `tuning` values added; below `paper` the benchmark's `scales`: its `methods` there leave
    the other variants out at that scale, `<grid>: {...}` replaces that block grid's values (`dataset: []` leaves
    the block grid out) and `tuning: {method: {key: values}}` a method's tuning values."""
    methods = benchmark_methods(benchmark, name)
    tuning = benchmark.get("tuning", {})
    for key in ("tuning", "unranked"):
        if unknown := sorted(set(benchmark.get(key, {})) - set(methods)):
            raise StudyError(f"config/studies/{name}.yaml: benchmark.{key} names {unknown}, not among its methods")
    blocks = benchmark["grids"]
    grids = {
        f"{method}/{block}": {"method": [method], **grid, **tuning.get(method, {})}
        for method in methods
        for block, grid in blocks.items()
    }
    scales = {}
    for scale, replacement in benchmark.get("scales", {}).items():
        listed, scale_tuning = replacement.get(BENCHMARK_SCALE_METHODS, methods), replacement.get("tuning", {})
        keys = {BENCHMARK_SCALE_METHODS, "tuning", *blocks}
        unknown = sorted({*listed, *scale_tuning} - set(methods)) + sorted(set(replacement) - keys)
        if unknown:
            raise StudyError(
                f"config/studies/{name}.yaml: benchmark.scales.{scale} names {unknown}, neither among its methods "
                f"({', '.join(methods)}) nor its grids ({', '.join(blocks)})"
            )
        scales[scale] = {}
        for method in methods:
            for block in blocks:
                values = {**replacement.get(block, {}), **scale_tuning.get(method, {})}
                left_out = values.get("dataset") == []
                if left_out:
                    del values["dataset"]
                kept = method in listed and not left_out
                scales[scale][f"{method}/{block}"] = {**values, "method": [method] if kept else []}
    return {"grids": grids, "scales": scales}

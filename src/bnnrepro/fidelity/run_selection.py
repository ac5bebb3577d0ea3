"""Which runs of a study a batch command means: `KEY=V1,V2` filters on the grid values, by their keys' short names."""

from __future__ import annotations

from bnnrepro.pipeline.studies import Run


def grid_values(run: Run) -> dict[str, object]:
    """{short key name: value} of a run's grid point (method, dataset, seed and its hyperparameters)."""
    values = {"method": run.method, "dataset": run.dataset, "seed": run.seed}
    return values | {key.rsplit(".", 1)[-1]: value for key, value in run.hparams}


def selected_runs(runs: list[Run], keep: dict[str, set[str]]) -> list[Run]:
    """The runs whose grid values named in `keep` (by their keys' short names) are all among the kept ones; a run
    whose grid lacks a named key is left out. An error for a key no run has."""
    known = {key for run in runs for key in grid_values(run)}
    if unknown := set(keep) - known:
        raise SystemExit(f"unknown grid key(s) {', '.join(sorted(unknown))}; the runs have {', '.join(sorted(known))}")
    return [run for run in runs if all(str(grid_values(run).get(key)) in kept for key, kept in keep.items())]

"""Check that two built trees hold the same numbers: `python scripts/same_results.py BEFORE AFTER [--scale smoke]`.

BEFORE and AFTER are project folders (clones) in which the DAG was built at the same scale. Compared exactly: every
study's tidy metrics (results/<scale>/<study>/metrics.csv, rows matched on study, run and metric; wall-clock seconds
are skipped) and every table (reports/tables/*.csv). Rows present only in AFTER (a method added since BEFORE) are
counted, not failed; rows or files missing from AFTER fail. Exits 1 when any number differs or is missing, else 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

KEY = ["study", "run", "metric"]
CLOCK_METRICS = ("train_seconds", "last_train_seconds")
"""Wall-clock time differs between any two runs of the same code; it is listed, never compared."""


def equal(before: pd.Series, after: pd.Series) -> pd.Series:
    return (before == after) | (before.isna() & after.isna())


def compare_metrics(before: Path, after: Path) -> tuple[int, list[str]]:
    """(failures, report lines) of two tidy metric CSVs."""
    merged = pd.read_csv(before).merge(pd.read_csv(after), on=KEY, how="outer", suffixes=("_before", "_after"),
                                       indicator=True)  # fmt: skip
    only_before = merged[merged["_merge"] == "left_only"]
    only_after = merged[merged["_merge"] == "right_only"]
    both = merged[(merged["_merge"] == "both") & ~merged["metric"].isin(CLOCK_METRICS)]
    differ = both[~equal(both["value_before"], both["value_after"])]
    lines = [f"  {len(only_after)} new rows (runs {sorted(set(only_after['run']))})"] if len(only_after) else []
    lines += [f"  missing: {row.run} {row.metric}" for row in only_before.head(10).itertuples()]
    lines += [
        f"  {row.run} {row.metric}: {row.value_before!r} -> {row.value_after!r}" for row in differ.head(10).itertuples()
    ]
    return len(differ) + len(only_before), lines


def compare_table(before: Path, after: Path) -> tuple[int, list[str]]:
    """(failures, report lines) of two table CSVs; a table that only gained rows (a new method) is compared on the
    rows of BEFORE, matched on the first column."""
    old, new = pd.read_csv(before), pd.read_csv(after)
    if list(old.columns) != list(new.columns):
        return 1, [f"  columns {list(old.columns)} -> {list(new.columns)}"]
    lines = []
    if len(new) != len(old):
        lines.append(f"  rows {len(old)} -> {len(new)}")
        key = old.columns[0]
        new = new[new[key].isin(old[key])].reset_index(drop=True)
        if len(new) != len(old):
            return 1, lines
    differ = ~pd.DataFrame({c: equal(old[c], new[c]) for c in old.columns})
    count = int(differ.to_numpy().sum())
    if count:
        row = int(differ.any(axis=1).to_numpy().argmax())
        lines.append(
            f"  {count} cells differ, first in row {row}: {old.iloc[row].to_dict()} -> {new.iloc[row].to_dict()}"
        )
    return count, lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--scale", default="smoke")
    args = parser.parse_args()
    files = [(compare_metrics, p) for p in sorted((args.before / "results" / args.scale).glob("*/metrics.csv"))]
    files += [(compare_table, p) for p in sorted((args.before / "reports" / "tables").glob("*.csv"))]
    failures = 0
    for compare, path in files:
        relative = path.relative_to(args.before)
        if not (args.after / relative).exists():
            print(f"MISSING {relative}")
            failures += 1
            continue
        count, lines = compare(path, args.after / relative)
        print(f"{'SAME' if count == 0 else 'DIFFERS'} {relative}", *lines, sep="\n")
        failures += count > 0
    print(f"{len(files)} files compared, {failures} differ or are missing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

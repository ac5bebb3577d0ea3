"""A table refused at the door: the problems of a CSV (or of a packaged table's arrays) found when it is prepared,
before any run trains on it, each named with the file, the column and the fix.

- a header that names a column twice (pandas would rename the second one silently);
- a target column the file does not have;
- a feature or target that is not numeric (the first value that is not a number, with its line);
- a missing value (the lines that have one: the pipeline does not impute);
- a constant feature (it carries nothing, and standardising divides by its spread) or a constant target;
- for a classification table, a target with fewer than two classes, or a value its declared `class_labels` lack.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

FIRST_DATA_LINE = 2
"""The file line of the table's first row (line 1 is the header)."""
SHOWN_LINES = 5


class TableError(ValueError):
    """A table that cannot be prepared as it is; the message names the file, the column and the fix."""


def header_names(path: Path, delimiter: str) -> list[str]:
    """The header's fields as written ('' for an empty one): read as a row, since pandas renames a repeated name
    to `name.1` when it reads it as the header."""
    first = pd.read_csv(path, sep=delimiter, header=None, nrows=1, dtype=str, keep_default_na=False)
    return [str(field) for field in first.iloc[0]] if len(first) else []


def check_header(path: Path, header: Sequence[str], target: str, dataset: str) -> None:
    """A repeated column name, or a target the header lacks."""
    if repeated := [name for name, count in Counter(header).items() if count > 1 and name]:
        raise TableError(
            f"dataset {dataset!r}: {path}: the header names column(s) {', '.join(map(repr, repeated))} more than once;"
            " rename them in the file so that each column has its own name"
        )
    if target not in header:
        raise TableError(
            f"dataset {dataset!r}: {path}: no column {target!r} for the target; its columns are "
            f"{', '.join(map(repr, header))}: set `target:` in the dataset's options (config/datasets.yaml) to one"
        )


def _lines(rows: Sequence[int]) -> str:
    shown = ", ".join(str(FIRST_DATA_LINE + row) for row in rows[:SHOWN_LINES])
    return shown + (f" and {len(rows) - SHOWN_LINES} more" if len(rows) > SHOWN_LINES else "")


def check_columns(
    path: Path, table: pd.DataFrame, features: Sequence[str], target: str, dataset: str, classes: bool = False
) -> None:
    """Every feature and the target without missing values, numeric (the target of a classification table, whose
    values are classes, may be text: `classes`) and not constant (a feature) or varying (the target)."""
    where = f"dataset {dataset!r}: {path}"
    for column in [*features, target]:
        values = table[column]
        role = "the target" if column == target else "feature"
        if missing := np.flatnonzero(values.isna().to_numpy()).tolist():
            raise TableError(
                f"{where}: {role} column {column!r} has no value on line(s) {_lines(missing)}; fill them in or "
                "delete those rows in the file (the pipeline does not impute)"
            )
        if classes and column == target:
            continue  # its classes are checked by class_indices
        numbers = pd.to_numeric(values, errors="coerce")
        if not_numbers := np.flatnonzero(numbers.isna().to_numpy()).tolist():
            first = not_numbers[0]
            fix = (
                "write it as numbers (encode a category as numbers or one column per category)"
                if column == target
                else f"leave it out (`drop: [{column}]` in the dataset's options) or write it as numbers"
            )
            raise TableError(
                f"{where}: {role} column {column!r} is not numeric: {values.iloc[first]!r} on line "
                f"{FIRST_DATA_LINE + first}; {fix}"
            )
        if numbers.nunique() < 2:
            what = "nothing to learn" if column == target else "it carries nothing"
            fix = "choose another `target:`" if column == target else f"leave it out (`drop: [{column}]`)"
            raise TableError(f"{where}: {role} column {column!r} has one value, {numbers.iloc[0]!r} ({what}); {fix}")


def numeric_arrays(
    x: object, y: object, dataset: str, source: str, classes: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A packaged table's (x, y) as arrays, x float, checked as `check_columns` checks a CSV's columns (which have no
    names here: numbered from 0); y float, or as given where its values are `classes` (checked by class_indices)."""
    where = f"dataset {dataset!r} ({source})"
    try:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y) if classes else np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TableError(f"{where}: the table is not numeric ({error}); encode its text columns as numbers") from None
    if x.ndim != 2 or y.shape != (len(x),):
        raise TableError(f"{where}: a table needs x [N, D] and y [N]; the source gives x {x.shape}, y {y.shape}")
    targets = [] if classes else [("the target", y)]
    for name, values in [*((f"feature column {j}", x[:, j]) for j in range(x.shape[1])), *targets]:
        if bad := np.flatnonzero(~np.isfinite(values)).tolist():
            raise TableError(
                f"{where}: {name} has {len(bad)} missing or infinite value(s), first in row {bad[0]}; drop those rows "
                "or fill them in the source's options (the pipeline does not impute)"
            )
        if len(values) and np.ptp(values) == 0:
            raise TableError(f"{where}: {name} has one value, {values[0]!r}; leave it out of the source's table")
    return x, y


def class_label(value: object) -> str:
    """A target value as a class label: its text, a whole number written without a decimal point (1.0 -> '1')."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def class_indices(
    values: Sequence, declared: Sequence | Mapping | None, where: str, names: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """A classification target's values as class indices (int64) and the classes' names, by the entry's
    `class_labels`: the values in index order, or {value: name}; None: every value the target takes, sorted (as
    numbers where they all are), named by `names` (a package's target_names) where it gives one per class.
    TableError where a value is not declared or the target takes fewer than two classes."""
    labels = [class_label(value) for value in values]
    if declared is None:
        present = sorted(set(labels), key=lambda label: (_as_number(label) is None, _as_number(label) or 0, label))
        order, shown = present, list(names) if names is not None and len(names) == len(present) else present
    else:
        order, shown = [class_label(value) for value in declared], declared_names(declared)
    if unknown := sorted(set(labels) - set(order)):
        raise TableError(
            f"{where}: the target takes value(s) {', '.join(map(repr, unknown))} that class_labels ({order}) does not "
            "declare; add them to `class_labels:` in config/datasets.yaml, or delete those rows"
        )
    if len(set(labels)) < 2:
        raise TableError(
            f"{where}: the target takes {len(set(labels))} class(es) ({sorted(set(labels))}); a classification table "
            "needs two or more: choose another `target:`, or declare `task: regression`"
        )
    index = {label: i for i, label in enumerate(order)}
    return np.array([index[label] for label in labels], dtype=np.int64), shown


def declared_names(declared: Sequence | Mapping) -> list[str]:
    """The class names an entry's `class_labels` declares, in index order: its values, or the names it maps them to."""
    if isinstance(declared, Mapping):
        return [str(declared[value]) for value in declared]
    return [class_label(value) for value in declared]


def _as_number(label: str) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None

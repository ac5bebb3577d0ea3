"""A table download prepared for bnnrepro.data.tabular's loader and stand-in (`prepare:
bnnrepro.data.csv_tables:prepare_csv`): a CSV or other delimited text, or another format pandas reads (by the file's
suffix, `TABLE_READERS`); which columns are features, and whether the real table has the shape its stand-in
declares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import pandas as pd

from bnnrepro.data.registry import ClassLabels, Download, dataset
from bnnrepro.data.table_checks import TableError, check_columns, check_header, class_indices, header_names
from bnnrepro.data.tabular import write_table

ROW_NAMES = "Unnamed: 0"
"""pandas' name of a first column whose header field is empty: R's write.csv writes its row names there."""

TABLE_READERS: dict[str, Callable[[Path], pd.DataFrame]] = {
    ".json": partial(pd.read_json, convert_dates=False),  # a column named 'date' or '*_time' stays numbers
    ".parquet": pd.read_parquet,  # with pyarrow or fastparquet installed
    ".feather": pd.read_feather,  # with pyarrow
    ".xlsx": pd.read_excel,  # the first sheet, with openpyxl
    ".ods": pd.read_excel,  # with odfpy
}
"""pandas' reader of a table file by its suffix (lower case); a file of any other suffix is delimited text."""


def prepare_csv(
    raw: Path,
    out: Path,
    file: str,
    target: str,
    delimiter: str = ",",
    features: Sequence[str] | None = None,
    drop: Sequence[str] | None = None,
    task: str = "regression",
    class_labels: ClassLabels = None,
) -> None:
    """A table download with a header row (delimited text by `delimiter`, or a format of `TABLE_READERS`): y is
    column `target`; the features are every other column, or the columns `features` names (in that order), or every
    other column but those `drop` names (give one of the two at most).
    With `task` classification (the registry entry's), the target's values are classes: numbers or text, kept as
    class indices by `class_labels` (bnnrepro.data.table_checks.class_indices) with their names.

    A first column without a header field holds row names (R's write.csv writes `"","a","b"` and `"1",...` rows, as
    the MASS exports do) and is dropped; a named column is a feature unless `features` or `drop` says otherwise.
    Where the registry's entry for `out` declares a standin_shape, it must be the prepared table's shape. The table
    is checked first (bnnrepro.data.table_checks: header, missing values, non-numeric and constant columns).
    """
    path, name = raw / file, Path(out).stem
    table = read_table(path, delimiter, name)
    check_header(path, table_header(path, delimiter, name, table), target, name)
    if len(table.columns) and table.columns[0] == ROW_NAMES:
        table = table.drop(columns=[ROW_NAMES])
    columns = feature_columns(path, [str(c) for c in table.columns if c != target], features, drop)
    classes = task == "classification"
    check_columns(path, table, columns, target, name, classes)
    x = table[columns].to_numpy(dtype=float)
    entry = registered_download(out)
    if entry is not None:
        check_standin_shape(entry, x.shape)
    if not classes:
        write_table(out, x, table[target].to_numpy(dtype=float))
        return
    where = f"dataset {name!r}: {path}: target column {target!r}"
    write_table(out, x, *class_indices(table[target].tolist(), class_labels, where))


def read_table(path: Path, delimiter: str, dataset: str) -> pd.DataFrame:
    """The table in `path`: delimited text by `delimiter`, unless its suffix names a format of `TABLE_READERS`. A
    reader whose package is not installed raises TableError naming the package and the alternatives."""
    reader = TABLE_READERS.get(path.suffix.lower())
    if reader is None:
        return pd.read_csv(path, sep=delimiter)
    try:
        return reader(path)
    except ImportError as error:  # pandas' message names the optional package its reader needs
        raise TableError(
            f"dataset {dataset!r}: {path}: {error}; install it in the project's environment, or save the table as CSV"
        ) from None


def table_header(path: Path, delimiter: str, dataset: str, table: pd.DataFrame | None = None) -> list[str]:
    """The column names of the table in `path` as written: delimited text's header row, read as a row
    (table_checks.header_names), or the names pandas reads from another format (from `table`, where it is read
    already)."""
    if path.suffix.lower() not in TABLE_READERS:
        return header_names(path, delimiter)
    table = read_table(path, delimiter, dataset) if table is None else table
    return [str(column) for column in table.columns]


def feature_columns(
    path: Path, available: list[str], features: Sequence[str] | None, drop: Sequence[str] | None
) -> list[str]:
    """The feature columns of the table at `path` (whose columns other than the target are `available`) that
    `features` or `drop` select; a name that is not among them raises ValueError naming it and the available ones."""
    if features is not None and drop is not None:
        raise ValueError(
            f"{path}: give `features` (the columns to keep) or `drop` (the columns to leave out), not both"
        )
    named = list(features if features is not None else drop or [])
    unknown = [name for name in named if name not in available]
    if unknown:
        raise ValueError(
            f"{path}: no feature column(s) {', '.join(map(repr, unknown))}; available columns (the target is not "
            f"one): {', '.join(available)}"
        )
    if features is not None:
        return named
    return [column for column in available if column not in named]


def registered_download(out: Path) -> Download | None:
    """The download of config/datasets.yaml whose real data the workflow prepares into `out`
    (results/data/<name>.npz), or None (a file of another name, a table prepared outside the workflow)."""
    try:
        entry = dataset(Path(out).stem)
    except KeyError:
        return None
    if isinstance(entry, Download) and Path(entry.prepared_file(standin=False)).name == Path(out).name:
        return entry
    return None


def check_standin_shape(entry: Download, prepared: tuple[int, ...]) -> None:
    """Raise ValueError where the entry declares a standin_shape other than the prepared table's [rows, features].

    Rows count as well as features: the registry promises a stand-in of the real data's shape, and every stand-in
    shape it holds so far (the UCI sets', bnnrepro.data.uci.SHAPES) equals the real data's rows and features.
    """
    if entry.standin_shape is None or tuple(entry.standin_shape) == tuple(prepared):
        return
    declared, actual = list(entry.standin_shape), list(prepared)
    raise ValueError(
        f"config/datasets.yaml: dataset {entry.name!r} declares standin_shape: {declared} (rows, features), but its "
        f"prepared data has shape {actual}; set standin_shape: {actual}, so that the offline stand-in has the real "
        "data's shape"
    )


def check_local_header(entry: Download, raw: Path) -> None:
    """The checks of the header of a table download whose file is already at hand in `raw` (its fetched folder), run
    when the workflow builds its DAG, before any job: a repeated name, a `target` the file lacks, or `features` or
    `drop` naming a column it lacks raise TableError naming the file, the column and the fix."""
    options = entry.options
    path = raw / options["file"]
    if not path.is_file():
        return
    header = table_header(path, options.get("delimiter", ","), entry.name)
    check_header(path, header, options["target"], entry.name)
    available = [name for name in header if name not in ("", options["target"])]
    try:
        feature_columns(path, available, options.get("features"), options.get("drop"))
    except ValueError as error:
        raise TableError(f"dataset {entry.name!r}: {error}; fix `options:` in config/datasets.yaml") from None

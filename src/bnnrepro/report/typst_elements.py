"""The Typst elements the report is made of: text as a string literal (`typst_str`), numbers to significant digits,
a comparison table CSV in its paper's layout (`table_from_csv`) and a figure's PNG sized to the page
(`figure_image`). The report (`bnnrepro.report.typst_report`) places them; its PREAMBLE defines the `cell-fill`
colours the tables' cells use."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.render import PRINTED_MAX_HEIGHT_CM, PRINTED_WIDTH_CM

_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def typst_str(text: object) -> str:
    """Quote text as a Typst string literal: backslash, quote and control characters are escaped."""
    body = "".join(
        _STRING_ESCAPES.get(char, f"\\u{{{ord(char):x}}}" if ord(char) < 0x20 or char == "\x7f" else char)
        for char in str(text)
    )
    return f'"{body}"'


def format_number(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, in fixed notation unless very small or large."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    value = float(f"{value:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(value)))
    if not -4 <= magnitude < 6:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{max(0, digits - 1 - magnitude)}f}"


def _is_true(value: object) -> bool:
    return str(value).strip().lower() in {"true", "1", "1.0"}


def _present(value: object) -> bool:
    return not pd.isna(value) and str(value) != ""


def _with_error(value: float | str, error: float) -> str:
    """A number with its error (two significant digits); a setting (text, as in a hyper-parameter table) as written."""
    if isinstance(value, str):
        return value
    return format_number(value) + (f" ± {format_number(error, 2)}" if _present(error) else "")


def _published_cell(row: pd.Series) -> str:
    return _with_error(row["published"], row["published_error"]) if _present(row["published"]) else "–"


_MAX_TABLE_COLUMNS = 8  # a wider table is shown transposed when that makes it narrower
_NARROW_COLUMNS = 6  # a table with more columns is set in a smaller font
_TABLE_LEGEND = (
    "Each cell: ours (± the paper's kind of error over n runs) and, below in grey, the paper's value. Green: agrees; "
    "red: differs; amber: undetermined (agrees: equivalent to the published value within its metric's margin by two "
    "one-sided t-tests at 5%, the paper's error read as a standard error; differs: Welch's test at 5% separates the "
    "two, in a benchmark after Holm's correction over its tests and paired by split where the source gives its "
    "splits; undetermined: too wide to tell, or the cell averages fewer settings than the paper's); uncoloured: not "
    "judged or not comparable. The long form, with the differences, margins and p-values, is the table's CSV."
)


def _ours(row: pd.Series) -> str:
    """Our value as the cell shows it: a whole number that is no mean over runs (no n, no error: a parameter count,
    the settings tried) in full, with thousands separated; else to significant digits with its error."""
    if not _present(row["ours"]):
        return "–"
    value, no_mean = row["ours"], not _present(row["n_runs"]) and not _present(row["ours_error"])
    if no_mean and not isinstance(value, str) and float(value).is_integer():
        return f"{int(value):,}"
    return _with_error(value, row["ours_error"])


def _paper_cell(row: pd.Series) -> str:
    """A cell of the paper-layout table: ours over the published value, filled by whether ours is within its error."""
    ours = typst_str(_ours(row))
    if _present(row["n_runs"]):
        runs = typst_str(f" n={int(row['n_runs'])}")
        ours += f" + text(size: 0.8em, fill: luma(90), {runs})"
    lines = [ours]
    if _present(row["published"]):
        lines.append(f"text(size: 0.85em, fill: luma(90), {typst_str('paper ' + _published_cell(row))})")
    verdict = row["verdict"]
    fill = f"cell-fill.{verdict}" if verdict in ("agrees", "differs", "undetermined") else "none"
    return f"table.cell(fill: {fill}, stack(dir: ttb, spacing: 2pt, {', '.join(lines)}))"


def _label(value: object) -> str:
    return str(value) if _present(value) else ""


_LONG_WORD = 12
"""A header word longer than this many characters (between spaces and underscores) may be hyphenated: a column of a
wide table is narrower than a source's author name ('(Lakshminarayanan'), which would otherwise overprint the next."""
_ZERO_WIDTH_SPACE = "\u200b"  # put after '_', a line may break there ('uci_boston rmse_original')


def header_cell(label: str) -> str:
    """A header label as Typst: breakable after each underscore, its long words hyphenated (`_LONG_WORD`), the
    others never."""
    pieces = []
    for word in re.split(r"(\s+)", label.replace("_", f"_{_ZERO_WIDTH_SPACE}")):
        long = any(len(part) > _LONG_WORD for part in word.split(_ZERO_WIDTH_SPACE))
        pieces.append(f"text(hyphenate: true, {typst_str(word)})" if long else typst_str(word))
    return " + ".join(pieces)  # re.split gives at least one piece ('' for an empty label)


def table_from_csv(csv_path: Path, published: bool = True) -> str:
    """A comparison table CSV (a row per cell) in its paper's layout, rows x columns, breaking across pages with the
    header repeated; transposed when it has more than `_MAX_TABLE_COLUMNS` columns and fewer rows. `published`: the
    legend of the published values and verdicts (a study of your own has neither)."""
    frame = pd.read_csv(csv_path, dtype={"row": str, "column": str})
    frame["row"], frame["column"] = frame["row"].map(_label), frame["column"].map(_label)
    row_key, column_key = "row", "column"
    if frame["column"].nunique() > _MAX_TABLE_COLUMNS and frame["row"].nunique() < frame["column"].nunique():
        row_key, column_key = "column", "row"
    duplicated = frame[frame.duplicated(["row", "column"])]
    if not duplicated.empty:
        first = duplicated.iloc[0]
        raise ValueError(f"{csv_path}: two cells at row {first['row']!r}, column {first['column']!r}")
    rows, columns = list(dict.fromkeys(frame[row_key])), list(dict.fromkeys(frame[column_key]))
    cells = {(cell[row_key], cell[column_key]): cell for _, cell in frame.iterrows()}
    standin_rows = set(frame.loc[frame["standin"].map(_is_true), row_key])
    body = [
        ", ".join(
            [typst_str(row + (" †" if row in standin_rows else ""))]
            + [_paper_cell(cells[row, column]) if (row, column) in cells else '""' for column in columns]
        )
        for row in rows
    ]
    table = (
        f"table(columns: (auto,{' 1fr,' * len(columns)}), align: (left,{' right,' * len(columns)}),\n"
        f"  table.header({', '.join(header_cell(header) for header in ['', *columns])}),\n"
        + "".join(f"  {row},\n" for row in body)
        + ")"
    )
    notes = [_TABLE_LEGEND] * published + (["† computed on a stand-in dataset"] if standin_rows else [])
    legend = "".join(f" + par(text(size: 7.5pt, {typst_str(note)}))" for note in notes)
    size = "8pt" if len(columns) <= _NARROW_COLUMNS else "7pt"
    return f"text(size: {size}, {table}) + v(0.3em){legend}"


def _png_size(png: Path) -> tuple[int, int]:
    header = png.read_bytes()[:24]
    if header[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png} is not a PNG file")
    return struct.unpack(">II", header[16:24])


def figure_image(png: Path, typst_path: str) -> str:
    """The PNG at the text width, or shorter when that would make it taller than a page allows."""
    width, height = _png_size(png)
    too_tall = height / width * PRINTED_WIDTH_CM > PRINTED_MAX_HEIGHT_CM
    size = f"height: {PRINTED_MAX_HEIGHT_CM}cm" if too_tall else "width: 100%"
    return f"align(center, image({typst_str(typst_path)}, {size}))"

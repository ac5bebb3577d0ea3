"""Render the artifact manifest as Typst source and compile it to the report PDF.

Every piece of text from the manifest or a table CSV enters the Typst source as a string literal
(`typst_str`), never as markup, so characters such as `#`, `$`, `*`, `_`, `@`, `<`, `[` and `\\` print
verbatim. The PDF is compiled offline with the fonts embedded in typst (system fonts are ignored), with
its creation date taken from the manifest, so the same manifest gives the same PDF.
"""

from __future__ import annotations

import json
import math
import struct
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import typst

from bnnrepro.files import write_atomic

STATUS_LABELS = {"reproduced": "reproduced", "not yet reproduced": "not yet reproduced", "diagram": "diagram: no data"}

PREAMBLE = r"""
#set page(paper: "a4", margin: 2cm, numbering: "1 / 1")
#set text(size: 10pt, lang: "en")
#set par(justify: false)
#set table(inset: (x: 4pt, y: 3pt), stroke: (_, y) => (bottom: if y == 0 { 0.6pt } else { 0.2pt + luma(190) }))
#show table.cell.where(y: 0): strong
#show heading.where(level: 1): set text(size: 14pt)
#show heading.where(level: 1): set block(above: 1.8em, below: 0.9em)
#show raw: set text(size: 8.5pt)

#let status-color = ("reproduced": rgb("#2e7d32"), "not yet reproduced": rgb("#c62828"), "diagram": luma(110))

#let badge(status, label) = box(
  fill: status-color.at(status).lighten(88%),
  stroke: 0.5pt + status-color.at(status),
  inset: (x: 3pt, y: 1.5pt),
  outset: (y: 1pt),
  radius: 2pt,
  text(size: 8.5pt, weight: "bold", fill: status-color.at(status), label),
)

#let artifact(id, title, status, label, standin: false, fields: (), body: none, breakable: true) = block(
  width: 100%,
  breakable: breakable,
  above: 1.5em,
  inset: (left: 6pt, y: 2pt),
  stroke: (left: 1.5pt + status-color.at(status)),
  {
    block(below: 0.7em, sticky: true)[#raw(id) #h(0.3em) #strong(title) #h(0.3em) #badge(status, label)]
    if standin {
      block(below: 0.7em, text(weight: "bold", fill: rgb("#c62828"), "(computed on a stand-in dataset)"))
    }
    for (name, value) in fields { block(spacing: 0.55em)[#strong(name) #value] }
    if body != none { block(above: 0.9em, body) }
  },
)
"""

# A figure spans the text width unless that would make it taller than the maximum height.
_MAX_FIGURE_HEIGHT_CM = 19.0
_TEXT_WIDTH_CM = 16.5
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def typst_str(text: object) -> str:
    """Quote text as a Typst string literal: backslash, quote and control characters are escaped."""
    body = "".join(
        _STRING_ESCAPES.get(char, f"\\u{{{ord(char):x}}}" if ord(char) < 0x20 or char == "\x7f" else char)
        for char in str(text)
    )
    return f'"{body}"'


def _array(items: list[str]) -> str:
    """A Typst array literal (the trailing comma keeps a one-element array an array)."""
    return f"({', '.join(items)},)" if items else "()"


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
    """A number with its error; a setting (text, as in a hyper-parameter table) as written."""
    if isinstance(value, str):
        return value
    return format_number(value) + (f" ± {format_number(error)}" if _present(error) else "")


def _ours_cell(row: pd.Series) -> str:
    if not _present(row["ours"]):
        return "–"
    n_runs = f" (n={int(row['n_runs'])})" if _present(row["n_runs"]) else ""
    return _with_error(row["ours"], row["ours_error"]) + n_runs


def _published_cell(row: pd.Series) -> str:
    return _with_error(row["published"], row["published_error"]) if _present(row["published"]) else "–"


def _difference_cell(row: pd.Series) -> str:
    value = row["difference"]
    return (("+" if value > 0 else "") + format_number(value)) if _present(value) else "–"


def _within_cell(row: pd.Series) -> str:
    value = row["within_published_error"]
    return ("✓" if _is_true(value) else "✗") if _present(value) else "–"


def _row_cell(row: pd.Series) -> str:
    label = str(row["row"]) if _present(row["row"]) else ""
    return label + (" †" if _is_true(row["standin"]) else "")


# header, alignment, the CSV column that must hold data for the table column to be shown, cell formatter
_TABLE_COLUMNS = [
    ("Row", "left", "row", _row_cell),
    ("Column", "left", "column", lambda row: str(row["column"]) if _present(row["column"]) else ""),
    ("Ours (± error, n)", "right", "ours", _ours_cell),
    ("Published (± error)", "right", "published", _published_cell),
    ("Difference", "right", "difference", _difference_cell),
    ("Within published error", "center", "within_published_error", _within_cell),
]


def table_from_csv(csv_path: Path) -> str:
    """A Typst table (breaking across pages, header repeated) of a comparison table CSV."""
    frame = pd.read_csv(csv_path, dtype={"row": str, "column": str})
    columns = [column for column in _TABLE_COLUMNS if frame[column[2]].map(_present).any()]
    rows = [", ".join(typst_str(fmt(row)) for *_, fmt in columns) for _, row in frame.iterrows()]
    table = (
        f"table(columns: {len(columns)}, align: {_array([align for _, align, *_ in columns])},\n"
        f"  table.header({', '.join(typst_str(header) for header, *_ in columns)}),\n"
        + "".join(f"  {row},\n" for row in rows)
        + ")"
    )
    if frame["standin"].map(_is_true).any():
        table += ' + v(0.3em) + text(size: 8.5pt, "† computed on a stand-in dataset")'
    return f"text(size: 9pt, {table})"


def _png_size(png: Path) -> tuple[int, int]:
    header = png.read_bytes()[:24]
    if header[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png} is not a PNG file")
    return struct.unpack(">II", header[16:24])


def figure_image(png: Path, typst_path: str) -> str:
    """The PNG at the text width, or shorter when that would make it taller than a page allows."""
    width, height = _png_size(png)
    too_tall = height / width * _TEXT_WIDTH_CM > _MAX_FIGURE_HEIGHT_CM
    size = f"height: {_MAX_FIGURE_HEIGHT_CM}cm" if too_tall else "width: 100%"
    return f"align(center, image({typst_str(typst_path)}, {size}))"


def _artifact_file(artifact: dict, kind: str, root: Path) -> tuple[Path, str]:
    """The artifact's file of `kind` on disk and as a Typst root-relative path; it must exist."""
    relative = artifact["files"][kind]
    path = root / relative
    if not path.is_file():
        raise FileNotFoundError(f"artifact {artifact['id']}: missing {kind} file {path}")
    return path, "/" + Path(relative).as_posix()


def _artifact_body(artifact: dict, root: Path) -> tuple[str, bool]:
    """The Typst body of a reproduced artifact (figure or table) and whether it may break across pages."""
    files = artifact.get("files", {})
    if "png" in files:
        return figure_image(*_artifact_file(artifact, "png", root)), False
    if "csv" in files:
        return table_from_csv(_artifact_file(artifact, "csv", root)[0]), True
    raise ValueError(f"artifact {artifact['id']}: status is reproduced but it lists no png or csv file")


def drawn_by_text(drawn_by: dict) -> str:
    """'module.function (file:line) at commit abc1234', with '+ local changes' when the checkout's src/ differed
    from that commit, or 'not a git checkout'."""
    where = f"{drawn_by['function']} ({drawn_by['file']}:{drawn_by['line']})"
    if drawn_by["commit"] is None:
        return f"{where}, not a git checkout"
    return f"{where} at commit {drawn_by['commit']}" + (" + local changes" if drawn_by["local_changes"] else "")


def render_artifact(artifact: dict, root: Path) -> str:
    """One artifact entry: heading line with status badge, the paper's caption, our note, figure or table."""
    status = artifact["status"]
    if status not in STATUS_LABELS:
        raise ValueError(f"artifact {artifact['id']}: unknown status {status!r}")
    fields = [
        ("Paper:", artifact.get("caption")),
        ("Published figure shows:", artifact.get("shows")),
        ("Why not reproduced:", artifact.get("diagram_reason")),
        ("Study:", artifact.get("study")),
        ("Scale:", artifact.get("scale")),
        ("Note:", artifact.get("note")),
        ("Missing:", artifact.get("missing")),
        ("Run checks:", artifact.get("flags")),
        ("Drawn by:", drawn_by_text(artifact["drawn_by"]) if "drawn_by" in artifact else None),
    ]
    pairs = [f"({typst_str(name)}, {typst_str(value)})" for name, value in fields if value]
    body, breakable = _artifact_body(artifact, root) if status == "reproduced" else ("none", True)
    args = [typst_str(artifact["id"]), typst_str(artifact.get("title", "")), typst_str(status)]
    return (
        f"#artifact({', '.join(args)}, {typst_str(STATUS_LABELS[status])},\n"
        f"  standin: {'true' if artifact.get('standin') else 'false'},\n"
        f"  fields: {_array(pairs)},\n"
        f"  body: {body},\n"
        f"  breakable: {'true' if breakable else 'false'},\n)\n"
    )


def _grouped(manifest: dict) -> dict[str, list[dict]]:
    """The artifacts by paper, papers in manifest order; an artifact of an unlisted paper is an error."""
    groups: dict[str, list[dict]] = {paper: [] for paper in manifest["papers"]}
    for artifact in manifest["artifacts"]:
        if artifact.get("paper") not in groups:
            raise ValueError(f"artifact {artifact['id']}: paper {artifact.get('paper')!r} is not in the manifest")
        groups[artifact["paper"]].append(artifact)
    return groups


def scale_text(provenance: dict) -> str:
    """The run's scale, and the studies that ran at another one (config 'study_scales')."""
    others = provenance.get("study_scales") or {}
    listed = ", ".join(f"{study} at {scale}" for study, scale in sorted(others.items()))
    return str(provenance.get("scale", "")) + (f" ({listed})" if listed else "")


def render_provenance(provenance: dict) -> str:
    """Git commit, scale, time, command, versions, and the configuration as a monospace block."""
    commit = str(provenance.get("git_commit", "unknown"))
    dirty = ' + " (uncommitted changes)"' if provenance.get("git_dirty") else ""
    versions = ", ".join(f"{name} {version}" for name, version in provenance.get("versions", {}).items())
    rows = [
        ("Git commit", f"raw({typst_str(commit)}){dirty}"),
        ("Scale", typst_str(scale_text(provenance))),
        ("Created", typst_str(provenance.get("created", ""))),
        ("Command", f"raw({typst_str(provenance.get('command', ''))})"),
        ("Versions", typst_str(versions)),
    ]
    config = json.dumps(provenance.get("config", {}), indent=2, ensure_ascii=False)
    cells = ", ".join(f"strong({typst_str(name)}), {value}" for name, value in rows)
    return (
        '#heading(level: 1, "Provenance")\n'
        f"#grid(columns: (auto, 1fr), column-gutter: 1em, row-gutter: 0.65em, {cells})\n"
        "#block(above: 1em, width: 100%, fill: luma(245), inset: 6pt, radius: 2pt, "
        f"text(size: 8pt, raw({typst_str(config)}, block: true)))\n"
    )


def render_progress(manifest: dict, groups: dict[str, list[dict]]) -> str:
    """One row per paper: reproduced / not yet reproduced / diagrams / total, a total row and a summary line."""
    statuses = ["reproduced", "not yet reproduced", "diagram"]
    counts = {
        paper: [sum(a["status"] == s for a in artifacts) for s in statuses] for paper, artifacts in groups.items()
    }
    totals = [sum(column) for column in zip(*counts.values(), strict=True)] if counts else [0, 0, 0]
    rows = [
        ", ".join([typst_str(manifest["papers"][paper].get("title", paper))] + [typst_str(n) for n in [*row, sum(row)]])
        for paper, row in counts.items()
    ]
    rows.append(", ".join(f"strong({typst_str(n)})" for n in ["Total", *totals, sum(totals)]))
    with_data = totals[0] + totals[1]
    share = f" ({100 * totals[0] / with_data:.0f}%)" if with_data else ""
    summary = f"{totals[0]} of {with_data} artifacts that carry data are reproduced{share}; {totals[2]} are diagrams."
    return (
        '#heading(level: 1, "Progress")\n'
        "#table(columns: (1fr, auto, auto, auto, auto), align: (left, right, right, right, right),\n"
        '  table.header("Paper", "Reproduced", "Not yet reproduced", "Diagrams", "Total"),\n'
        + "".join(f"  {row},\n" for row in rows)
        + f")\n#par({typst_str(summary)})\n"
    )


def render_paper(paper: dict, artifacts: list[dict], root: Path) -> str:
    """A section for one paper: its title, authors and venue, then its artifacts in manifest order."""
    byline = ", ".join(str(paper[key]) for key in ("authors", "venue") if paper.get(key))
    entries = "".join(render_artifact(artifact, root) for artifact in artifacts) or '#par("No artifacts listed.")\n'
    return (
        f"#heading(level: 1, {typst_str(paper.get('title', ''))})\n"
        f'#text(style: "italic", {typst_str(byline)})\n' + entries
    )


def render_own_studies(studies: list[dict], root: Path) -> str:
    """A section for the studies of your own, each with its description and its table of test metrics ('' when
    there are none)."""
    if not studies:
        return ""
    entries = []
    for study in studies:
        csv = root / study["files"]["csv"]
        if not csv.is_file():
            raise FileNotFoundError(f"study {study['study']}: missing table {csv}")
        entries.append(
            f"#heading(level: 2, raw({typst_str(study['study'])}))\n"
            + (f"#par({typst_str(study['description'])})\n" if study.get("description") else "")
            + f"#block({table_from_csv(csv)})\n"
        )
    intro = (
        "Studies outside the five works (paper: own in their study file): the test metrics at each run's selected "
        "evaluation, mean ± standard error over seeds (n runs)."
    )
    return '#heading(level: 1, "Studies of your own")\n' + f"#par({typst_str(intro)})\n" + "".join(entries)


def render_typst(manifest: dict, root: Path) -> str:
    """The whole report as Typst source; figure and table files are looked up under `root`."""
    groups = _grouped(manifest)
    title = typst_str(manifest.get("title", "Reproduction report"))
    header = (
        f"// Compile with: typst compile --root {root} <this file>\n"
        f"#set document(title: {title})\n{PREAMBLE}\n"
        f'#align(center, text(size: 18pt, weight: "bold", {title}))\n'
    )
    papers = [render_paper(manifest["papers"][key], artifacts, root) for key, artifacts in groups.items()]
    own = render_own_studies(manifest.get("own_studies", []), root)
    return "\n".join(
        [header, render_provenance(manifest.get("provenance", {})), render_progress(manifest, groups), *papers, own]
    )


def _timestamp(provenance: dict) -> int | None:
    """The manifest's creation time as a Unix timestamp (naive times are UTC), used as the PDF's date."""
    created = provenance.get("created")
    if not created:
        return None
    moment = datetime.fromisoformat(created)
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def build_report(manifest_path: Path, out_pdf: Path) -> None:
    """Write `out_pdf` and its Typst source (`out_pdf` with suffix .typ) from the JSON manifest."""
    manifest_path, out_pdf = Path(manifest_path), Path(out_pdf)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    root = (manifest_path.parent / manifest["root"]).resolve()
    source = render_typst(manifest, root)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    typ_path = out_pdf.with_suffix(".typ")
    write_atomic(typ_path, lambda tmp: tmp.write_bytes(source.encode("utf-8")))
    try:
        pdf = typst.compile(
            source.encode("utf-8"),
            root=str(root),
            ignore_system_fonts=True,
            timestamp=_timestamp(manifest.get("provenance", {})),
        )
    except typst.TypstError as error:
        raise RuntimeError(f"typst could not compile {typ_path}: {error}") from error
    write_atomic(out_pdf, lambda tmp: tmp.write_bytes(pdf))

"""The report as read: layout problems found on the rendered PDF's pages, not in its Typst source.

Six checks, each on every page: no two glyphs overprint; no glyph leaves the page; no figure leaves the page or lies
under text (a figure taller than what is left of its page runs into the page number); every table's header fits its
columns and its last row is not padded with empty cells (the marks of a row with more or fewer cells than the
header: Typst wraps the extra cells into the next row); no heading is the last thing on its page; and the smallest
text of every figure is at least `MIN_PRINTED_TEXT_PT` as printed. Glyph boxes come from pdfminer.six, the table
structure from the PDF's tags and the headings from its outline (Typst writes both), read with pypdf. A figure's
smallest font is read from the PNG the pipeline saved (bnnrepro.artifacts.render.SMALLEST_FONT_KEY) and
scaled by the size the page prints its pixels at.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pdfminer.high_level import extract_pages
from pdfminer.layout import LAParams, LTChar, LTComponent, LTImage, LTTextLine
from PIL import Image
from pypdf import PdfReader
from pypdf.generic import DictionaryObject

from bnnrepro.artifacts.render import MIN_PRINTED_TEXT_PT, SMALLEST_FONT_KEY
from bnnrepro.report.typst_report import printed_figures

OVERPRINT_FRACTION = 0.5
"""Two glyphs overprint when their boxes share more than this fraction of the smaller one's area (kerned pairs such
as "V." share up to about 40%)."""
FOOTER_PT = 40.0
"""Text below this height (points from the page's foot) is the page number, not content."""
_GRID_PT = 12.0


@dataclass(frozen=True)
class LayoutProblem:
    page: int  # 1-based
    check: str
    detail: str

    def __str__(self) -> str:
        return f"page {self.page}: {self.check}: {self.detail}"


def _glyphs(layout: Iterable) -> Iterator[LTChar]:
    for item in layout:
        if isinstance(item, LTChar):
            yield item
        elif hasattr(item, "__iter__"):
            yield from _glyphs(item)


def _of_type(layout: Iterable, kind: type) -> Iterator:
    for item in layout:
        if isinstance(item, kind):
            yield item
        if hasattr(item, "__iter__") and not isinstance(item, LTTextLine):
            yield from _of_type(item, kind)


def overprinted_glyphs(glyphs: list[LTChar]) -> list[tuple[LTChar, LTChar]]:
    """Pairs of visible glyphs whose boxes overlap by more than OVERPRINT_FRACTION of the smaller (a grid of cells
    keeps this linear in the glyphs on a page)."""
    cells: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, glyph in enumerate(glyphs):
        for gx in range(int(glyph.x0 // _GRID_PT), int(glyph.x1 // _GRID_PT) + 1):
            for gy in range(int(glyph.y0 // _GRID_PT), int(glyph.y1 // _GRID_PT) + 1):
                cells[gx, gy].append(index)
    pairs = set()
    for members in cells.values():
        for position, i in enumerate(members):
            a = glyphs[i]
            for j in members[position + 1 :]:
                b = glyphs[j]
                width = min(a.x1, b.x1) - max(a.x0, b.x0)
                height = min(a.y1, b.y1) - max(a.y0, b.y0)
                smaller = min(a.width * a.height, b.width * b.height)
                if width > 0 and height > 0 and width * height > OVERPRINT_FRACTION * smaller:
                    pairs.add((min(i, j), max(i, j)))
    return [(glyphs[i], glyphs[j]) for i, j in sorted(pairs)]


def _overlap(a: LTComponent, b: LTComponent) -> float:
    """The area (points squared) two boxes share."""
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))


def _off_the_page(box: LTComponent, page_box: tuple[float, float, float, float]) -> bool:
    x0, y0, x1, y1 = page_box
    return box.x0 < x0 - 0.5 or box.x1 > x1 + 0.5 or box.y0 < y0 - 0.5 or box.y1 > y1 + 0.5


def figure_problems(
    number: int, images: list[LTImage], glyphs: list[LTChar], page_box: tuple[float, float, float, float]
) -> list[LayoutProblem]:
    """A figure that leaves the page, and text printed over a figure (a glyph sharing more than OVERPRINT_FRACTION
    of its box with the figure's)."""
    problems = []
    for image in images:
        size = f"a {image.srcsize[0]}x{image.srcsize[1]} px figure"
        if _off_the_page(image, page_box):
            problems.append(LayoutProblem(number, "figure off the page", f"{size} reaches {image.y0:.0f} pt"))
        if covered := [g for g in glyphs if _overlap(g, image) > OVERPRINT_FRACTION * g.width * g.height]:
            words = _word_at(glyphs, covered[0])
            problems.append(LayoutProblem(number, "text over a figure", f"{words!r} over {size}"))
    return problems


def _word_at(glyphs: list[LTChar], glyph: LTChar) -> str:
    """The glyphs on `glyph`'s baseline within a few characters of it, for a message a reader can find."""
    near = [g for g in glyphs if abs(g.y0 - glyph.y0) < 0.5 and abs(g.x0 - glyph.x0) < 4 * glyph.size]
    return "".join(g.get_text() for g in sorted(near, key=lambda g: g.x0)).strip()


def _kids(node: DictionaryObject) -> list:
    kids = node.get("/K")
    if kids is None:
        return []
    kids = kids if isinstance(kids, list) else [kids]
    return [kid.get_object() for kid in kids]


def _elements(node: object, tag: str) -> Iterator[DictionaryObject]:
    node = node.get_object() if hasattr(node, "get_object") else node
    if isinstance(node, DictionaryObject):
        if node.get("/S") == tag:
            yield node
        for kid in _kids(node):
            yield from _elements(kid, tag)


def _rows(table: DictionaryObject, part: str) -> list[list[bool]]:
    """Per row of the table's THead or TBody: whether each cell holds anything."""
    return [
        [bool(_kids(cell)) for cell in _kids(row) if isinstance(cell, DictionaryObject)]
        for section in _kids(table)
        if isinstance(section, DictionaryObject) and section.get("/S") == part
        for row in _kids(section)
        if isinstance(row, DictionaryObject)
    ]


def _trailing_empty(row: list[bool]) -> int:
    return len(row) - max((i + 1 for i, filled in enumerate(row) if filled), default=0)


def _page_of(reader: PdfReader, node: DictionaryObject) -> int:
    """The 1-based page of a structure element (its own /Pg, else the first of its descendants'), 0 if none."""
    if "/Pg" in node:
        return reader.get_page_number(node["/Pg"].get_object()) + 1
    for kid in _kids(node):
        if isinstance(kid, DictionaryObject) and (page := _page_of(reader, kid)) > 0:
            return page
    return 0


def table_problems(reader: PdfReader) -> list[LayoutProblem]:
    """A header whose last row ends in empty cells holds more labels than the table has columns; a last row padded
    with empty cells means some row had a cell more or fewer than the header (Typst fills the grid row by row)."""
    root = reader.trailer["/Root"]
    if "/StructTreeRoot" not in root:
        return [LayoutProblem(0, "tables", "the PDF has no structure tags: compile it with Typst's default tagging")]
    problems = []
    for number, table in enumerate(_elements(root["/StructTreeRoot"], "/Table"), start=1):
        header, body = _rows(table, "/THead"), _rows(table, "/TBody")
        columns = len(header[0]) if header else len(body[0]) if body else 0
        page = _page_of(reader, table)
        if len(header) > 1 and _trailing_empty(header[-1]):
            labels = sum(map(sum, header))
            problems.append(
                LayoutProblem(page, "tables", f"table {number}: {labels} header labels in {columns} columns")
            )
        if body and (padding := _trailing_empty(body[-1])) and all(_trailing_empty(row) < padding for row in body[:-1]):
            problems.append(
                LayoutProblem(
                    page,
                    "tables",
                    f"table {number}: its last row ends in {padding} empty cell(s) no other row has: a row holds a "
                    f"cell more or fewer than the {columns} columns",
                )
            )
    return problems


def _heading_positions(reader: PdfReader) -> list[tuple[int, float, str]]:
    """(page, top, title) of every outline entry, nested ones included."""
    positions = []

    def walk(entries: list) -> None:
        for entry in entries:
            if isinstance(entry, list):
                walk(entry)
            elif entry.get("/Top") is not None:
                positions.append((reader.get_destination_page_number(entry) + 1, float(entry["/Top"]), entry.title))

    walk(reader.outline)
    return positions


def _heading_ends_page(lines: list[LTTextLine], images: list[LTImage], top: float, title: str) -> bool:
    """Whether nothing but the heading's own lines lies between the heading's top and the page's footer."""
    below = sorted((line for line in lines if line.y1 <= top + 2 and line.y0 > FOOTER_PT), key=lambda line: -line.y1)
    words = " ".join(title.split())
    heading_bottom = top
    for line in below:
        text = " ".join(line.get_text().split())
        if text and text in words:
            heading_bottom = line.y0
            words = words.replace(text, "", 1)
            continue
        return False
    return not any(image.y1 <= heading_bottom and image.y0 > FOOTER_PT for image in images)


def smallest_text_px(png: Path) -> float | None:
    """The smallest text of a figure in its PNG's pixels: the font size it records (SMALLEST_FONT_KEY) at its dpi."""
    with Image.open(png) as image:
        smallest = image.info.get(SMALLEST_FONT_KEY)
        dpi = image.info.get("dpi", (72, 72))[0]
        return None if smallest is None else float(smallest) * float(dpi) / 72.0


def layout_problems(pdf: Path, figures: Iterable[Path] = ()) -> list[LayoutProblem]:
    """Every layout problem of the rendered `pdf`; `figures` are the PNGs it prints, whose smallest text is checked
    (a printed image is matched to its PNG by pixel size; a PNG without SMALLEST_FONT_KEY is not checked)."""
    reader = PdfReader(pdf)
    smallest_px: dict[tuple[int, int], float] = {}
    for png in figures:
        if (pixels := smallest_text_px(png)) is not None:
            with Image.open(png) as image:
                size = image.size
            smallest_px[size] = min(pixels, smallest_px.get(size, pixels))
    headings = defaultdict(list)
    for page, top, title in _heading_positions(reader):
        headings[page].append((top, title))
    problems = table_problems(reader)
    for number, page in enumerate(extract_pages(pdf, laparams=LAParams()), start=1):
        glyphs = [g for g in _glyphs(page) if g.get_text().strip()]
        overprints = {(_word_at(glyphs, a), round(a.y0)): a for a, _ in overprinted_glyphs(glyphs)}
        for (words, _), a in overprints.items():
            problems.append(LayoutProblem(number, "overprint", f"{words!r} at ({a.x0:.0f}, {a.y0:.0f}) pt"))
        for glyph in glyphs:
            if _off_the_page(glyph, page.bbox):
                problems.append(LayoutProblem(number, "off the page", f"{_word_at(glyphs, glyph)!r}"))
        lines, images = list(_of_type(page, LTTextLine)), list(_of_type(page, LTImage))
        problems += figure_problems(number, images, glyphs, page.bbox)
        for top, title in headings[number]:
            if _heading_ends_page(lines, images, top, title):
                problems.append(LayoutProblem(number, "heading at the foot", f"{title!r} ends the page"))
        for image in images:
            if (pixels := smallest_px.get(tuple(image.srcsize))) is not None:
                printed = pixels * image.width / image.srcsize[0]
                if printed < MIN_PRINTED_TEXT_PT:
                    problems.append(
                        LayoutProblem(
                            number,
                            "figure text",
                            f"a {image.srcsize[0]}x{image.srcsize[1]} px figure prints its smallest text at "
                            f"{printed:.1f} pt (at least {MIN_PRINTED_TEXT_PT:g})",
                        )
                    )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.report.page_layout", description=__doc__.splitlines()[0])
    parser.add_argument("pdf", type=Path, help="the report PDF")
    parser.add_argument("manifest", type=Path, nargs="?", help="its manifest, to check the text of its figures")
    args = parser.parse_args(argv)
    problems = layout_problems(args.pdf, printed_figures(args.manifest) if args.manifest else ())
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

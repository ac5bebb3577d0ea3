"""The rendered-page check (bnnrepro.report.page_layout) on small Typst documents: each problem it names is found
on a page that has it and not on the same page laid out right. The whole smoke report is checked in
tests/test_pipeline.py."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import typst
from PIL import Image

from bnnrepro.artifacts.render import (
    MIN_PRINTED_TEXT_PT,
    SMALLEST_FONT_KEY,
    printed_scale,
    save_figure,
    smallest_font_pt,
)
from bnnrepro.report import typst_elements
from bnnrepro.report.page_layout import layout_problems
from bnnrepro.report.typst_elements import table_from_csv, typst_str
from bnnrepro.report.typst_report import PREAMBLE

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

LOREM = "The posterior predictive of every method is judged against the published numbers. " * 6
HEADERS = ["Work", "Scale", "Artifacts", "Drawn", "Matches", "Differs", "Undetermined", "Not comparable", "Claims hold"]
ROW = ["Infinitely Deep Bayesian Neural Networks", "smoke", "21", "21", "0", "0", "0", "21", "0 of 2"]


def rendered(tmp_path: Path, body: str, name: str = "page") -> Path:
    pdf = tmp_path / f"{name}.pdf"
    pdf.write_bytes(typst.compile((PREAMBLE + body).encode(), root=str(tmp_path), ignore_system_fonts=True))
    return pdf


def summary_table(columns: int, rows: list[list[str]]) -> str:
    cells = ", ".join(typst_str(cell) for row in rows for cell in row)
    widths = ", ".join(["1fr"] + ["auto"] * (columns - 1))
    header = ", ".join(typst_str(h) for h in HEADERS)
    return f"#text(size: 9pt, table(columns: ({widths}), table.header({header}), {cells}))\n"


def checks(problems: list) -> set[str]:
    return {problem.check for problem in problems}


def test_a_page_laid_out_right_has_no_problem(tmp_path: Path) -> None:
    body = '#heading(level: 1, "Summary")\n' + f"#par({typst_str(LOREM)})\n" + summary_table(9, [ROW, ROW])
    assert layout_problems(rendered(tmp_path, body)) == []


def test_a_header_longer_than_the_columns_overprints_and_is_named(tmp_path: Path) -> None:
    """The summary of 4f20520: nine header labels in a table of eight columns, so each row shifts by one cell."""
    problems = layout_problems(rendered(tmp_path, summary_table(8, [ROW, ROW, ROW])))
    assert {"tables", "overprint"} <= checks(problems)
    assert any("9 header labels in 8 columns" in problem.detail for problem in problems)


def test_a_row_with_a_cell_too_many_pads_the_last_row(tmp_path: Path) -> None:
    rows = [ROW, [*ROW, "extra"], ROW]
    problems = layout_problems(rendered(tmp_path, summary_table(9, rows)))
    assert any(p.check == "tables" and "last row ends in 8 empty cell(s)" in p.detail for p in problems)
    assert layout_problems(rendered(tmp_path, summary_table(9, [ROW, ROW, ROW]), "control")) == []


def test_a_heading_alone_at_the_foot_of_a_page_is_found(tmp_path: Path) -> None:
    heading = '#heading(level: 1, "Studies of your own")\n'
    after = f"#par({typst_str(LOREM)})\n"
    at_foot = layout_problems(rendered(tmp_path, f"#par({typst_str(LOREM)})\n" + heading + "#pagebreak()\n" + after))
    assert [(p.page, p.check) for p in at_foot] == [(1, "heading at the foot")]
    assert layout_problems(rendered(tmp_path, heading + after + "#pagebreak()\n" + after, "control")) == []


def test_text_that_leaves_the_page_is_found(tmp_path: Path) -> None:
    problems = layout_problems(rendered(tmp_path, '#place(dx: 17cm, dy: 1cm, "configuration.yaml")\n'))
    assert checks(problems) == {"off the page"}
    assert layout_problems(rendered(tmp_path, '#place(dx: 10cm, dy: 1cm, "configuration.yaml")\n', "control")) == []


def test_a_figure_taller_than_what_is_left_of_its_page_is_found(tmp_path: Path) -> None:
    """The default report at a5224c6, page 52: an entry kept whole (the old layout: `breakable: false`) with a long
    note above a figure of the largest printed size ran off the page, under the page number; the report's entry
    (PREAMBLE's `artifact`), which may break before its figure, moves the figure to the next page (the control)."""
    Image.new("RGB", (946, 1543), "white").save(tmp_path / "tall.png")
    fields = ", ".join(f'("Note:", {typst_str(LOREM)})' for _ in range(6))
    entry = (
        f'#artifact("thesis/fig4.3", "curves", "reproduced", "drawn", fields: ({fields}),'
        f" body: {typst_elements.figure_image(tmp_path / 'tall.png', '/tall.png')})\n"
    )
    page = f"#par({typst_str(LOREM)})\n"
    kept_whole = layout_problems(rendered(tmp_path, page + f"#block(breakable: false)[{entry}]\n", "kept_whole"))
    assert {"figure off the page", "text over a figure"} <= checks(kept_whole)
    assert layout_problems(rendered(tmp_path, page + entry, "control")) == []


def _labelled_figure(width_in: float) -> Figure:
    fig = Figure(figsize=(width_in, 3))
    axes = fig.add_subplot()
    axes.plot([0, 1], [0, 1])
    axes.set_xlabel("epoch", fontsize=8)
    axes.tick_params(labelsize=9)
    return fig


def test_figure_text_smaller_than_7pt_as_printed_is_found_and_save_figure_prevents_it(tmp_path: Path) -> None:
    """8 pt labels on a figure 20 inches wide print at 8 x 6.5 / 20 = 2.6 pt across the text width: found when the
    figure is saved as is (the control), absent when save_figure saves it."""
    as_is = _labelled_figure(20.0)
    as_is.savefig(tmp_path / "as_is.png", dpi=150, metadata={SMALLEST_FONT_KEY: f"{smallest_font_pt(as_is):g}"})
    save_figure(_labelled_figure(20.0), tmp_path / "saved.pdf", tmp_path / "saved.png")
    for name, expected in (("as_is", {"figure text"}), ("saved", set())):
        pdf = rendered(tmp_path, f'#image("/{name}.png", width: 100%)\n', name)
        assert checks(layout_problems(pdf, [tmp_path / f"{name}.png"])) == expected, name
        assert layout_problems(pdf) == []  # without its PNG the figure's text size is unknown, not guessed


def test_save_figure_raises_only_text_that_would_print_too_small(tmp_path: Path) -> None:
    """A figure printed at its own width keeps its fonts; on a 20-inch one every text prints at 7 pt or more."""
    narrow, wide = _labelled_figure(6.0), _labelled_figure(20.0)
    save_figure(narrow, tmp_path / "narrow.pdf", tmp_path / "narrow.png")
    save_figure(wide, tmp_path / "wide.pdf", tmp_path / "wide.png")
    assert smallest_font_pt(narrow) == 8
    with Image.open(tmp_path / "wide.png") as image:
        printed = smallest_font_pt(wide) * printed_scale(*(side / 150 for side in image.size))
    assert MIN_PRINTED_TEXT_PT <= printed < 1.2 * MIN_PRINTED_TEXT_PT


def benchmark_comparison_csv(folder: Path) -> Path:
    """A comparison table as wide as the default-scale UCI benchmark's published-values table: nine sources' columns
    named '<method> (<source>)', ten dataset-metric rows named 'uci_<set> <metric>_original'."""
    sources = [f"{method} (Lakshminarayanan et al. 2017, Table 1)" for method in ("PBP", "mc_dropout", "deep_ensemble")]
    sources += [f"{method} (thesis Table 3.1)" for method in ("dvi", "varout", "vbp")]
    sources += ["mc_dropout (Gal & Ghahramani rerun, 100x epochs)", "Sparse GP (thesis Table 5.1)", "bedl (thesis)"]
    cells = [{"row": source, "column": f"uci_{name} {metric}_original", "ours": 0.727, "ours_error": 0.019, "n_runs": 5,
              "published": 2.97, "published_error": 0.85, "verdict": "differs", "standin": True}
             for source in sources for metric in ("rmse", "nll")
             for name in ("boston", "concrete", "energy", "wine", "yacht")]  # fmt: skip
    path = folder / "published.csv"
    pd.DataFrame(cells).to_csv(path, index=False)
    return path


def test_a_wide_comparison_tables_long_header_words_break_and_do_not_overprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default report's UCI benchmark tables (10 columns): header labels break after underscores and their long
    words ('(Lakshminarayanan') hyphenate. The control: the same table with the labels as plain strings, as before,
    overprints its header."""
    body = f"#block({table_from_csv(benchmark_comparison_csv(tmp_path))})\n"
    assert layout_problems(rendered(tmp_path, body)) == []
    monkeypatch.setattr(typst_elements, "header_cell", typst_str)
    plain = f"#block({table_from_csv(benchmark_comparison_csv(tmp_path))})\n"
    assert "overprint" in checks(layout_problems(rendered(tmp_path, plain, "plain")))

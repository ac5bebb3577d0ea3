"""The Typst report: a PDF from a small manifest, its text (read back with pypdf), and clear errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from pypdf import PdfReader  # noqa: E402

from bnnrepro.report.typst_report import build_report, format_number, typst_str  # noqa: E402

SPECIAL = 'a#b $x$ *y* _z_ @ref <a> [x] \\ "q" ω ± 1'

# ids, statuses, provenance, the verbatim caption, and table cells: ours, published, difference, ✓ and ✗
EXPECTED_TEXT = [
    "udn/fig2", "udn/table1", "udn/fig1", "sdebnn/fig1", "not yet reproduced", "diagram: no data",
    "(computed on a stand-in dataset)", "abc123 (uncommitted changes)", "plate diagram; carries no data", SPECIAL,
    "91.7 ± 0.310 (n=5)", "92.0 ± 0.500", "-0.270", "✓", "✗", "0.0123",
]  # fmt: skip

TABLE_CSV = """\
row,column,ours,ours_error,n_runs,published,published_error,difference,within_published_error,standin
UDN,accuracy,91.73,0.31,5,92.0,0.5,-0.27,True,False
UDN,NLL,0.01234,,5,0.2,0.01,-0.18766,False,False
ResNet,accuracy,88.4,0.2,3,,,,,False
"""


def pdf_text(pdf: bytes) -> str:
    """All text of the PDF with runs of whitespace collapsed (line breaks depend on the layout)."""
    reader = PdfReader(io.BytesIO(pdf))
    return " ".join(" ".join(page.extract_text() for page in reader.pages).split())


# --- fixtures ----------------------------------------------------------------------------------------------


def _png(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.plot([0, 1, 2], [0, 1, 0])
    fig.savefig(path, dpi=40)
    plt.close(fig)


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    _png(tmp_path / "reports/figures/udn_fig2.png")
    (tmp_path / "reports/tables").mkdir(parents=True)
    (tmp_path / "reports/tables/udn_table1.csv").write_text(TABLE_CSV)
    artifacts = [
        {"id": "udn/fig2", "paper": "udn", "title": "spiral datasets D(ω)", "kind": "data", "caption": SPECIAL,
         "shows": "two spirals", "status": "reproduced", "study": "udn_spirals", "standin": True,
         "note": "1024 points per ω", "files": {"png": "reports/figures/udn_fig2.png"}},
        {"id": "udn/table1", "paper": "udn", "title": "test accuracy", "kind": "table", "caption": "Accuracy.",
         "shows": "accuracy per model", "status": "reproduced", "study": "udn_spirals", "standin": False,
         "note": "ours vs published", "files": {"csv": "reports/tables/udn_table1.csv"}},
        {"id": "udn/fig1", "paper": "udn", "title": "graphical model", "kind": "diagram", "caption": "Plate.",
         "shows": "a plate diagram", "status": "diagram", "diagram_reason": "plate diagram; carries no data",
         "files": {}},
        {"id": "sdebnn/fig1", "paper": "sdebnn", "title": "SDE paths", "kind": "data", "caption": "Paths.",
         "shows": "sample paths", "status": "not yet reproduced", "files": {}},
    ]  # fmt: skip
    manifest = {
        "root": str(tmp_path),
        "title": "bnnrepro: reproduction report",
        "provenance": {
            "git_commit": "abc123",
            "git_dirty": True,
            "scale": "smoke",
            "created": "2026-11-22T12:00:00Z",
            "command": "snakemake --cores 2",
            "config": {"scale": "smoke", "studies": ["udn_spirals"]},
            "versions": {"python": "3.11.7", "torch": "2.13.0"},
        },  # fmt: skip
        "papers": {
            "udn": {
                "title": "Variational Inference for Infinitely Deep Neural Networks",
                "authors": "Nazaret, Blei",
                "venue": "ICML 2022",
            },
            "sdebnn": {"title": "Infinitely Deep Bayesian Neural Networks with SDEs", "authors": "Xu et al."},
        },  # fmt: skip
        "artifacts": artifacts,
    }
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path


# --- tests -------------------------------------------------------------------------------------------------


def test_report_pdf_holds_ids_statuses_verbatim_caption_and_table_values(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "out/report.pdf"
    build_report(manifest, out)

    pdf = out.read_bytes()
    assert pdf.startswith(b"%PDF")
    assert out.with_suffix(".typ").is_file()
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary files left
    text = pdf_text(pdf)
    for expected in EXPECTED_TEXT:
        assert expected in text, expected


def test_progress_table_counts_each_status(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.pdf"
    build_report(manifest, out)
    text = pdf_text(out.read_bytes())
    # udn: 2 reproduced, 0 not yet, 1 diagram, 3 in all; sdebnn: 0, 1, 0, 1; total: 2, 1, 1, 4.
    assert "Variational Inference for Infinitely Deep Neural Networks 2 0 1 3" in text
    assert "Total 2 1 1 4" in text
    assert "2 of 3 artifacts that carry data are reproduced (67%)" in text


def test_same_manifest_gives_the_same_pdf(manifest: Path, tmp_path: Path) -> None:
    build_report(manifest, tmp_path / "a.pdf")
    build_report(manifest, tmp_path / "b.pdf")
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_missing_png_names_the_artifact_and_the_file(manifest: Path, tmp_path: Path) -> None:
    (tmp_path / "reports/figures/udn_fig2.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"udn/fig2.*reports/figures/udn_fig2\.png"):
        build_report(manifest, tmp_path / "report.pdf")
    assert not (tmp_path / "report.pdf").exists()


def test_artifact_of_unknown_paper_is_an_error(manifest: Path, tmp_path: Path) -> None:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["artifacts"][0]["paper"] = "nope"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"udn/fig2.*'nope'"):
        build_report(manifest, tmp_path / "report.pdf")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(91.73, "91.7"), (0.01234, "0.0123"), (9.996, "10.0"), (1234.5, "1230"), (-0.27, "-0.270"), (0.0, "0"),
     (2.5e-7, "2.50e-07")],
)  # fmt: skip
def test_format_number_keeps_three_significant_digits(value: float, expected: str) -> None:
    assert format_number(value) == expected


def test_typst_str_escapes_backslash_quote_and_control_characters() -> None:
    assert typst_str('a\\b"c\nd\x01#$') == '"a\\\\b\\"c\\nd\\u{1}#$"'

"""The Typst report: a PDF from a small manifest, its text (read back with pypdf), and clear errors."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from pypdf import PdfReader  # noqa: E402

from bnnrepro.artifacts.registry import implementations  # noqa: E402
from bnnrepro.report import INVOCATION_LIMIT, INVOCATION_VARIABLE, invocation_record  # noqa: E402
from bnnrepro.report.manifest import build_manifest, code_commit  # noqa: E402
from bnnrepro.report.typst_elements import format_number, table_from_csv, typst_str  # noqa: E402
from bnnrepro.report.typst_report import build_report  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

SPECIAL = 'a#b $x$ *y* _z_ @ref <a> [x] \\ "q" ω ± 1'

# ids, statuses, verdicts, provenance, the verbatim caption, table cells (ours, published), claims (✓ and ✗)
EXPECTED_TEXT = [
    "udn/fig2", "udn/table1", "udn/fig1", "sdebnn/fig1", "not yet reproduced", "diagram: no data", "drawn",
    "(computed on a stand-in dataset)", "abc123 (uncommitted changes)", "plate diagram; carries no data", SPECIAL,
    "91.7 ± 0.31 n=5", "paper 92.0 ± 0.50", "0.0123", "✓ holds: The UDN is deep.", "✗ contradicted",
    "Verdict: differs: cells: 1 agree, 1 differ", "Verdict: not comparable: stand-in",
    "Paper-scale verdict: undetermined: claims: 0 hold", "runs of commit 0fdf884, collected 2026-11-25",
    "Scale: paper", "smoke (udn_spirals at paper)",  # each artifact's scale; the studies run at another scale
    "Command snakemake --cores 2 --config 'study_scales={udn_spirals: paper}'",
    "Published values: the paper states no numbers for this figure.",  # udn/fig2 (a drawn figure)
]  # fmt: skip

TABLE_CSV = """\
row,column,ours,ours_error,n_runs,published,published_error,difference,verdict,p_value,coincides_with,partial,standin
UDN,accuracy,91.73,0.31,5,92.0,0.5,-0.27,agrees,0.6,,,False
UDN,NLL,0.01234,,5,0.2,0.01,-0.18766,differs,0.001,,,False
ResNet,accuracy,88.4,0.2,3,,,,not judged,,,,False
"""

FIG2_DRAWN_BY = {
    "function": "bnnrepro.artifacts.udn_spirals.spiral_datasets", "file": "src/bnnrepro/artifacts/udn_spirals.py",
    "line": 67, "commit": "abc1234", "local_changes": True,
}  # fmt: skip
TABLE1_DRAWN_BY = {**FIG2_DRAWN_BY, "function": "bnnrepro.artifacts.udn_spirals.average_accuracy", "line": 110,
                   "commit": None, "local_changes": False}  # fmt: skip


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
         "shows": "two spirals", "status": "reproduced", "study": "udn_spirals", "scale": "paper", "standin": True,
         "note": "1024 points per ω", "files": {"png": "reports/figures/udn_fig2.png"}, "drawn_by": FIG2_DRAWN_BY,
         "verdict": "not comparable", "verdict_reason": "stand-in", "claims": [], "cells": None,
         "paper_verdict": {"verdict": "undetermined", "reason": "claims: 0 hold, 0 contradicted, 1 not resolved of 1",
                           "study": "udn_spirals", "commit": "0fdf884", "collected": "2026-11-25"}},
        {"id": "udn/table1", "paper": "udn", "title": "test accuracy", "kind": "table", "caption": "Accuracy.",
         "shows": "accuracy per model", "status": "reproduced", "study": "udn_spirals", "scale": "paper",
         "standin": False, "note": "ours vs published", "files": {"csv": "reports/tables/udn_table1.csv"},
         "drawn_by": TABLE1_DRAWN_BY,
         "verdict": "differs", "verdict_reason": "cells: 1 agree, 1 differ, 0 undetermined of 2; claims: 1 hold",
         "cells": {"agrees": 1, "differs": 1, "undetermined": 0, "not judged": 0},
         "claims": [{"claim": "The UDN is deep.", "holds": True, "evidence": "E_q[l] 8"},
                    {"claim": "The UDN is best.", "holds": False, "evidence": "2nd"}]},
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
            "study_scales": {"udn_spirals": "paper"},
            "created": "2026-11-22T12:00:00Z",
            "command": "snakemake --cores 2 --config 'study_scales={udn_spirals: paper}'",
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


def test_report_names_the_function_that_drew_each_artifact_at_its_commit(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.pdf"
    build_report(manifest, out)
    text = "".join(pdf_text(out.read_bytes()).split())  # a long path may break across lines
    expected = [
        "Drawn by: bnnrepro.artifacts.udn_spirals.spiral_datasets (src/bnnrepro/artifacts/udn_spirals.py:67) "
        "at commit abc1234 + local changes",
        "Drawn by: bnnrepro.artifacts.udn_spirals.average_accuracy (src/bnnrepro/artifacts/udn_spirals.py:110), "
        "not a git checkout",
    ]
    for line in expected:
        assert "".join(line.split()) in text, line


def git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_notes_local_changes_to_tracked_source_files(tmp_path: Path) -> None:
    assert code_commit(tmp_path) == {"commit": None, "local_changes": False}
    (tmp_path / "src").mkdir()
    (tmp_path / "src/module.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("readme\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    clean = {"commit": git(tmp_path, "rev-parse", "--short", "HEAD"), "local_changes": False}
    (tmp_path / "README.md").write_text("edited\n")  # outside src/
    (tmp_path / "src/new.py").write_text("y = 2\n")  # untracked
    assert code_commit(tmp_path) == clean
    (tmp_path / "src/module.py").write_text("x = 2\n")
    assert code_commit(tmp_path) == {**clean, "local_changes": True}


def test_the_manifest_names_the_registered_function_and_its_decorator_line() -> None:
    manifest = build_manifest({"scale": "smoke", "studies": ["udn_spirals"]})
    reproduced = [a for a in manifest["artifacts"] if "drawn_by" in a]
    assert reproduced
    drawn = implementations()
    for artifact in reproduced:
        drawn_by, draw = artifact["drawn_by"], drawn[artifact["id"]].draw
        assert drawn_by["function"] == f"{draw.__module__}.{draw.__name__}"
        lines = (ROOT / drawn_by["file"]).read_text().splitlines()
        assert lines[drawn_by["line"] - 1].startswith(("@figure(", "@table(")), artifact["id"]
        decorated = "\n".join(lines[drawn_by["line"] - 1 :]).split("def ", 1)
        assert f'"{artifact["id"]}"' in decorated[0] and decorated[1].startswith(f"{draw.__name__}(")
        assert drawn_by["commit"] == code_commit(ROOT)["commit"]


def test_the_first_page_is_the_summary_of_drawn_artifacts_verdicts_and_claims(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.pdf"
    build_report(manifest, out)
    first_page = " ".join(PdfReader(out).pages[0].extract_text().split())
    dense = first_page.replace(" ", "")
    # udn at paper: 2 artifacts, 2 drawn, 0 match, 1 differs, 0 undetermined, 1 not comparable, 1 of 2 claims;
    # sdebnn: 1 not drawn
    assert first_page.startswith("bnnrepro: reproduction report Summary")
    assert "InfinitelyDeepNeuralNetworkspaper2201011of2" in dense
    assert "InfinitelyDeepBayesianNeuralNetworkswithSDEsnotdrawn100000–" in dense
    assert "Total3201011of2" in dense
    assert "differs: udn/table1; not comparable: udn/fig2" in first_page and "not drawn: sdebnn/fig1" in first_page
    assert '"studies"' not in first_page  # the whole configuration is the last section, linked from here
    last_page = " ".join(PdfReader(out).pages[-1].extract_text().split())
    assert 'Configuration { "scale": "smoke", "studies": [ "udn_spirals" ] }' in last_page


def test_a_table_is_shown_in_its_papers_layout(manifest: Path, tmp_path: Path) -> None:
    """Rows x columns, each cell ours over the published value (the CSV keeps a row per cell)."""
    out = tmp_path / "report.pdf"
    build_report(manifest, out)
    text = pdf_text(out.read_bytes())
    assert "accuracy NLL UDN 91.7 ± 0.31 n=5 paper 92.0 ± 0.50 0.0123 n=5 paper 0.200 ± 0.010" in text
    assert "ResNet 88.4 ± 0.20 n=3" in text


def test_a_drawn_artifact_without_its_checks_names_the_missing_file(manifest: Path, tmp_path: Path) -> None:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["artifacts"][1].update(verdict=None, checks_file="reports/checks/udn_table1.json")
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=r"udn/table1.*reports/checks/udn_table1\.json"):
        build_report(manifest, tmp_path / "report.pdf")


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


def test_a_count_is_shown_in_full_and_a_mean_to_significant_digits(tmp_path: Path) -> None:
    """A leaderboard's cost columns: a parameter count and the settings tried (whole, no n) in full; a mean rank over
    blocks (with n) and a learned depth (not whole) to three significant digits."""
    (tmp_path / "ranks.csv").write_text(
        "row,column,ours,ours_error,n_runs,published,published_error,difference,verdict,p_value,coincides_with,"
        "partial,standin\nudn,nll rank,2.0,,5,,,,,,,,False\nudn,trained parameters,12345.0,,,,,,,,,,False\n"
        "udn,settings tried per split,1.0,,,,,,,,,,False\nudn,hidden layers,2.3456,,,,,,,,,,False\n"
    )
    table = table_from_csv(tmp_path / "ranks.csv", published=False)
    assert all(f'"{shown}"' in table for shown in ("2.00", "12,345", "1", "2.35"))
    assert '"1.00"' not in table and '"12300"' not in table


@pytest.mark.parametrize(
    ("value", "expected"),
    [(91.73, "91.7"), (0.01234, "0.0123"), (9.996, "10.0"), (1234.5, "1230"), (-0.27, "-0.270"), (0.0, "0"),
     (2.5e-7, "2.50e-07")],
)  # fmt: skip
def test_format_number_keeps_three_significant_digits(value: float, expected: str) -> None:
    assert format_number(value) == expected


def test_typst_str_escapes_backslash_quote_and_control_characters() -> None:
    assert typst_str('a\\b"c\nd\x01#$') == '"a\\\\b\\"c\\nd\\u{1}#$"'


def test_each_artifacts_module_is_found_without_importing_the_others() -> None:
    """A figure or table job imports only the module that draws its artifact: the id -> module map read from the
    decorators names every implemented artifact, with the module that registers it."""
    from bnnrepro.artifacts.registry import artifact_modules, implementations

    assert {k: impl.draw.__module__ for k, impl in implementations().items()} == artifact_modules()


def test_the_recorded_command_of_a_batch_with_thousands_of_targets_lets_every_job_start() -> None:
    """The Snakefile records its command in INVOCATION_VARIABLE, which every job inherits. Linux starts no process
    whose environment holds a string over 128 KiB, so the benchmark's 2,100-target rerun command, recorded whole,
    stopped the workflow before its first job (the control below); the record keeps the options, the first and last
    targets and the trailing --config, and counts the targets it leaves out."""
    targets = [f"results/paper/runs/mfvi~0123abcd/uci_wine/split={i}+noise_precision=25.0/seed={i}/metrics.json"
               for i in range(2100)]  # fmt: skip
    argv = ["snakemake", "--cores", "2", "--keep-going", *targets, "--config", "study_scales={uci_benchmark: paper}"]
    record = invocation_record(argv)
    assert len(record) <= INVOCATION_LIMIT
    assert record.startswith(f"snakemake --cores 2 --keep-going {shlex.quote(targets[0])} ")  # quoted: '~'
    assert record.endswith(f"{shlex.quote(targets[-1])} --config 'study_scales={{uci_benchmark: paper}}'")
    kept = record.count("metrics.json")
    assert f"[... {2100 - kept} arguments left out of this record ...]" in record and 0 < kept < 2100

    def starts(value: str) -> bool:
        try:
            subprocess.run(["true"], env={INVOCATION_VARIABLE: value}, check=True)
        except OSError:  # E2BIG: "Argument list too long"
            return False
        return True

    assert starts(record)
    assert not starts(shlex.join(argv))  # the whole command: no process starts
    short = ["snakemake", "--cores", "2", "--config", "study_scales={tiny: default}"]
    assert invocation_record(short) == shlex.join(short)  # a usual command is recorded as run

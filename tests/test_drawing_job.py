"""`python -m bnnrepro.artifacts`: one process draws each artifact of a study named after its own `--artifact`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bnnrepro.artifacts.__main__ import artifact_arguments
from bnnrepro.report import files as report_files
from tests.conftest import ROOT, environment


def test_each_artifact_gets_the_options_after_its_own_artifact_flag() -> None:
    argv = ["--study", "s", "--scale", "smoke", "--artifact", "a/1", "--metrics", "m.csv", "--artifact", "a/2", "--x"]
    assert artifact_arguments(argv) == (
        ["--study", "s", "--scale", "smoke"],
        [["a/1", "--metrics", "m.csv"], ["a/2", "--x"]],
    )


def test_a_call_without_an_artifact_says_how_to_name_one(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        artifact_arguments(["--study", "s", "--scale", "smoke"])
    assert "name at least one artifact: --artifact ID" in capsys.readouterr().err


def test_one_process_draws_a_figure_and_a_table_of_formulas(tmp_path: Path) -> None:
    """thesis/fig3.3 and sdebnn/table5 need no results: both drawn in one call, each with its files and checks."""
    figure = [tmp_path / f"fig.{e}" for e in report_files.ARTIFACT_FORMATS["figure"]]
    table = [tmp_path / f"table.{e}" for e in report_files.ARTIFACT_FORMATS["table"]]
    command = [
        sys.executable, "-m", "bnnrepro.artifacts", "--study", "thesis_vbp", "--scale", "smoke",
        "--artifact", "thesis/fig3.3", "--outputs", *map(str, figure), "--checks", str(tmp_path / "fig.json"),
        "--artifact", "sdebnn/table5", "--outputs", *map(str, table), "--checks", str(tmp_path / "table.json"),
    ]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, env=environment(ROOT), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["drawing thesis/fig3.3", "drawing sdebnn/table5"]
    assert figure[0].read_bytes().startswith(b"%PDF") and figure[1].stat().st_size > 1000
    assert all(f.stat().st_size > 0 for f in table)
    assert "claims" in json.loads((tmp_path / "fig.json").read_text())
    assert json.loads((tmp_path / "table.json").read_text())["cells"] is not None

"""The README's "Bring your own dataset" walk-through, as a user follows it: its file blocks applied to a copy of the
project, the study run through Snakemake at smoke scale, and its table found in the report."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from bnnrepro.report import files as report_files
from bnnrepro.report import own_study
from bnnrepro.report.study_summary import study_summary
from bnnrepro.report.typst_elements import header_cell
from bnnrepro.report.typst_report import render_own_studies
from tests.conftest import ROOT, copy_project, run

SECTION = "## Bring your own dataset"


def walkthrough_blocks(readme: str) -> list[tuple[str, str, str]]:
    """(action, path, text) of each YAML block of the section: `# file: PATH` writes PATH, `# append to: PATH`
    appends to it."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n# (file|append to): (\S+)\n(.*?)```", section, flags=re.S)
    assert blocks, f"no file blocks in the README's {SECTION!r} section"
    return blocks


def walkthrough_command(readme: str) -> list[str]:
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```bash\n(snakemake .*?)\n```", section).group(1)
    return [part.strip("'") for part in command.split()]


def count_lines(blocks: list[tuple[str, str, str]]) -> tuple[int, int]:
    """(files, lines) the walk-through adds."""
    return len({path for _, path, _ in blocks}), sum(len(text.strip().splitlines()) for *_, text in blocks)


@pytest.mark.slow
def test_the_readme_walkthrough_adds_a_dataset_and_study_that_reach_the_report(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = walkthrough_blocks(readme)
    assert count_lines(blocks) == (3, 24)  # the README's claim: three small files (24 lines) and no code
    project = copy_project(tmp_path / "project")
    for action, path, text in blocks:
        target = project / path
        if action == "append to":
            target.write_text(target.read_text() + "\n" + text)
        else:
            assert not target.exists(), f"the walk-through would overwrite {path}"
            target.write_text(text)

    command = walkthrough_command(readme)
    assert command[:3] == ["snakemake", "--cores", "2"] and "studies=[diabetes]" in command
    # at smoke scale; the run prepares only the data of its study, not config.yaml's `datasets` (`snakemake data`)
    run([*command, "scale=smoke"], project)
    assert not (project / "results/data/uci_boston-standin.npz").exists()

    table = pd.read_csv(project / "reports/tables/study_diabetes_regression.csv")
    assert set(table["row"]) == {"gp", "deep_ensemble", "mfvi", "laplace"}
    assert {"sklearn_diabetes rmse_original", "sklearn_diabetes nll_original"} <= set(table["column"])
    assert (table["n_runs"] == 2).all() and table["ours"].notna().all()  # the two smoke splits
    assert not table["standin"].any()  # a packaged dataset is real at every scale
    report = (project / "reports/report.typ").read_text()
    assert "Studies of your own" in report and header_cell("sklearn_diabetes rmse_original") in report
    assert (project / "reports/report.pdf").stat().st_size > 0


def test_a_study_summary_averages_seeds_and_splits_and_keeps_settings_apart() -> None:
    rows = [
        ("mfvi", "lr=0.01+split=0", 0, "test_rmse", 1.0),
        ("mfvi", "lr=0.01+split=1", 0, "test_rmse", 3.0),
        ("mfvi", "lr=0.1+split=0", 0, "test_rmse", 5.0),
        ("mfvi", "lr=0.01+split=0", 0, "last_test_rmse", 9.0),
        ("mfvi", "lr=0.01+split=0", 0, "val_rmse", 9.0),
    ]
    metrics = pd.DataFrame(rows, columns=["method", "hparams", "seed", "metric", "value"])
    metrics["dataset"], metrics["standin"] = "mine", False
    table = study_summary(metrics).set_index("row")
    assert list(table.index) == ["mfvi [lr=0.01]", "mfvi [lr=0.1]"]
    assert table.loc["mfvi [lr=0.01]", "column"] == "mine rmse"
    assert table.loc["mfvi [lr=0.01]", "ours"] == 2.0 and table.loc["mfvi [lr=0.01]", "n_runs"] == 2
    assert table.loc["mfvi [lr=0.01]", "ours_error"] == pytest.approx(1.0)  # std 1.414 / sqrt(2)
    assert math.isnan(table.loc["mfvi [lr=0.1]", "ours_error"])


def test_the_report_has_a_section_for_studies_of_your_own(tmp_path: Path) -> None:
    """The job of a study of your own writes its table, its ranking, the figure of its metrics per dataset and the
    critical-difference diagrams; the report's section shows them all."""
    rows = [
        (method, f"split={split}", dataset, metric, value + offset + 0.1 * split)
        for method, offset in (("gp", 0.0), ("mfvi", 0.5), ("laplace", 1.0))
        for dataset in ("mine", "yours")
        for split in range(3)
        for metric, value in (("test_rmse_original", 1.0), ("test_nll_original", 2.0), ("test_rmse", 0.3),
                              ("train_seconds", 10.0))
    ]  # fmt: skip
    metrics = pd.DataFrame(rows, columns=["method", "hparams", "dataset", "metric", "value"])
    metrics["seed"], metrics["standin"] = 0, False
    (tmp_path / "metrics.csv").write_text(metrics.to_csv(index=False))
    files = report_files.own_study_files("mine_vs_gp", "regression")
    arguments = [f"--{name.replace('_', '-')}" if name.endswith("figure") else f"--{name}" for name in files]
    (tmp_path / "mine_vs_gp.yaml").write_text("paper: own\ngrids: {}\n")  # no benchmark: block
    command = [str(tmp_path / "mine_vs_gp.yaml"), str(tmp_path / "metrics.csv"), "--task", "regression"]
    command += ["--datasets", "mine", "yours"]
    for argument, outputs in zip(arguments, files.values(), strict=True):
        command += [argument, *(str(tmp_path / path) for path in outputs.values())]
    own_study.main(command)
    ranking = pd.read_csv(tmp_path / files["ranking"]["csv"]).set_index(["column", "row"])
    assert ranking.loc[("rmse_original rank", "gp"), "ours"] == 1.0  # best in every block
    assert ranking.loc[("nll_original rank", "laplace"), "ours"] == 3.0
    ranks = ranking[ranking.index.get_level_values("column").str.endswith(" rank")]
    assert (ranks["n_runs"] == 2).all()  # two datasets, each a block (its mean over three splits)
    assert ranking.loc[("training s per run", "mfvi"), "ours"] == pytest.approx(10.6)  # its mean over six runs
    assert ranking.loc[("settings tried per split", "mfvi"), "ours"] == 1
    section = {"task": "regression", "datasets": ["mine", "yours"], "files": files}
    study = {"study": "mine_vs_gp", "description": "My comparison.", "scale": "smoke", "sections": [section]}
    source = render_own_studies([study], tmp_path)
    assert source.startswith('#heading(level: 1, "Studies of your own")')
    assert '"mine_vs_gp"' in source and '"My comparison."' in source and header_cell("mine rmse_original") in source
    assert header_cell("rmse_original rank") in source and "Friedman test" in source
    assert "the paper's value" not in source  # no legend of published values, which a study of your own has none of
    for figure in ("metrics_figure", "ranking_figure"):
        assert "/" + files[figure]["png"] in source
    for table in ("selection", "published"):  # a study without a benchmark: block has neither
        assert pd.read_csv(tmp_path / files[table]["csv"]).empty
    assert "Published numbers of the methods" not in source and "Settings chosen" not in source
    equivalence = pd.read_csv(tmp_path / files["equivalence"]["csv"]).set_index(["row", "column"])
    assert equivalence.loc[("gp", "rmse_original P(equivalent or better)"), "ours"] == 1.0  # the best, the reference
    assert (equivalence["n_runs"] == 2).all() and "Bayesian signed-rank test" in source  # two datasets
    assert "Which method to use?" in source and "rmse_original: best gp (10.1 s/run)" in source
    table = pd.read_csv(tmp_path / files["table"]["csv"])
    assert set(table["column"].str.split(" ").str[1]) == {"rmse_original", "nll_original"}  # not test_rmse
    assert render_own_studies([], tmp_path) == ""

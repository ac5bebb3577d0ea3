"""docs/own_data.md as a user follows it: a dataset a package ships, a CSV download served from a local mirror and a
study of both take at most four files and sixty lines; the study runs through the workflow into the report; the
page's table of methods by task is the one the methods' declarations give."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnnrepro.pipeline.method_tasks import task_table
from tests.conftest import ROOT, copy_project, run

PAGE = ROOT / "docs/own_data.md"
BLOCK = re.compile(r"```yaml\n# (file|append to|under downloads): (\S+)\n(.*?)```", flags=re.S)
TABLE = re.compile(r"<!-- methods by task: .*? -->\n(.*?)<!-- end of methods by task -->", flags=re.S)


def page_blocks() -> list[tuple[str, str, str]]:
    blocks = BLOCK.findall(PAGE.read_text())
    assert blocks, f"no file blocks in {PAGE}"
    return blocks


def test_the_extension_takes_at_most_four_files_and_sixty_lines() -> None:
    blocks = page_blocks()
    files = {path for _, path, _ in blocks}
    lines = sum(len(text.strip().splitlines()) for *_, text in blocks)
    assert len(files) <= 4 and lines <= 60, (sorted(files), lines)
    assert (len(files), lines) == (4, 36)  # the page's claim: four files; keep this count in step with the page


def test_the_pages_table_of_methods_by_task_is_the_declared_one() -> None:
    assert TABLE.search(PAGE.read_text()).group(1) == task_table()


def motorcycle_csv() -> bytes:
    """A table shaped as R's MASS::mcycle (row names, times, accel; 133 rows), written by R's write.csv."""
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(2.4, 57.6, 133)).round(1)
    accel = (-100 * np.sin(times / 9) * np.exp(-times / 40) + rng.normal(0, 10, 133)).round(1)
    frame = pd.DataFrame({"times": times, "accel": accel}, index=range(1, 134))
    return frame.to_csv(index=True).encode()


@pytest.mark.slow
def test_the_pages_study_runs_on_both_datasets_into_the_report(tmp_path: Path, mirror) -> None:
    url, folder, server = mirror
    body = motorcycle_csv()
    (folder / "rdatasets/MASS").mkdir(parents=True)
    (folder / "rdatasets/MASS/mcycle.csv").write_bytes(body)
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    for action, path, text in page_blocks():
        target = project / path
        text = text.replace("<md5 of mcycle.csv>", hashlib.md5(body).hexdigest())
        text = text.replace("<its size in bytes>", str(len(body)))
        if action == "append to":
            target.write_text(target.read_text() + "\n" + text)
        elif action == "under downloads":
            target.write_text(target.read_text().replace("downloads:\n", "downloads:\n" + text, 1))
        else:
            assert not target.exists(), f"the page would overwrite {path}"
            target.write_text(text)
    config = ["studies=[mine]", "scale=smoke", "real_data=[mcycle]", f"data_mirror={url}"]
    run(["snakemake", "--cores", "2", "--config", *config], project)
    assert any(request.endswith("/rdatasets/MASS/mcycle.csv") for request in server.requests)
    table = pd.read_csv(project / "reports/tables/study_mine.csv")
    assert {"sklearn_diabetes rmse_original", "mcycle rmse_original"} <= set(table["column"])
    assert set(table["row"]) == {"gp", "mfvi", "mc_dropout"} and table["ours"].notna().all()
    ranking = pd.read_csv(project / "reports/tables/study_mine_ranking.csv")
    assert set(ranking["row"]) == {"gp", "mfvi", "mc_dropout"} and (ranking["n_runs"] == 4).all()
    report = (project / "reports/report.typ").read_text()
    own_section = report.index('#heading(level: 1, "Studies of your own")')
    assert own_section < report.index('#heading(level: 1, "Infinitely Deep Bayesian Neural Networks')
    assert "Nothing to be done" in run(["snakemake", "-n", "--config", *config], project).stdout

"""docs/own_data.md as a user follows it: a classification table a package ships, a CSV regression table served from
a local mirror and one study over both take at most four files and sixty lines; the study runs every method the page
lists for each task through the workflow into the report, with the page's sets and with other sets in their place;
the page's table of methods by task is the one the methods' declarations and configs give."""

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
    assert (len(files), lines) == (4, 41)  # the page's claim: four files; keep this count in step with the page
    assert f"Four files ({lines} lines of YAML)" in PAGE.read_text()


def test_the_pages_table_of_methods_by_task_is_the_declared_one() -> None:
    assert TABLE.search(PAGE.read_text()).group(1) == task_table()


def motorcycle_csv() -> bytes:
    """A table shaped as R's MASS::mcycle (row names, times, accel; 133 rows), written by R's write.csv."""
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(2.4, 57.6, 133)).round(1)
    accel = (-100 * np.sin(times / 9) * np.exp(-times / 40) + rng.normal(0, 10, 133)).round(1)
    frame = pd.DataFrame({"times": times, "accel": accel}, index=range(1, 134))
    return frame.to_csv(index=True).encode()


def engel_csv() -> bytes:
    """A table shaped as R's quantreg::engel (row names, income, foodexp; 235 households), a set the page does not
    use."""
    rng = np.random.default_rng(1)
    income = rng.lognormal(6.6, 0.5, 235).round(2)
    foodexp = (0.56 * income + rng.normal(0, 40, 235) + 80).round(2)
    return pd.DataFrame({"income": income, "foodexp": foodexp}, index=range(1, 236)).to_csv(index=True).encode()


FRESH = {"sklearn_breast_cancer": "sklearn_wine", "load_breast_cancer": "load_wine", "mcycle": "engel",
         "rdatasets/MASS/": "rdatasets/quantreg/", "target: accel, features: [times]": "target: foodexp",
         "Rdatasets/csv/MASS/": "Rdatasets/csv/quantreg/",
         "smoke: {classification: {dataset.split: [0, 1]}, regression: {dataset.split: [0, 1]}}":
         "smoke: {classification: {dataset.split: [0, 1], method: [mc_dropout, vbp]}, "
         "regression: {dataset.split: [0, 1], method: [gp, mc_dropout]}}"}  # fmt: skip
"""The page's sets replaced by others it does not use: scikit-learn's wine classes (three) and a CSV of household
food expenditure (its features: every column but the target); at smoke two methods a task (the page's run covers
every method, this one the data)."""
FRESH_METHODS = {"classification": {"mc_dropout", "vbp"}, "regression": {"gp", "mc_dropout"}}
VARIANTS = {"page": ({}, "rdatasets/MASS/mcycle.csv", motorcycle_csv, ["sklearn_breast_cancer", "mcycle"]),
            "fresh": (FRESH, "rdatasets/quantreg/engel.csv", engel_csv, ["sklearn_wine", "engel"])}  # fmt: skip


def replaced(text: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_pages_study_runs_on_both_datasets_into_the_report(tmp_path: Path, mirror, variant: str) -> None:
    replacements, served, body_of, (classes, regression) = VARIANTS[variant]
    url, folder, server = mirror
    body = body_of()
    (folder / served).parent.mkdir(parents=True)
    (folder / served).write_bytes(body)
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    for action, path, text in page_blocks():
        path, text = replaced(path, replacements), replaced(text, replacements)
        target = project / path
        text = text.replace(f"<md5 of {Path(served).name}>", hashlib.md5(body).hexdigest())
        text = text.replace("<its size in bytes>", str(len(body)))
        if action == "append to":
            target.write_text(target.read_text() + "\n" + text)
        elif action == "under downloads":
            target.write_text(target.read_text().replace("downloads:\n", "downloads:\n" + text, 1))
        else:
            assert not target.exists(), f"the page would overwrite {path}"
            target.write_text(text)
    settings = project / "config/config.yaml"  # the site's mirror, set once in the user's config, not on each call
    settings.write_text(settings.read_text().replace("data_mirror: null", f"data_mirror: {url}"))
    config = ["studies=[mine]", "scale=smoke"]
    run(["snakemake", "--cores", "2", "--config", *config], project)
    assert any(request.endswith(served) for request in server.requests)
    study = replaced(PAGE.read_text().split("# file: config/studies/mine.yaml", 1)[1], replacements)
    for task, dataset, metric in (("classification", classes, "accuracy"), ("regression", regression, "rmse_original")):
        grid = study.split(f"  {task}:", 1)[1].split("dataset:", 1)[0]
        methods = set(re.findall(r"\w+", grid.split("method:", 1)[1])) - {"method"}
        methods = FRESH_METHODS[task] if variant == "fresh" else methods
        table = pd.read_csv(project / f"reports/tables/study_mine_{task}.csv")
        assert f"{dataset} {metric}" in set(table["column"]), table["column"].unique()
        assert set(table["row"]) == methods and table["ours"].notna().all()  # every method the page lists, trained
        ranking = pd.read_csv(project / f"reports/tables/study_mine_{task}_ranking.csv")
        ranks = ranking[ranking["column"].str.endswith(" rank")]  # beside them, each method's cost (no n)
        assert set(ranking["row"]) == methods and (ranks["n_runs"] == 2).all()
    assert not pd.read_csv(project / "reports/tables/study_mine_regression.csv")["standin"].any()  # real_data: true
    report = (project / "reports/report.typ").read_text()
    own_section = report.index('#heading(level: 1, "Studies of your own")')
    assert own_section < report.index('#heading(level: 1, "Infinitely Deep Bayesian Neural Networks')
    assert f"Classification: {classes}" in report and f"Regression: {regression}" in report
    assert "Nothing to be done" in run(["snakemake", "-n", "--config", *config], project).stdout

"""The UCI "gap" splits (bnnrepro.data.uci.gap_split; Foong et al. 2019): on the real data, the test set is the middle
third of the rows by one feature, the same rows as the DUN authors' files where no tie straddles a third's edge; a
random split (the control) has no gap. The benchmark on them (config/studies/uci_benchmark_gap.yaml) runs one split
per feature, in run folders of its own, and the workflow trains and ranks them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bnnrepro.data import uci
from bnnrepro.pipeline.studies import load_study
from tests.conftest import SHARED, copy_project
from tests.conftest import run as run_command

needs_real_data = pytest.mark.skipif(
    not SHARED.exists(), reason="../shared/datasets (the real UCI files) is not beside the project"
)

DUN_TEST_ROWS = {
    # sha256 of the sorted row indices of `cambridge-mlg/DUN` experiments/data/UCI_for_sharing/gap/<set>/data/
    # index_test_0.txt, joined by commas (168 and 256 rows)
    "bostonHousing": "cfeda963daf3cd9729005a38d37920c2c33d8e75acbd6ba5732187baf11b6ff2",
    "energy": "e2198a40cbeecd812048ff20b70f9466b7bb9f2dfafeff26b3c66fdf566888d4",
}


def features(folder: str) -> np.ndarray:
    table = np.loadtxt(SHARED / f"uci/{folder}/data.txt")
    return table[:, np.atleast_1d(np.loadtxt(SHARED / f"uci/{folder}/index_features.txt", dtype=int))]


def fingerprint(rows: np.ndarray) -> str:
    return hashlib.sha256(",".join(map(str, sorted(rows.tolist()))).encode()).hexdigest()


def has_gap(x: np.ndarray, feature: int, train: np.ndarray, test: np.ndarray) -> bool:
    """No training row's value of `feature` lies strictly inside the test rows' range of it."""
    low, high = x[test, feature].min(), x[test, feature].max()
    return not ((x[train, feature] > low) & (x[train, feature] < high)).any()


@needs_real_data
@pytest.mark.parametrize("folder", sorted(DUN_TEST_ROWS))
def test_split_0_tests_the_dun_authors_rows(folder: str) -> None:
    _, _, test = uci.gap_split(features(folder), 0, 0.2)
    assert fingerprint(test) == DUN_TEST_ROWS[folder]


@needs_real_data
@pytest.mark.parametrize("folder", ["yacht", "concrete", "wine-quality-red"])
def test_every_feature_leaves_a_gap_of_a_third_of_the_rows(folder: str) -> None:
    x = features(folder)
    rows = len(x)
    for feature in range(x.shape[1]):
        train, val, test = uci.gap_split(x, feature, 0.2)
        assert len(test) == 2 * rows // 3 - -(-rows // 3)
        assert sorted([*train, *val, *test]) == list(range(rows))
        assert has_gap(x, feature, np.concatenate([train, val]), test)
        assert len(val) == round(0.2 * (len(train) + len(val)))
        # validation comes from both outer thirds (a tie at a third's edge can put the same value on both sides)
        assert (x[val, feature] <= x[test, feature].min()).any() and (x[val, feature] >= x[test, feature].max()).any()


@needs_real_data
def test_control_a_random_split_has_no_gap() -> None:
    x = features("yacht")
    train, _, test = uci.split_indices({"x": x, "y": np.zeros(len(x))}, 0, "udn", 0.0)
    assert not has_gap(x, 0, train, test)


@needs_real_data
def test_a_feature_the_set_lacks_is_an_error_naming_the_count() -> None:
    with pytest.raises(ValueError, match="has 6 .one per input feature"):
        uci.split_indices({"x": features("yacht")}, 6, "gap", 0.2)


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_the_gap_benchmark_runs_one_split_per_feature_in_folders_of_their_own(scale: str) -> None:
    """config/studies/uci_benchmark_gap.yaml: at paper every set's splits are its input features (uci.SHAPES), every
    run composes the gap protocol, and no run shares a folder with the standard splits' benchmark."""
    gap, standard = load_study("uci_benchmark_gap"), load_study("uci_benchmark")
    runs = gap.runs(scale)
    assert runs and all("dataset.protocol=gap" in gap.overrides(run) for run in runs)
    assert not {run.folder for run in runs} & {run.folder for run in standard.runs(scale)}
    if scale == "paper":
        splits = {run.dataset: set() for run in runs}
        for run in runs:
            splits[run.dataset].add(dict(run.hparams)["dataset.split"])
        assert {name: sorted(found) for name, found in splits.items()} == {
            name: list(range(uci.SHAPES[name][1])) for name in splits
        }


@pytest.mark.slow
def test_the_workflow_trains_the_gap_benchmark_on_its_splits_and_ranks_it(tmp_path: Path) -> None:
    """`snakemake --config studies=[uci_benchmark_gap]` at smoke, to the study's ranking: every run composed the gap
    protocol on its feature's split, and the ranking has each method's ranks over those splits."""
    project = copy_project(tmp_path / "project")
    run_command(["git", "init", "-q"], project)
    run_command(["dvc", "init", "-q"], project)
    ranking_file = "reports/tables/study_uci_benchmark_gap_regression_ranking.csv"
    run_command(["snakemake", "--cores", "2", ranking_file, "--config", "scale=smoke", "studies=[uci_benchmark_gap]"],
                project)  # fmt: skip
    study = load_study("uci_benchmark_gap")
    for run in study.runs("smoke"):
        composed = yaml.safe_load((project / run.file("config.yaml")).read_text())["dataset"]
        assert (composed["protocol"], composed["split"]) == ("gap", dict(run.hparams)["dataset.split"])
    ranking = pd.read_csv(project / ranking_file)
    ranks = ranking[ranking["column"].isin(["rmse_original rank", "nll_original rank"])]
    assert set(ranks["row"]) == set(study.benchmark["scales"]["smoke"]["methods"])
    assert (ranks["n_runs"] == 2).all()  # yacht's first two features

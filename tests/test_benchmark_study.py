"""A benchmark (a study file's `benchmark:` block, bnnrepro.pipeline.benchmark_grids and
bnnrepro.report.benchmark): every method that declares the task unless left out, one grid per method with its own
tuning values, the settings chosen on validation data only, and the published numbers judged by the fidelity rule,
with negative controls (a constant predictor, a setting that is best on test data but not on validation)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bnnrepro.artifacts.verdict_rules import AGREES, DIFFERS, NOT_COMPARABLE, NOT_JUDGED
from bnnrepro.pipeline.benchmark_grids import benchmark_grids
from bnnrepro.pipeline.method_tasks import methods_taking
from bnnrepro.pipeline.studies import StudyError, load_study, task_mismatch
from bnnrepro.report.benchmark import published_comparison, published_values, validation_choice
from tests.conftest import copy_project
from tests.conftest import run as run_command

UCI = load_study("uci_benchmark")


def test_the_uci_benchmark_runs_every_regression_method_but_those_it_leaves_out_with_a_reason() -> None:
    left_out = UCI.benchmark["leave_out"]
    assert set(left_out) == {"latent_sde", "hmc"} and all(len(why) > 20 for why in left_out.values())
    paper_methods = {run.method for run in UCI.runs("paper")}
    assert paper_methods == set(methods_taking("regression")) - set(left_out)
    assert len(paper_methods) >= 15
    assert task_mismatch(UCI, UCI.runs("paper")) is None


def test_each_method_varies_only_its_own_tuning_values_over_the_same_blocks() -> None:
    runs = UCI.runs("paper")
    blocks = {(run.dataset, dict(run.hparams)["dataset.split"], run.seed) for run in runs}
    assert len(blocks) == 8 * 20 + 5  # eight sets with 20 splits; protein's published splits are 5
    for method in {run.method for run in runs}:
        own = [run for run in runs if run.method == method]
        tuned = set(UCI.benchmark.get("tuning", {}).get(method, {}))
        assert {key for run in own for key, _ in run.hparams} == {"dataset.split", *tuned}
        settings = math.prod(len(v) for v in UCI.benchmark.get("tuning", {}).get(method, {}).values())
        assert len(own) == len(blocks) * settings
        assert all(run.seed == dict(run.hparams)["dataset.split"] for run in own)  # one seed per split


def test_below_paper_the_benchmark_runs_its_listed_methods_on_fewer_blocks() -> None:
    default = UCI.runs("default")
    listed = UCI.benchmark["scales"]["default"]["methods"]
    assert {run.method for run in default} == set(listed)
    assert {run.dataset for run in default} == {"uci_boston", "uci_concrete", "uci_energy", "uci_wine", "uci_yacht"}
    assert {dict(run.hparams)["dataset.split"] for run in default} == set(range(2))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"leave_out": {"edl": "not regression"}}, "leave_out names \\['edl'\\], which do not take regression"),
        ({"tuning": {"edl": {"optim.lr": [0.1]}}}, "benchmark.tuning names \\['edl'\\], not among its methods"),
        ({"scales": {"smoke": {"methods": ["edl"]}}}, "scales.smoke names \\['edl'\\], neither among its methods"),
        ({"scales": {"smoke": {"protien": {"dataset": []}}}}, "names \\['protien'\\], neither among its methods"),
    ],
)
def test_a_benchmark_naming_a_method_it_cannot_run_fails_with_the_reason(change: dict, message: str) -> None:
    block = {"task": "regression", "grids": {"uci": {"dataset": ["uci_yacht"], "seed": [0]}}, "select_by": "val_nll"}
    with pytest.raises(StudyError, match=message):
        benchmark_grids({**block, **change}, "mine")


def test_a_benchmark_listing_a_method_without_the_task_fails_when_the_dag_is_built(tmp_path: Path) -> None:
    raw = yaml.safe_load((Path(__file__).parents[1] / "config/studies/uci_benchmark.yaml").read_text())
    raw["benchmark"].update(methods=["mc_dropout", "edl"], tuning={}, unranked={}, scales={})
    grids = benchmark_grids(raw["benchmark"], "mine")
    assert set(grids["grids"]) == {"mc_dropout/uci", "mc_dropout/protein", "edl/uci", "edl/protein"}
    study = UCI.__class__(**{**UCI.__dict__, "grids": grids["grids"], "scales": {},
                             "method_variants": {**UCI.method_variants, "edl": {"method": "edl"}}})  # fmt: skip
    mismatch = task_mismatch(study, study.runs("paper"))
    assert mismatch is not None and "edl" in mismatch and "regression" in mismatch and "mc_dropout" in mismatch


def tidy(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["run", "method", "dataset", "hparams", "seed", "metric", "value"])
    frame["standin"] = False
    return frame


def test_validation_chooses_each_split_s_setting_and_never_looks_at_test_data() -> None:
    """Per split, the setting with the lowest validation NLL is the method's result, even where another setting
    has the better test NLL (the negative control: a choice made on test data would pick the other)."""
    rows = []
    for split in range(4):
        for dropout, val, test in ((0.01, 1.0 + split, 9.0), (0.1, 2.0 + split, 1.0)):
            run = f"mc/{split}/{dropout}"
            slug = f"split={split}+dropout={dropout}"
            rows += [(run, "mc_dropout", "uci_yacht", slug, split, "val_nll_original", val),
                     (run, "mc_dropout", "uci_yacht", slug, split, "test_nll_original", test)]  # fmt: skip
    selected, choices = validation_choice(tidy(rows), "val_nll_original")
    test = selected[selected["metric"] == "test_nll_original"]
    assert list(test["value"]) == [9.0] * 4  # dropout 0.01, the validation choice, on every split
    assert set(test["hparams"]) == {f"split={k}" for k in range(4)}  # one entrant per method
    assert choices.set_index("row").loc["mc_dropout", "ours"] == "dropout=0.01 (4/4)"
    with pytest.raises(ValueError, match="record no val_rmse: give them a validation split"):
        validation_choice(tidy(rows), "val_rmse")


def test_the_leaderboard_shows_each_method_s_size_tuning_grid_and_training_time() -> None:
    """Settings tried per split (each a run), the mean training seconds and network size over every run, tuning runs
    included; the controls: a method with one setting shows 1, one whose runs record no size shows none."""
    from bnnrepro.report.benchmark_document import method_costs

    rows = []
    for split in range(2):
        for dropout, seconds in ((0.01, 1.0), (0.05, 2.0), (0.1, 3.0)):
            rows.append((f"mc/{split}/{dropout}", "mc_dropout", "uci_yacht", f"split={split}+dropout={dropout}", 0,
                         "train_seconds", seconds))  # fmt: skip
        rows.append((f"gp/{split}", "gp", "uci_yacht", f"split={split}", 0, "train_seconds", 10.0 + split))
    rows += [(f"mc/{split}/{dropout}", "mc_dropout", "uci_yacht", f"split={split}+dropout={dropout}", 0, fact, value)
             for split in range(2) for dropout in (0.01, 0.05, 0.1)
             for fact, value in (("parameters", 401.0), ("hidden_layers", 1.0))]  # fmt: skip
    costs = method_costs(tidy(rows), {"split"})[["settings", "seconds", "parameters", "hidden_layers"]]
    assert costs.loc["mc_dropout"].tolist() == [3, 2.0, 401, 1]
    assert costs.loc["gp"].tolist()[:2] == [1, 10.5] and costs.loc["gp"][["parameters", "hidden_layers"]].isna().all()


def test_a_dataset_setting_of_the_blocks_is_a_dataset_not_a_method_setting() -> None:
    """spirals at two omegas are two datasets to rank over, not two settings of a method to choose between; a method
    with one setting per block needs no validation metric (repulsive_2d has no validation split)."""
    rows = [(f"udn/{omega}/{seed}", "udn", "spirals", f"omega={omega}", seed, "test_accuracy", acc)
            for omega, acc in ((4, 0.99), (20, 0.9)) for seed in (0, 1)]  # fmt: skip
    selected, choices = validation_choice(tidy(rows), "val_nll", {"omega"})
    assert sorted(set(selected["dataset"])) == ["spirals [omega=20]", "spirals [omega=4]"]
    assert len(selected) == 4 and set(selected["hparams"]) == {"default"}
    assert choices.empty  # nothing was chosen


def _published(value: float, error: float) -> pd.DataFrame:
    entry = {"source": "paper", "spread": {"kind": "standard_deviation", "runs": 20}, "metric": "rmse_original",
             "dataset_prefix": "uci_", "rows": {"DE": "deep_ensemble", "PBP": None},
             "values": [{"row": "DE", "column": "boston", "value": value, "error": error},
                        {"row": "PBP", "column": "boston", "value": 3.0, "error": 0.2}]}  # fmt: skip
    return published_values([entry])


def _our_runs(values: np.ndarray, standin: bool = False) -> pd.DataFrame:
    rows = [(f"de/{k}", "deep_ensemble", "uci_boston", f"split={k}", k, "test_rmse_original", float(v))
            for k, v in enumerate(values)]  # fmt: skip
    frame = tidy(rows)
    frame["standin"] = standin
    return frame


def test_published_numbers_are_judged_by_the_fidelity_rule_with_a_constant_predictor_as_control() -> None:
    rng = np.random.default_rng(0)
    published = _published(3.28, 0.30)  # a standard deviation over 20 splits: s.e. 0.067; the margin is 0.328
    reproduction = published_comparison(_our_runs(rng.normal(3.28, 0.3, 20)), published).set_index("row")
    assert reproduction.loc["deep_ensemble (paper)", "verdict"] == AGREES
    assert reproduction.loc["PBP (paper)", "verdict"] == NOT_JUDGED  # shown for reference: we do not run PBP
    assert math.isnan(reproduction.loc["PBP (paper)", "ours"])
    constant = published_comparison(_our_runs(rng.normal(9.2, 0.8, 20)), published).set_index("row")
    assert constant.loc["deep_ensemble (paper)", "verdict"] == DIFFERS  # the mean predictor's RMSE on boston
    standin = published_comparison(_our_runs(rng.normal(3.28, 0.3, 20), standin=True), published).set_index("row")
    assert standin.loc["deep_ensemble (paper)", "verdict"] == NOT_COMPARABLE


def test_a_catalog_table_s_log_likelihoods_become_nlls() -> None:
    values = published_values(UCI.benchmark["published"])
    thesis = values[values["source"] == "thesis Table 3.1"].set_index(["method", "dataset"])
    assert thesis.loc[("vbp", "uci_yacht"), "value"] == 1.54  # the thesis' test log-likelihood -1.54
    assert thesis.loc[("vbp", "uci_yacht"), "kind"] == "standard_error"
    de = values[(values["method"] == "deep_ensemble") & (values["dataset"] == "uci_naval")].set_index("metric")
    assert de.loc["nll_original", "value"] == -5.63 and de.loc["rmse_original", "value"] == 0.0


def test_a_published_error_is_read_by_the_work_that_made_the_number() -> None:
    """Lakshminarayanan et al.'s Table 1 cites three works: PBP's ± is a standard error, MC dropout's first version a
    standard deviation, the deep ensembles' never stated; an entry that leaves a row's kind out is refused."""
    values = published_values(UCI.benchmark["published"])
    table = values[values["source"] == "Lakshminarayanan et al. 2017, Table 1"].drop_duplicates("row")
    assert dict(zip(table["row"], table["kind"], strict=True)) == {
        "PBP": "standard_error", "MC-dropout": "standard_deviation", "Deep Ensembles": "unstated"}  # fmt: skip
    entry = {"source": "paper", "spread": {"DE": {"kind": "standard_error", "runs": 20}}, "metric": "rmse_original",
             "rows": {"DE": "deep_ensemble", "PBP": None},
             "values": [{"row": "PBP", "column": "boston", "value": 3.0, "error": 0.2}]}  # fmt: skip
    with pytest.raises(ValueError, match="states no spread for its row 'PBP'"):
        published_values([entry])


def test_a_source_s_runs_per_split_are_judged_paired_by_split() -> None:
    """Gal & Ghahramani's rerun gives a number per split of our splits: a result 12% above theirs on every split
    differs (the splits' spread would hide it unpaired), ours equal to theirs within noise agrees, and each row's
    per-split means are the repository's logs' (boston: MC RMSE 3.020698, LL -2.554742)."""
    values = published_values(UCI.benchmark["published"])
    rerun = values[values["source"] == "Gal & Ghahramani rerun, 100x epochs"].set_index(["dataset", "metric"])
    assert rerun.loc[("uci_boston", "rmse_original"), "value"] == pytest.approx(3.020698, abs=1e-5)
    assert rerun.loc[("uci_boston", "nll_original"), "value"] == pytest.approx(2.554742, abs=1e-5)
    theirs = np.array(rerun.loc[("uci_boston", "rmse_original"), "splits"])
    rng = np.random.default_rng(0)
    boston = values[(values["dataset"] == "uci_boston") & (values["metric"] == "rmse_original")]
    rerun_only = boston[boston["source"] == "Gal & Ghahramani rerun, 100x epochs"].replace("MC-dropout", "DE")
    rerun_only = rerun_only.assign(method="deep_ensemble")
    shifted = published_comparison(_our_runs(theirs * 1.12 + rng.normal(0, 0.05, 20)), rerun_only)
    assert shifted["verdict"].tolist() == [DIFFERS] and shifted["published_kind"].tolist() == ["per split"]
    same = published_comparison(_our_runs(theirs + rng.normal(0, 0.05, 20)), rerun_only)
    assert same["verdict"].tolist() == [AGREES] and "paired over 20 splits" in same["reason"].iloc[0]


@pytest.mark.slow
def test_the_2d_classification_benchmark_reaches_the_report(tmp_path: Path) -> None:
    """`snakemake --config studies=[toy2d_benchmark]` at smoke: every listed classifier on the spirals and the
    clusters, ranked on accuracy, NLL and ECE (the Friedman test over the blocks), into the report."""
    project = copy_project(tmp_path / "project")
    run_command(["git", "init", "-q"], project)
    run_command(["dvc", "init", "-q"], project)
    config = ["scale=smoke", "studies=[toy2d_benchmark]"]
    run_command(["snakemake", "--cores", "2", "--config", *config], project)
    ranking = pd.read_csv(project / "reports/tables/study_toy2d_benchmark_classification_ranking.csv")
    costs = {"hidden layers", "trained parameters", "settings tried per seed", "training s per run"}  # no splits
    assert set(ranking["column"]) == {"accuracy rank", "nll rank", "ece rank", *costs}
    assert set(ranking["row"]) == set(load_study("toy2d_benchmark").benchmark["scales"]["smoke"]["methods"])
    ranks = ranking[~ranking["column"].isin(costs)]
    assert (ranks["n_runs"] == 2).all()  # spirals at omega 4 and the clusters: the dataset is the block
    assert (ranking[ranking["column"].isin(["training s per run", "trained parameters"])]["ours"] > 0).all()
    table = pd.read_csv(project / "reports/tables/study_toy2d_benchmark_classification.csv")
    assert {"spirals [omega=4] accuracy", "repulsive_2d ece"} <= set(table["column"])
    assert (project / "reports/report.pdf").is_file()
    # kept and written up as docs/benchmark.md writes a benchmark: the classifier's metrics, its seeds' wording
    from bnnrepro.report.benchmark_document import benchmark_document

    kept = tmp_path / "kept"
    run_command(["python", "-m", "bnnrepro.fidelity", "collect", ".", "--studies", "toy2d_benchmark", "--scale",
                 "smoke", "--out", str(kept)], project)  # fmt: skip
    document = benchmark_document(kept, sample=True)
    for metric in ("accuracy", "nll", "ece"):
        assert f"### test {metric} per dataset (mean ± s.e. over seeds)" in document
    assert "### test RMSE" not in document and "corrected resampled" not in document  # the regression benchmark's
    assert "the paired t-test (each seed draws its data afresh" in document
    assert "the Bayesian paired t-test (Corani & Benavoli 2015's correlated test at correlation 0)" in document
    assert "| settings tried per seed |" in document and "settings tried per split" not in document
    assert "the seeds' correlation 0" in document and "(2 seeds): best" in document
    assert "None: the study file names no published numbers" in document
    assert "None: every method ran at its configured settings" in document


@pytest.mark.slow  # the whole document, baycomp's Monte Carlo tests included: about a minute
def test_the_committed_benchmark_document_is_the_one_the_committed_results_make(tmp_path: Path) -> None:
    """docs/benchmark.md is regenerated from docs/benchmark/; a method of the benchmark that the kept runs lack must
    have its reason in not_run.yaml (the negative control: without the file the document refuses)."""
    import shutil

    from bnnrepro.report.benchmark_document import NOT_RUN_FILE, benchmark_document

    root = Path(__file__).resolve().parents[1]
    document = benchmark_document(root / "docs" / "benchmark")
    assert document == (root / "docs" / "benchmark.md").read_text()
    assert "mc_dropout (Lakshminarayanan et al. 2017, Table 1)" in document
    assert "deep_ensemble (Lakshminarayanan et al. 2017, Table 1)" in document
    copy = tmp_path / "docs" / "benchmark"
    shutil.copytree(root / "docs" / "benchmark", copy)
    (copy / "paper" / NOT_RUN_FILE).unlink()
    with pytest.raises(ValueError, match="say under toy2d_benchmark why repulsive_ensemble, sdebnn did not run"):
        benchmark_document(copy)


def test_an_unranked_method_is_tabled_with_its_cost_but_neither_ranked_nor_tested() -> None:
    """`benchmark.unranked`: the method keeps its runs and cost row, the rankings and the leaderboard's ranks leave
    it out with its reason; the control: without the entry it is ranked (here, first on RMSE)."""
    from bnnrepro.report.benchmark import method_costs, ranked
    from bnnrepro.report.benchmark_document import leaderboard
    from bnnrepro.report.ranking import study_rankings

    rows = [(f"{method}/{dataset}/{split}", method, dataset, f"split={split}", split, metric, value)
            for dataset, shift in (("uci_yacht", 0.0), ("uci_boston", 1.0), ("uci_wine", 2.0))
            for split in range(3)
            for method, rmse in (("sdebnn", 0.5), ("mfvi", 1.0), ("udn", 1.5))
            for metric, value in (("test_rmse_original", rmse + shift), ("test_nll_original", rmse + shift),
                                  ("train_seconds", 1.0))]  # fmt: skip
    selected, costs = tidy(rows), method_costs(tidy(rows))
    benchmark = {"unranked": {"sdebnn": "its toy settings, not tuned here"}}
    assert study_rankings(selected, "regression")[0].average_ranks.index[0] == "sdebnn"  # the control
    rankings = study_rankings(ranked(selected, benchmark), "regression")
    assert all("sdebnn" not in ranking.average_ranks.index for ranking in rankings)
    lines = leaderboard(rankings, costs, "split", benchmark["unranked"])
    assert any(line.startswith("| sdebnn | – | – |") for line in lines)
    assert "- sdebnn, not ranked: its toy settings, not tuned here" in lines
    assert (
        "- test RMSE, the pool's effect: not measured: 2 ranked method(s), and leaving one out leaves no order to "
        "compare." in lines
    )  # two ranked: no Kendall's tau of one method left
    with pytest.raises(StudyError, match=r"benchmark.unranked names \['odenet'\], not among its methods"):
        benchmark_grids({"task": "regression", "methods": ["mfvi"], "grids": {"uci": {"dataset": ["uci_yacht"]}},
                         "unranked": {"odenet": "x"}}, "mine")  # fmt: skip


def test_a_method_too_costly_for_one_dataset_gets_a_leaderboard_over_every_dataset_without_it() -> None:
    """The GP has no run on kin8nm: the leaderboard ranks all three over the two sets it ran on, and a second one
    ranks the other two over all three sets; the control: with the GP on every set there is no second one."""
    from bnnrepro.report.benchmark import method_costs
    from bnnrepro.report.benchmark_document import every_dataset_leaderboard
    from bnnrepro.report.ranking import study_rankings

    def rows(methods: tuple[str, ...]) -> list[tuple]:
        return [(f"{method}/{dataset}/{split}", method, dataset, f"split={split}", split, metric, value)
                for dataset in ("uci_yacht", "uci_boston", "uci_kin8nm")
                for split in range(3)
                for method, rmse in (("gp", 0.5), ("mfvi", 1.0), ("udn", 1.5))
                if method in methods or dataset != "uci_kin8nm"
                for metric, value in (("test_rmse_original", rmse), ("test_nll_original", rmse),
                                      ("train_seconds", 1.0))]  # fmt: skip

    selected = tidy(rows(("mfvi", "udn")))
    rankings = study_rankings(selected, "regression")
    assert all(set(ranking.blocks.index) == {"uci_yacht", "uci_boston"} for ranking in rankings)
    lines = every_dataset_leaderboard(selected, method_costs(selected), "regression", "split")
    assert lines[0] == "#### Over all 3 datasets, without gp"
    assert "- test RMSE: 3 blocks, too few methods or blocks for the Friedman test." in lines
    assert not any(line.startswith("| gp |") for line in lines)
    complete = tidy(rows(("gp", "mfvi", "udn")))
    assert every_dataset_leaderboard(complete, method_costs(complete), "regression", "split") == []


@pytest.mark.parametrize("name", ["uci_benchmark", "toy2d_benchmark"])
def test_a_benchmark_s_repulsive_ensemble_runs_a_repulsive_rule(name: str) -> None:
    """The variant the documents call the repulsive ensemble composes one of D'Angelo & Fortuin's repulsive rules,
    not eq. (2)'s independent MAP ascent (rule `de`, the config's default: the benchmark ran that under this name
    until commit 5539970). The control: the variant's method config without the study's choice composes `de`."""
    from bnnrepro.methods.repulsive_ensembles import FUNCTION_SPACE_RULES, WEIGHT_SPACE_RULES
    from bnnrepro.train_configs import compose_config

    study = load_study(name)
    run = next(run for run in study.runs("paper") if run.method == "repulsive_ensemble")
    overrides = study.overrides(run)
    assert compose_config(overrides).method.rule in {*WEIGHT_SPACE_RULES, *FUNCTION_SPACE_RULES} - {"de"}
    plain = [override if not override.startswith("method=") else "method=repulsive_ensemble" for override in overrides]
    assert compose_config(plain).method.rule == "de"

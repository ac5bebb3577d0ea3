"""A benchmark's published entry that takes another study's numbers (`{study, source, rows}`,
bnnrepro.pipeline.published_references): the heteroscedastic track judges Lakshminarayanan et al.'s deep-ensemble rows
(made with variance heads) against its own deep ensemble, with the numbers kept once, in uci_benchmark.yaml; an edit
of a number there reaches the track's comparison and its report job's inputs; a study or source that is not there is
an error that names the fix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from bnnrepro.artifacts.verdict_rules import NOT_JUDGED
from bnnrepro.pipeline.plan import Plan
from bnnrepro.pipeline.studies import StudyError, load_study
from bnnrepro.report.benchmark import block_keys, published_comparison, published_values, validation_choice
from tests.test_study_variants_from import edit, workflow_config
from tests.test_study_variants_from import project as project  # noqa: F401 (the fixture)

TRACK = "uci_benchmark_heteroscedastic"
KEPT = Path("docs/benchmark/paper") / TRACK / "metrics.csv"


def comparison() -> pd.DataFrame:
    """The track's published comparison on its kept runs."""
    study = load_study(TRACK)
    selected, _ = validation_choice(pd.read_csv(KEPT), study.benchmark["select_by"], block_keys(study.benchmark))
    return published_comparison(selected, published_values(study.benchmark["published"]))


def test_the_track_judges_the_published_ensemble_with_heads_against_its_own() -> None:
    track, shared = (load_study(name).benchmark["published"] for name in (TRACK, "uci_benchmark"))
    assert [entry["values"] for entry in track] == [shared[0]["values"]]  # the numbers of one place
    assert track[0]["rows"] == {"Deep Ensembles": "deep_ensemble"}  # PBP's and MC dropout's rows are homoscedastic
    judged = comparison()
    assert (judged["row"] == "deep_ensemble (Lakshminarayanan et al. 2017, Table 1)").all()
    assert len(judged) == 16 and (judged["verdict"] != NOT_JUDGED).all()  # 8 sets, RMSE and NLL
    yacht = judged[judged["column"] == "uci_yacht nll_original"].iloc[0]
    assert yacht["published"] == 1.18 and abs(yacht["ours"] - 1.19) < 0.01  # ours with heads, 20 splits


def test_an_edit_of_a_number_in_the_other_study_reaches_the_track(project: Path) -> None:  # noqa: F811
    edit(project / "config/studies/uci_benchmark.yaml", "column: yacht, value: 1.18,", "column: yacht, value: 2.18,")
    values = published_values(load_study(TRACK).benchmark["published"])
    assert (
        values[(values["row"] == "Deep Ensembles") & (values["dataset"] == "uci_yacht")]["value"].tolist()[-1] == 2.18
    )
    plan = Plan.build(workflow_config(project, scale="smoke", studies=[TRACK]))
    assert plan.study_bases(SimpleNamespace(study=TRACK)) == ["config/studies/uci_benchmark.yaml"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("- study: uci_benchmark\n", "- study: uci_benchmrk\n", r"names study 'uci_benchmrk', which is not a study"),
        ("source: Lakshminarayanan et al. 2017, Table 1\n      rows", "source: Lakshminarayanan 2017\n      rows",
         r"takes source 'Lakshminarayanan 2017' from study 'uci_benchmark', whose published entries of their own are "
         r"\['Lakshminarayanan et al. 2017, Table 1'"),
    ],
)  # fmt: skip
def test_a_study_or_source_that_is_not_there_is_named(project: Path, old: str, new: str, message: str) -> None:  # noqa: F811
    edit(project / f"config/studies/{TRACK}.yaml", old, new)
    with pytest.raises(StudyError, match=message):
        load_study(TRACK)

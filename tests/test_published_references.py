"""A benchmark's published entry that takes another study's numbers (`{study, source, rows}`,
bnnrepro.pipeline.published_references): the heteroscedastic track judges Lakshminarayanan et al.'s deep-ensemble rows
(made with variance heads) against its own deep ensemble, with the numbers kept once, in uci_benchmark.yaml, and its
finding on them says what the kept runs make (the control: heads with other values fail it); an edit of a number
there reaches the track's comparison and its report job's inputs; a study or source that is not there is an error that
names the fix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from bnnrepro.artifacts.verdict_rules import NOT_JUDGED
from bnnrepro.pipeline.plan import Plan
from bnnrepro.pipeline.studies import StudyError, load_study
from bnnrepro.report.benchmark import block_keys, published_comparison, published_values, validation_choice
from tests.findings_helpers import scaled
from tests.test_benchmark_findings import HETEROSCEDASTIC, KEPT, WORDS, selected_means
from tests.test_study_variants_from import edit, workflow_config
from tests.test_study_variants_from import project as project  # noqa: F401 (the fixture)

TRACK = "uci_benchmark_heteroscedastic"


def comparison(heads: pd.DataFrame) -> pd.DataFrame:
    """The track's published comparison on its kept runs `heads`, a row per cell with its dataset and metric."""
    study = load_study(TRACK)
    selected, _ = validation_choice(heads, study.benchmark["select_by"], block_keys(study.benchmark))
    table = published_comparison(selected, published_values(study.benchmark["published"]))
    return table.join(table["column"].str.extract(r"uci_(?P<dataset>\w+) (?P<metric>\w+)_original"))


def published_fragments(heads: pd.DataFrame, shared: pd.DataFrame) -> list[str]:
    """The phrases of the finding on Lakshminarayanan et al.'s rows: the counts, where the heads' NLL is closer to
    theirs than the homoscedastic track's shared noise, and the cells that differ."""
    table = comparison(heads)
    counts = table["verdict"].value_counts()
    unstated = int(table["reason"].str.startswith("the paper does not say").sum())
    nll = table[table["metric"] == "nll"].set_index("dataset")
    one = selected_means(shared, "uci_benchmark").xs(("deep_ensemble", "test_nll_original"), level=("method", "metric"))
    one.index = one.index.str.removeprefix("uci_")
    closer = (nll["ours"] - nll["published"]).abs() < (one[nll.index] - nll["published"]).abs()
    differs = table[table["verdict"] == "differs"]
    yacht = nll.loc["yacht"]
    return [
        f"Of the {len(table)} cells {counts['agrees']} agree, {counts['differs']} differ and "
        f"{counts['undetermined']} are undetermined, {unstated} of them because the paper does not say what its ± is",
        f"closer to theirs than the shared noise's on {int(closer.sum())} of {len(closer)} sets (yacht "
        f"{yacht['ours']:.2f} +- {yacht['ours_error']:.2f} against their {yacht['published']:.2f}, where the shared "
        f"noise gives {one['yacht']:.2f})",
        f"the {WORDS[int((~closer).sum())]} exceptions are "
        + " and ".join(
            f"{d} ({nll.loc[d, 'ours']:.2f} against {nll.loc[d, 'published']:.2f})" for d in nll.index[~closer]
        ),
        f"whose {WORDS[len(differs)]} cells differ" if set(differs["dataset"]) == {"naval"} else "other cells differ",
        f"our NLL {nll.loc['naval', 'ours']:.2f} against their {nll.loc['naval', 'published']:.2f}",
    ]


def test_the_finding_on_the_published_rows_says_what_the_kept_runs_make() -> None:
    missing = HETEROSCEDASTIC.missing_fragments(published_fragments(HETEROSCEDASTIC.metrics(), KEPT.metrics()))
    assert not missing, f"the heteroscedastic findings no longer say what the kept runs make: {missing}"


def test_control_heads_with_other_values_fail_the_published_rows_check() -> None:
    heads = scaled(HETEROSCEDASTIC.metrics(), 1.2, method="deep_ensemble", dataset="uci_yacht", metric="test_.*")
    assert HETEROSCEDASTIC.missing_fragments(published_fragments(heads, KEPT.metrics()))


def test_the_track_judges_the_published_ensemble_with_heads_against_its_own() -> None:
    track, shared = (load_study(name).benchmark["published"] for name in (TRACK, "uci_benchmark"))
    assert [entry["values"] for entry in track] == [shared[0]["values"]]  # the numbers of one place
    assert track[0]["rows"] == {"Deep Ensembles": "deep_ensemble"}  # PBP's and MC dropout's rows are homoscedastic
    judged = comparison(HETEROSCEDASTIC.metrics())
    assert (judged["row"] == "deep_ensemble (Lakshminarayanan et al. 2017, Table 1)").all()
    assert len(judged) == 16 and (judged["verdict"] != NOT_JUDGED).all()  # 8 sets, RMSE and NLL


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
        ("source: Lakshminarayanan et al. 2017, Table 1\n      rows",
         "source: Gal & Ghahramani rerun, 100x epochs\n      rows",
         r"takes source 'Gal & Ghahramani rerun, 100x epochs' from study 'uci_benchmark', which has 2 entries of that "
         r"source; give the one to take a source of its own there"),
    ],
)  # fmt: skip
def test_a_study_or_source_that_cannot_be_taken_is_named(project: Path, old: str, new: str, message: str) -> None:  # noqa: F811
    edit(project / f"config/studies/{TRACK}.yaml", old, new)
    with pytest.raises(StudyError, match=message):
        load_study(TRACK)

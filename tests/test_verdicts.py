"""Each artifact's verdict against its paper, on constructed cases, and the report's summary counts."""

from __future__ import annotations

import pandas as pd
import pytest

from bnnrepro.artifacts.render import compare_with_published, verdict_counts
from bnnrepro.report.summary import NOT_DRAWN, summary_rows
from bnnrepro.report.verdicts import DIFFERS, MATCHES, NOT_COMPARABLE, UNDETERMINED, VERDICTS, artifact_verdict

HOLDS = {"claim": "The UDN is best.", "holds": True, "evidence": "92 vs 90"}
FAILS = {"claim": "DUN-10 beats each Omega_L.", "holds": False, "evidence": "Omega_4 ahead"}
OPEN = {"claim": "DUN-10 beats Omega_3.", "holds": None, "status": "not resolved", "evidence": "p = 0.3"}
UNCHECKED = {"claim": "Deeper at omega 30.", "holds": None, "evidence": "not checked: these runs have no omega=30"}


def cells(within: int, outside: int, no_error: int = 0, undetermined: int = 0) -> dict:
    return {"agrees": within, "differs": outside, "undetermined": undetermined, "not judged": no_error}


def test_every_cell_within_its_error_and_every_claim_holding_matches() -> None:
    verdict = artifact_verdict("paper", "metrics", False, {"cells": cells(5, 0), "claims": [HOLDS, UNCHECKED]})
    assert verdict.label == MATCHES
    assert (
        verdict.reason
        == "cells: 5 agree, 0 differ, 0 undetermined of 5; claims: 1 hold, 0 contradicted, 0 not resolved of 1"
    )


def test_an_undetermined_cell_or_unresolved_claim_leaves_the_artifact_undetermined() -> None:
    assert (
        artifact_verdict("paper", "metrics", False, {"cells": cells(4, 0, 0, 1), "claims": [HOLDS]}).label
        == UNDETERMINED
    )
    assert artifact_verdict("paper", "metrics", False, {"cells": cells(4, 0), "claims": [OPEN]}).label == UNDETERMINED
    assert artifact_verdict("paper", "metrics", False, {"cells": cells(4, 1, 0, 1), "claims": [OPEN]}).label == DIFFERS


@pytest.mark.parametrize(
    ("checks", "reason"),
    [
        ({"cells": cells(4, 1), "claims": [HOLDS]}, "cells: 4 agree, 1 differ, 0 undetermined of 5; claims: 1 hold"),
        ({"cells": cells(5, 0), "claims": [HOLDS, FAILS]}, "cells: 5 agree, 0 differ, 0 undetermined of 5; claims: 1"),
        ({"cells": None, "claims": [FAILS]}, "claims: 0 hold, 1 contradicted"),
    ],
)
def test_one_cell_outside_its_error_or_one_failed_claim_differs(checks: dict, reason: str) -> None:
    verdict = artifact_verdict("paper", "runs", False, checks)
    assert verdict.label == DIFFERS and verdict.reason.startswith(reason)


@pytest.mark.parametrize(
    ("scale", "uses", "standin", "checks", "reason"),
    [
        ("paper", "metrics", True, {"cells": cells(5, 0), "claims": []}, "stand-in dataset"),
        ("default", "metrics", False, {"cells": cells(0, 5), "claims": [FAILS]}, "default scale: smaller runs"),
        ("smoke", "data", False, {"cells": cells(5, 0), "claims": []}, "smoke scale"),
        ("paper", "metrics", False, {"cells": cells(0, 0, 3), "claims": [UNCHECKED]}, "nothing to judge by"),
        ("paper", "runs", False, {"cells": None, "claims": []}, "nothing to judge by"),
    ],
)
def test_stand_in_data_a_smaller_scale_or_nothing_to_judge_is_not_comparable(
    scale: str, uses: str, standin: bool, checks: dict, reason: str
) -> None:
    verdict = artifact_verdict(scale, uses, standin, checks)
    assert verdict.label == NOT_COMPARABLE and reason in verdict.reason


def test_an_artifact_computed_from_formulas_alone_is_judged_at_every_scale() -> None:
    assert artifact_verdict("smoke", "nothing", False, {"cells": None, "claims": [HOLDS]}).label == MATCHES
    assert artifact_verdict("default", "nothing", False, {"cells": cells(1, 1), "claims": []}).label == DIFFERS


def test_cell_counts_follow_the_rule_on_a_real_catalog_table() -> None:
    """udn/table1's published cells: UDN 91.7 +- 1.1, DUN-10 90.5 +- 0.7, Omega_3 87.4 +- 0.6 (std over 5 runs):
    Omega_3 agrees (within a tenth of its error rate), UDN is undetermined (the paper's own s.e. of 0.49 leaves its
    margin of 0.83 out of reach), DUN-10 differs, one of our rows has no published value, and Omega_4's numbers
    coincide with Omega_3's, which comes first in the paper's order (counted once)."""
    ours = pd.DataFrame({
        "row": ["UDN", "DUN-10", "ResNet", "Standard network Ω_4", "Standard network Ω_3"],
        "column": "average accuracy",
        "ours": [92.0, 86.0, 80.0, 87.5, 87.5], "ours_error": [1.0, 0.5, 0.1, 0.1, 0.1], "n_runs": [5, 5, 5, 20, 20],
    })  # fmt: skip
    table = compare_with_published("udn/table1", ours, False)
    assert verdict_counts(table) == {"agrees": 1, "differs": 1, "undetermined": 1, "not judged": 0,
                                     "not comparable": 0}  # fmt: skip
    assert table.set_index("row").loc["Standard network Ω_4", "coincides_with"] == "Standard network Ω_3"


def manifest_of(artifacts: list[dict]) -> dict:
    return {"papers": {"udn": {"title": "UDN"}, "sdebnn": {"title": "SDE-BNN"}}, "artifacts": artifacts}


def drawn(artifact_id: str, scale: str, verdict: str, claims: list[dict]) -> dict:
    paper = artifact_id.split("/")[0]
    return {"id": artifact_id, "paper": paper, "status": "reproduced", "scale": scale, "verdict": verdict,
            "claims": claims}  # fmt: skip


def test_the_summary_counts_equal_the_manifests() -> None:
    artifacts = [
        drawn("udn/fig3a", "paper", MATCHES, [HOLDS, UNCHECKED]),
        drawn("udn/table1", "paper", DIFFERS, [HOLDS, FAILS]),
        drawn("udn/fig2", "default", NOT_COMPARABLE, []),
        {"id": "udn/fig1", "paper": "udn", "status": "diagram"},
        {"id": "udn/fig4", "paper": "udn", "status": "not yet reproduced"},
        drawn("sdebnn/fig2", "smoke", NOT_COMPARABLE, [FAILS]),
    ]
    manifest = manifest_of(artifacts)
    rows = summary_rows(manifest)
    assert [(r.paper, r.scale) for r in rows] == [
        ("udn", "paper"), ("udn", "default"), ("udn", NOT_DRAWN), ("sdebnn", "smoke"),
    ]  # fmt: skip
    with_data = [a for a in artifacts if a["status"] != "diagram"]
    assert sum(len(r.artifacts) for r in rows) == len(with_data)
    assert sum(r.drawn for r in rows) == sum(a["status"] == "reproduced" for a in artifacts)
    for verdict in VERDICTS:
        assert sum(len(r.verdicts[verdict]) for r in rows) == sum(a.get("verdict") == verdict for a in artifacts)
    claims = [c for a in artifacts for c in a.get("claims", []) if c["holds"] is not None]
    assert sum(r.claims_checked for r in rows) == len(claims) == 4
    assert sum(r.claims_holding for r in rows) == sum(c["holds"] for c in claims) == 2
    assert rows[0].verdicts[MATCHES] == ["udn/fig3a"] and rows[2].artifacts == ["udn/fig4"]


def test_a_generated_tables_text_cells_stay_text() -> None:
    """Table 5 of the SDE-BNN paper is generated (✓/✗): its cells keep their text and are not judged."""
    ours = pd.DataFrame({"row": ["SDE-BNN"], "column": ["Flexible Approximate Posterior"], "ours": ["✓"],
                         "ours_error": [None], "n_runs": [None]})  # fmt: skip
    table = compare_with_published("sdebnn/table5", ours, False)
    assert list(table["ours"]) == ["✓"] and list(table["verdict"]) == ["not judged"]

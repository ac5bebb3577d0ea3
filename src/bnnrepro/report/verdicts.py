"""Each drawn artifact's verdict against its paper: it matches, it differs, it is undetermined, or it cannot be
compared at this scale, with the reason.

"Drawn" says only that the pipeline made the figure or table; the verdict says whether it agrees with the paper.
Its evidence is what the job that drew the artifact checked (`bnnrepro.artifacts.render.save_checks`): the caption
claims on our results and, for a table, its cells under the rule of `bnnrepro.artifacts.verdict_rules`. The rules:

- not comparable: the runs used a stand-in dataset; or the scale is not `paper` (the runs are smaller than the
  paper's: fewer epochs, seeds, settings; the artifact's note says which), unless the artifact is computed from
  formulas alone (then it is the same at every scale); or nothing could be judged (no published number with an
  error, no claim the runs could check);
- differs: a cell differs from its published value, or a claim is contradicted;
- matches: every judged cell agrees and every checked claim holds;
- undetermined: nothing differs, but a cell is undetermined or a claim not resolved.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnnrepro.artifacts.verdict_rules import AGREES
from bnnrepro.artifacts.verdict_rules import DIFFERS as CELL_DIFFERS
from bnnrepro.artifacts.verdict_rules import UNDETERMINED as CELL_UNDETERMINED

MATCHES, DIFFERS, UNDETERMINED, NOT_COMPARABLE = "matches", "differs", "undetermined", "not comparable"
VERDICTS = (MATCHES, DIFFERS, UNDETERMINED, NOT_COMPARABLE)


@dataclass(frozen=True)
class Verdict:
    label: str  # one of VERDICTS
    reason: str


def claim_status(claim: dict) -> str:
    """A checked claim's status as saved ({claim, holds, status, evidence}): holds, contradicted, not resolved or
    not checked."""
    if "status" in claim:
        return claim["status"]
    return {True: "holds", False: "contradicted", None: "not checked"}[claim["holds"]]


def _evidence(cells: dict | None, claims: list[dict]) -> tuple[list[str], int, int, int]:
    """Sentences on the judged cells and claims; how many differ or are contradicted, are undetermined or not
    resolved, and were judged."""
    parts, failed, open_, judged = [], 0, 0, 0
    if cells:
        cell_count = cells[AGREES] + cells[CELL_DIFFERS] + cells[CELL_UNDETERMINED]
        if cell_count:
            parts.append(f"cells: {cells[AGREES]} agree, {cells[CELL_DIFFERS]} differ, {cells[CELL_UNDETERMINED]} "
                         f"undetermined of {cell_count}")  # fmt: skip
        if cells.get("not judged"):
            parts.append(f"{cells['not judged']} without a published error to judge by")
        if cells.get("not comparable"):
            parts.append(f"{cells['not comparable']} not comparable (the table's note says why)")
        failed, open_, judged = cells[CELL_DIFFERS], cells[CELL_UNDETERMINED], cell_count
    statuses = [claim_status(claim) for claim in claims if claim_status(claim) != "not checked"]
    if statuses:
        parts.append(f"claims: {statuses.count('holds')} hold, {statuses.count('contradicted')} contradicted, "
                     f"{statuses.count('not resolved')} not resolved of {len(statuses)}")  # fmt: skip
        failed += statuses.count("contradicted")
        open_ += statuses.count("not resolved")
        judged += len(statuses)
    return parts, failed, open_, judged


def artifact_verdict(scale: str, uses: str, standin: bool, checks: dict) -> Verdict:
    """The verdict of an artifact drawn at `scale` from what it `uses` (see `Implementation`), on stand-in data or
    not, from its `checks` ({"claims": [...], "cells": {...} or None})."""
    parts, failed, open_, judged = _evidence(checks.get("cells"), checks.get("claims", []))
    evidence = "; ".join(parts)
    if standin:
        return Verdict(NOT_COMPARABLE, "computed on a stand-in dataset, not the paper's data")
    if scale != "paper" and uses != "nothing":
        return Verdict(NOT_COMPARABLE, f"{scale} scale: smaller runs than the paper's (the note says how)")
    if not judged:
        unjudged = f" ({evidence})" if evidence else ""
        return Verdict(NOT_COMPARABLE, f"nothing to judge by: no published number with an error{unjudged} and no "
                       "caption claim these runs can check")  # fmt: skip
    return Verdict(DIFFERS if failed else UNDETERMINED if open_ else MATCHES, evidence)

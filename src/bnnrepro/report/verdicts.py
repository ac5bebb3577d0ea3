"""Each drawn artifact's verdict against its paper: it matches within error, it differs, or it cannot be compared
at this scale, with the reason.

"Drawn" says only that the pipeline made the figure or table; the verdict says whether it agrees with the paper.
Its evidence is what the job that drew the artifact checked (`bnnrepro.artifacts.render.save_checks`): the caption
claims on our results and, for a table, how many cells lie within the published error. The rules:

- not comparable: the runs used a stand-in dataset; or the scale is not `paper` (the runs are smaller than the
  paper's: fewer epochs, seeds, settings; the artifact's note says which), unless the artifact is computed from
  formulas alone (then it is the same at every scale); or nothing could be judged (no published number with an
  error, no claim the runs could check);
- differs: a cell lies outside its published error, or a checked claim does not hold;
- matches: every judged cell lies within its published error and every checked claim holds.
"""

from __future__ import annotations

from dataclasses import dataclass

MATCHES, DIFFERS, NOT_COMPARABLE = "matches", "differs", "not comparable"
VERDICTS = (MATCHES, DIFFERS, NOT_COMPARABLE)


@dataclass(frozen=True)
class Verdict:
    label: str  # one of VERDICTS
    reason: str


def _evidence(cells: dict | None, claims: list[dict]) -> tuple[list[str], int, int]:
    """Sentences on the judged cells and claims, and how many of each kind failed and were judged."""
    parts, failed, judged = [], 0, 0
    if cells and cells["within"] + cells["outside"]:
        cell_count = cells["within"] + cells["outside"]
        parts.append(f"{cells['within']} of {cell_count} cells within the published error")
        failed, judged = failed + cells["outside"], judged + cell_count
    if cells and cells["no_error"]:
        parts.append(f"{cells['no_error']} without a published error")
    checked = [claim for claim in claims if claim["holds"] is not None]
    if checked:
        holding = sum(bool(claim["holds"]) for claim in checked)
        parts.append(f"{holding} of {len(checked)} caption claims hold")
        failed, judged = failed + len(checked) - holding, judged + len(checked)
    return parts, failed, judged


def artifact_verdict(scale: str, uses: str, standin: bool, checks: dict) -> Verdict:
    """The verdict of an artifact drawn at `scale` from what it `uses` (see `Implementation`), on stand-in data or
    not, from its `checks` ({"claims": [...], "cells": {...} or None})."""
    parts, failed, judged = _evidence(checks.get("cells"), checks.get("claims", []))
    evidence = "; ".join(parts)
    if standin:
        return Verdict(NOT_COMPARABLE, "computed on a stand-in dataset, not the paper's data")
    if scale != "paper" and uses != "nothing":
        return Verdict(NOT_COMPARABLE, f"{scale} scale: smaller runs than the paper's (the note says how)")
    if not judged:
        unjudged = f" ({evidence})" if evidence else ""
        return Verdict(NOT_COMPARABLE, f"nothing to judge by: no published number with an error{unjudged} and no "
                       "caption claim these runs can check")  # fmt: skip
    return Verdict(DIFFERS if failed else MATCHES, evidence)

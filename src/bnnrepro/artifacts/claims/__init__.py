"""The qualitative claims of the papers' captions, each checked on our results.

A claim is registered against an artifact id with the caption's words and a check: a function of the same
`ArtifactContext` the artifact's draw function reads (with the study's tidy metrics always available) that returns
whether the claim holds and the numbers it rests on. The criterion each check applies to words such as "best" or
"roughly 4" is in its docstring. A comparison is decided over all repetitions by the paired rule of
`bnnrepro.artifacts.verdict_rules`: a claim *holds* (the stated direction significant), is *contradicted* (the other
direction significant) or is *not resolved*; a factor claim states its interval.

The claims about the artifacts of `bnnrepro.artifacts.<name>` live in `bnnrepro.artifacts.claims.<name>`, so that
the job drawing an artifact checks its claims by importing its own modules only (`claims_of`), and an edit to one
paper's claims reruns the drawing jobs of that paper's studies alone.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import artifact_modules, drawing_modules
from bnnrepro.artifacts.verdict_rules import (
    CONTRADICTED,
    HOLDS,
    NOT_RESOLVED,
    Decision,
    all_of,
    paired_comparison,
)


@dataclass(frozen=True)
class Outcome:
    """holds: True (the claim holds), False (contradicted), None (not resolved, or not checked where `checked` is
    False: the runs at hand cannot show it and the evidence says what is missing)."""

    holds: bool | None
    evidence: str
    checked: bool = True

    @property
    def status(self) -> str:
        if not self.checked:
            return NOT_CHECKED
        return {True: HOLDS, False: CONTRADICTED, None: NOT_RESOLVED}[self.holds]

    def record(self) -> dict:
        """The outcome as the checks files and claims.csv keep it: holds, status and evidence."""
        return {"holds": self.holds, "status": self.status, "evidence": self.evidence}

    @classmethod
    def decided(cls, status: str, evidence: str) -> Outcome:
        """The outcome of a claim decided by the paired rule (`HOLDS`, `CONTRADICTED` or `NOT_RESOLVED`)."""
        return cls({HOLDS: True, CONTRADICTED: False, NOT_RESOLVED: None}[status], evidence)


NOT_CHECKED = "not checked"
CLAIM_STATUSES = (HOLDS, CONTRADICTED, NOT_RESOLVED, NOT_CHECKED)


class NotCheckable(ValueError):
    """The runs at hand lack what a claim compares (a method, a second omega, ...): the message says what."""


def require(condition: bool, missing: str) -> None:
    if not condition:
        raise NotCheckable(f"not checked: these runs have no {missing}")


@dataclass(frozen=True)
class Claim:
    artifact_id: str
    text: str  # the paper's words
    check: Callable[[ArtifactContext], Outcome]


CLAIMS: list[Claim] = []


def claim(artifact_id: str, text: str) -> Callable:
    """Register a check of the claim `text` of artifact `artifact_id`."""

    def register(check: Callable[[ArtifactContext], Outcome]) -> Callable[[ArtifactContext], Outcome]:
        CLAIMS.append(Claim(artifact_id, text, check))
        return check

    return register


def claims_module(drawing_module: str) -> str | None:
    """The module of the claims about the artifacts that `drawing_module` (bnnrepro.artifacts.<name>) draws:
    bnnrepro.artifacts.claims.<name>, or None where none of them has a checked claim."""
    name = f"{__name__}.{drawing_module.rsplit('.', 1)[-1]}"
    return name if importlib.util.find_spec(name) is not None else None


def claims_of(artifact_id: str) -> list[Claim]:
    """The claims of one artifact, importing only the claims module of the module that draws it."""
    module = claims_module(artifact_modules().get(artifact_id, ""))
    if module is not None:
        importlib.import_module(module)
    return [c for c in CLAIMS if c.artifact_id == artifact_id]


def all_claims() -> list[Claim]:
    """Every registered claim, in the order of the drawing modules and of their claims."""
    for module in drawing_modules():
        if (name := claims_module(module)) is not None:
            importlib.import_module(name)
    return list(CLAIMS)


def check(claim: Claim, context: ArtifactContext) -> Outcome:
    """The claim's outcome on `context`; not checked (holds None) where its runs lack what it compares."""
    try:
        return claim.check(context)
    except NotCheckable as reason:
        return Outcome(None, str(reason), checked=False)


def own_cells(table: pd.DataFrame, rows: tuple[str, ...]) -> pd.DataFrame:
    """[dataset x (mean, error) per row] of a UCI table's own cells; NotCheckable unless every row has a dataset."""
    cells = table[table["row"].isin(rows) & table["ours"].notna()]
    both = cells.groupby("column")["row"].nunique() == len(rows)
    require(bool(both.any()), f"data set with runs of all of {', '.join(rows)}")
    cells = cells[cells["column"].isin(both[both].index)]
    return cells.pivot(index="column", columns="row", values=["ours", "ours_error"])


def repetitions(rows: pd.DataFrame, by: str, within: tuple[str, ...] = ("method",)) -> pd.DataFrame:
    """A metric's values as [repetition (`by`: seed, split) x `within` (method, ...)], averaged over any other
    column, so that each column pairs with the others by repetition."""
    return rows.pivot_table(index=by, columns=list(within) if len(within) > 1 else within[0], values="value")


def compare_all(pairs: list[tuple[str, pd.Series, pd.Series]], stated: str, margin: float = 0.0) -> Outcome:
    """A claim that each (label, first, second) pair of repetition series holds in the `stated` direction (see
    `paired_comparison`), decided over all of them by `all_of` (Holm's correction for "contradicted"); the evidence
    lists each comparison's mean difference and p."""
    require(bool(pairs), "pair of results to compare")
    comparisons = [(label, paired_comparison(first, second, stated, margin)) for label, first, second in pairs]
    family = all_of([c.decision for _, c in comparisons])
    listed = "; ".join(f"{label}: {c.status} ({c.describe()})" for label, c in comparisons)
    return Outcome.decided(family.status, listed + holm_note(family, len(comparisons)))


def compare_many(pairs: list[tuple[str, pd.Series, pd.Series]], stated: str, numbers: str) -> Outcome:
    """`compare_all` for a claim over many pairs: the evidence is `numbers` and how many comparisons hold, are
    contradicted and are not resolved, not each one; then each one not resolved over two or more repetitions (what
    would decide it: `Comparison.describe`)."""
    require(bool(pairs), "pair of results to compare")
    comparisons = [(label, paired_comparison(first, second, stated)) for label, first, second in pairs]
    statuses = [c.status for _, c in comparisons]
    family = all_of([c.decision for _, c in comparisons])
    paired = max(len(first.index.intersection(second.index)) for _, first, second in pairs)
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in (HOLDS, CONTRADICTED, NOT_RESOLVED))
    open_ones = [f"{label} ({c.describe()})" for label, c in comparisons if c.status == NOT_RESOLVED and
                 c.repetitions >= 2]  # fmt: skip
    listed = f"; not resolved: {'; '.join(open_ones)}" if open_ones else ""
    return Outcome.decided(family.status, f"{numbers}; {len(pairs)} comparisons over {paired} paired "
                           f"repetition(s): {counts}" + holm_note(family, len(pairs)) + listed)  # fmt: skip


def holm_note(family: Decision, comparisons: int) -> str:
    """'; Holm over 7: 1 contradicted' where a claim rests on several comparisons (`all_of`)."""
    if comparisons < 2:
        return ""
    return f"; Holm over {comparisons}: {len(family.contradicting)} contradicted"

"""The report's first page: per work and per scale, how many artifacts are drawn, how many of them match the
paper, differ or cannot be compared (`bnnrepro.report.verdicts`), and how many caption claims hold."""

from __future__ import annotations

from dataclasses import dataclass, field

from bnnrepro.report.verdicts import VERDICTS, claim_status

NOT_DRAWN = "not drawn"


@dataclass
class SummaryRow:
    paper: str
    scale: str  # the scale its artifacts were drawn at; NOT_DRAWN for those not drawn yet
    artifacts: list[str] = field(default_factory=list)  # ids of the artifacts that carry data
    verdicts: dict[str, list[str]] = field(default_factory=lambda: {verdict: [] for verdict in VERDICTS})
    claims_checked: int = 0
    claims_holding: int = 0

    @property
    def drawn(self) -> int:
        return 0 if self.scale == NOT_DRAWN else len(self.artifacts)


def summary_rows(manifest: dict) -> list[SummaryRow]:
    """One row per (paper, scale) in the manifest's paper order, scales in the order first met, the artifacts not
    drawn last; diagrams (no data) are left out."""
    rows: dict[tuple[str, str], SummaryRow] = {}
    for paper in manifest["papers"]:
        artifacts = [a for a in manifest["artifacts"] if a.get("paper") == paper and a["status"] != "diagram"]
        for artifact in sorted(artifacts, key=lambda a: a["status"] != "reproduced"):
            scale = artifact.get("scale") if artifact["status"] == "reproduced" else NOT_DRAWN
            row = rows.setdefault((paper, scale), SummaryRow(paper, scale))
            row.artifacts.append(artifact["id"])
            if artifact.get("verdict"):
                row.verdicts[artifact["verdict"]].append(artifact["id"])
            statuses = [claim_status(claim) for claim in artifact.get("claims", [])]
            row.claims_checked += sum(status != "not checked" for status in statuses)
            row.claims_holding += statuses.count("holds")
    return list(rows.values())

"""The paper-scale verdict of each artifact from the committed results (docs/fidelity/paper/<study>/: its tables and
claims, decided by the current rules), for the report to show beside whatever scale it was built at."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.registry import artifact_stem, catalog, implementation
from bnnrepro.artifacts.render import verdict_counts
from bnnrepro.fidelity.kept_files import CLAIMS_FILE, PAPER_RESULTS, PROVENANCE_FILE, TABLES
from bnnrepro.report.verdicts import artifact_verdict


def paper_verdicts(root: Path) -> dict[str, dict]:
    """{artifact id: {verdict, reason, study, commit, collected}} of every artifact with committed paper results."""
    verdicts = {}
    for provenance_file in sorted((root / PAPER_RESULTS).glob(f"*/{PROVENANCE_FILE}")):
        folder, provenance = provenance_file.parent, json.loads(provenance_file.read_text())
        claims = pd.read_csv(folder / CLAIMS_FILE)
        tables = {path.stem: path for path in (folder / TABLES).glob("*.csv")}
        with_tables = [entry["id"] for entry in catalog()["artifacts"] if artifact_stem(entry["id"]) in tables]
        for artifact_id in dict.fromkeys([*claims["artifact"], *with_tables]):
            table = tables.get(artifact_stem(artifact_id))
            cells = verdict_counts(pd.read_csv(table)) if table is not None else None
            own = claims[claims["artifact"] == artifact_id].to_dict("records")
            verdict = artifact_verdict(
                "paper", implementation(artifact_id).uses, bool(provenance["standin"]), {"cells": cells, "claims": own}
            )
            verdicts[artifact_id] = {
                "verdict": verdict.label, "reason": verdict.reason, "study": provenance["study"],
                "commit": provenance["commit"], "collected": provenance["collected"],
            }  # fmt: skip
    return verdicts

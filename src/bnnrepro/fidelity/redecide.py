"""Decide a kept study's verdicts again under the current rules (`bnnrepro.artifacts.verdict_rules`) from its kept
files alone, without its runs: `python -m bnnrepro.fidelity.redecide docs/fidelity/paper/<study> ...`.

Tables and claims drawn from the tidy metrics are drawn and checked again from the kept `metrics.csv`. A table drawn
from run files keeps its numbers, and its cells are judged again by the cell rule. A claim checked on run files
(their evaluations are not kept) cannot be decided over its repetitions here: it is kept as *not resolved*, its
evidence saying what the first rule found on the figure's run; collecting the runs again decides it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import artifact_stem, implementation
from bnnrepro.artifacts.render import TABLE_COLUMNS, compare_with_published
from bnnrepro.fidelity.collect import write_claims
from bnnrepro.fidelity.kept_files import CLAIM_COLUMNS, CLAIMS_FILE, METRICS_FILE, PROVENANCE_FILE, TABLES
from bnnrepro.pipeline.studies import load_study

OUR_COLUMNS = ["row", "column", "ours", "ours_error", "n_runs"]
FIRST_RULE = "not decided over repetitions (its run files are not kept); on the figure's run the first rule found: "


def redecide(folder: Path) -> None:
    """Rewrite the tables and claims.csv of the kept study in `folder` under the current rules."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    study, scale = load_study(provenance["study"]), provenance["scale"]
    kept_claims = pd.read_csv(folder / CLAIMS_FILE)
    rows = []
    for artifact_id in study.artifacts:
        drawn = implementation(artifact_id)
        context = ArtifactContext(study.name, scale, folder / METRICS_FILE)
        table_file = folder / TABLES / f"{artifact_stem(artifact_id)}.csv"
        if drawn.uses == "metrics" and drawn.output == "table":
            ours = drawn.draw(context)
        elif table_file.is_file():
            kept = pd.read_csv(table_file)
            ours = kept.loc[kept["ours"].notna(), [c for c in OUR_COLUMNS if c in kept]]
        else:
            ours = None
        if ours is not None:
            table = compare_with_published(artifact_id, ours, bool(provenance["standin"]))
            table[TABLE_COLUMNS].to_csv(table_file, index=False)
        kept_rows = kept_claims[kept_claims["artifact"] == artifact_id].set_index("claim")
        for claim in claims_of(artifact_id):
            outcome = check(claim, context)  # a claim on the metrics or on formulas alone is decided again
            if outcome.checked or drawn.uses == "metrics" or claim.text not in kept_rows.index:
                rows.append({"artifact": artifact_id, "claim": claim.text, **outcome.record()})
            else:
                rows.append(_kept_row(kept_rows.loc[claim.text].rename(None).to_dict() | {"claim": claim.text}))
    write_claims(folder, rows)


def _kept_row(kept: dict) -> dict:
    """A claim checked on run files under the first rule, kept as not resolved (see the module docstring)."""
    if isinstance(kept.get("status"), str):
        return {key: kept[key] for key in CLAIM_COLUMNS}
    if pd.isna(kept["holds"]):
        return {**kept, "status": "not checked"}
    found = "holds" if str(kept["holds"]) == "True" else "does not hold"
    return {"artifact": kept["artifact"], "claim": kept["claim"], "holds": None, "status": "not resolved",
            "evidence": f"{FIRST_RULE}{found} ({kept['evidence']})"}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="kept study folders (docs/fidelity/<scale>/<study>)")
    for folder in parser.parse_args(argv).folders:
        redecide(folder)
        print(f"redecided {folder}")


if __name__ == "__main__":
    main()

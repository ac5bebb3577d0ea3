"""The file names of a kept study's folder (docs/fidelity/<scale>/<study>/), shared by collect and the code digests,
and where the committed paper-scale results are."""

from pathlib import Path

CLAIMS_FILE, PROVENANCE_FILE, METRICS_FILE, TABLES = "claims.csv", "provenance.json", "metrics.csv", "tables"
CLAIM_COLUMNS = ["artifact", "claim", "holds", "status", "evidence"]
"""The columns of claims.csv: a row per caption claim as checked (`bnnrepro.artifacts.claims.Outcome.record`)."""
BATCHES_FILE = "batches.csv"
"""Which batch each kept run came from (run, batch: its index in the provenance's `batches`), once there are several."""

REPRODUCTION_FILE = "reproduction-{}.csv"
"""The rerun's verdict metrics of a kept study's k-th recorded reproduction (`bnnrepro.fidelity.reproduce`); a
collect of the study removes them with the records (its runs are then other numbers)."""

KEPT_RESULTS = "docs/fidelity"
"""Where `python -m bnnrepro.fidelity collect` keeps a study's results by default (<scale>/<study>/ under it)."""
PAPER_RESULTS = f"{KEPT_RESULTS}/paper"
"""The committed paper-scale results (`python -m bnnrepro.fidelity collect`), relative to the project root. Named here,
not in `bnnrepro.layout`, which every training job imports: an edit here reruns no training."""


def paper_result_files(root: Path) -> list[str]:
    """The committed paper-scale files the report's paper-scale verdicts are made from, project-relative."""
    patterns = (f"*/{PROVENANCE_FILE}", f"*/{CLAIMS_FILE}", f"*/{TABLES}/*.csv")
    return sorted(str(path.relative_to(root)) for pattern in patterns for path in (root / PAPER_RESULTS).glob(pattern))


def provenance_batches(provenance: dict) -> list[dict]:
    """The batches a kept provenance.json records: its `batches`, or the provenance itself where it holds one batch
    (collected once, the batch's fields sit at its top level)."""
    return provenance.get("batches", [provenance])

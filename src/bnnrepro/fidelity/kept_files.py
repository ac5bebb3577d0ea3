"""The file names of a kept study's folder (docs/fidelity/<scale>/<study>/), shared by collect and the code digests."""

CLAIMS_FILE, PROVENANCE_FILE, METRICS_FILE, TABLES = "claims.csv", "provenance.json", "metrics.csv", "tables"
BATCHES_FILE = "batches.csv"
"""Which batch each kept run came from (run, batch: its index in the provenance's `batches`), once there are several."""

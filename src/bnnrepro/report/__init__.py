"""The reproduction report: a PDF built with Typst from the artifact manifest."""

INVOCATION_VARIABLE = "BNNREPRO_INVOCATION"
"""The environment variable in which the Snakefile records the command that runs it, for the report's provenance."""

"""The reports layout: the files of every figure and table, their checks and the PDF, named once.

Separate from bnnrepro.layout (data, runs, study metrics) because that module is part of every training run's code
(bnnrepro.runs names a run folder's files from it) and its bytes are in every run's code digest
(bnnrepro.fidelity.code_digest): naming a new report file must not mark trained results stale.

    reports/figures/<stem>.{pdf,png}, reports/tables/<stem>.{csv,md,tex}, reports/report.{pdf,typ}
        (a study of your own: its table reports/tables/study_<study>.{csv,md,tex})
    reports/checks/<stem>.json                  an artifact's caption claims and table cells, checked
"""

from __future__ import annotations

from bnnrepro.layout import REPORTS

ARTIFACT_FORMATS = {"figure": ("pdf", "png"), "table": ("csv", "md", "tex")}
ARTIFACT_FOLDERS = {"figure": f"{REPORTS}/figures", "table": f"{REPORTS}/tables"}
REPORT_PDF, REPORT_TYPST = f"{REPORTS}/report.pdf", f"{REPORTS}/report.typ"


def artifact_file(output: str, extension: str, stem: str = "{stem}") -> str:
    """A file of a figure (output 'figure') or table ('table'): reports/figures/<stem>.pdf, ..."""
    if extension not in ARTIFACT_FORMATS[output]:
        raise ValueError(f"a {output} is written as {', '.join(ARTIFACT_FORMATS[output])}, not {extension!r}")
    return f"{ARTIFACT_FOLDERS[output]}/{stem}.{extension}"


def artifact_checks_file(stem: str = "{stem}") -> str:
    """What the job drawing a figure or table checked against the paper (its caption claims, and a table's cells
    against the published error), for the report's verdict: reports/checks/<stem>.json."""
    return f"{REPORTS}/checks/{stem}.json"


def study_summary_stem(study: str = "{study}", task: str = "{task}") -> str:
    """The table stem of a study of your own's datasets of one task (their test metrics,
    bnnrepro.report.study_summary)."""
    return f"study_{study}_{task}"


OWN_STUDY_OUTPUTS = {"table": ("table", ""), "ranking": ("table", "_ranking"), "metrics_figure": ("figure", "_metrics"),
                     "ranking_figure": ("figure", "_ranking"), "selection": ("table", "_selection"),
                     "published": ("table", "_published"), "equivalence": ("table", "_equivalence")}  # fmt: skip
"""What the report shows of a study of your own (bnnrepro.report.own_study): {name: (output kind, stem suffix)}; a
benchmark's settings chosen by validation and its published numbers (empty tables for a study without a
`benchmark:` block); each method against the best over the datasets (empty with one dataset)."""


def own_study_files(study: str = "{study}", task: str = "{task}") -> dict[str, dict[str, str]]:
    """{name: {extension: file}} of each of OWN_STUDY_OUTPUTS of a study of your own, for its datasets of `task`."""
    return {
        name: artifact_files(output, study_summary_stem(study, task) + suffix)
        for name, (output, suffix) in OWN_STUDY_OUTPUTS.items()
    }


def artifact_files(output: str, stem: str = "{stem}") -> dict[str, str]:
    """Every file of a figure or table, by extension."""
    return {extension: artifact_file(output, extension, stem) for extension in ARTIFACT_FORMATS[output]}

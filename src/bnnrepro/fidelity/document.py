"""The fidelity document: for each study collected at a scale (`bnnrepro.fidelity.collect`), each artifact's
published numbers beside ours and each caption claim with whether it holds, from the committed files alone.

A study's folder may hold `findings.yaml`, written by hand after looking into the results: {artifact id: {claim
text, or 'table': why it does not hold (our bug, the paper's ambiguity, the scale), or what the numbers mean}}.
A table's finding states verdicts through fields the document fills from the kept table (`with_verdicts`):
`[[cells]]` for its counts, `[[cell ROW | COLUMN]]` for one cell's verdict, `[[numbers ROW | COLUMN]]` for its
numbers; any finding writes the numbers it takes
from the runs as `[[value NAME]]`, computed from the kept metrics (`bnnrepro.fidelity.finding_values`).
A scale's folder holds `not_run.yaml`, {study: why}: why the artifacts of a study that have a published number or a
checked claim but no collected results at that scale were not run there (the data cannot be fetched, the runs need a
GPU, ...); the document lists them with it, and refuses to leave one out unexplained.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.claims import CLAIM_STATUSES, CONTRADICTED, HOLDS, NOT_CHECKED, NOT_RESOLVED, all_claims
from bnnrepro.artifacts.registry import artifact_stem, catalog
from bnnrepro.artifacts.render import verdict_counts
from bnnrepro.artifacts.verdict_rules import (
    CELL_VERDICTS,
    DIFFERS,
    JUDGED_VERDICTS,
    MARGINS,
    NOT_COMPARABLE,
    NOT_JUDGED,
)
from bnnrepro.fidelity.collect import CLAIMS_FILE, PROVENANCE_FILE, TABLES
from bnnrepro.fidelity.finding_values import with_values
from bnnrepro.fidelity.kept_files import provenance_batches
from bnnrepro.fidelity.reproduce import reproduction_sentences
from bnnrepro.fidelity.staleness import code_section, missing_runs_section
from bnnrepro.files import read_yaml
from bnnrepro.pipeline.studies import available_studies, load_study

FINDINGS_FILE = "findings.yaml"
NOT_RUN_FILE = "not_run.yaml"


def _cell(text: object) -> str:
    """Text in a Markdown table cell (a '|' would end the cell)."""
    return str(text).replace("|", "\\|")


def _number(value: object, error: object = None, digits: int = 3) -> str:
    if pd.isna(value):
        return "–"
    if isinstance(value, str):
        return value
    text = f"{value:.{digits}g}"
    return text if error is None or pd.isna(error) else f"{text} ± {error:.2g}"


def _printed(value: float, error: float) -> str:
    """A cell's number for prose: three significant digits, trailing zeros kept ('1.00 ± 0.012')."""
    return f"{value:#.3g}" + ("" if pd.isna(error) else f" ± {error:.2g}")


def _table_section(compared: pd.DataFrame) -> list[str]:
    """Our cells that have a published number, beside it, with the cell rule's verdict."""
    if compared.empty:
        return [
            "No cell of ours beside a published number (a generated table, or no runs of its part of the grid).",
            "",
        ]
    lines = ["| row | column | ours (n) | published | verdict |", "|---|---|---|---|---|"]
    for _, row in compared.iterrows():
        ours, published = _number(row["ours"], row["ours_error"]), _number(row["published"], row["published_error"])
        runs = "" if pd.isna(row["n_runs"]) else f" ({int(row['n_runs'])})"
        verdict = row["verdict"] if row["verdict"] != DIFFERS else f"**{DIFFERS}**"
        notes = [f"p = {row['p_value']:.2g}"] if not pd.isna(row["p_value"]) else []
        tested = not pd.isna(row["p_equivalence"])
        notes += [f"TOST p = {row['p_equivalence']:.2g} within ± {row['margin']:.3g}"] if tested else []
        notes += [f"partial: {row['partial']}"] if not pd.isna(row["partial"]) else []
        notes += [f"same as {row['coincides_with']}, counted once"] if not pd.isna(row["coincides_with"]) else []
        lines.append(f"| {_cell(row['row'])} | {_cell(row['column'])} | {ours}{runs} | {published} | {verdict}"
                     + (f" ({_cell('; '.join(notes))})" if notes else "") + " |")  # fmt: skip
    counts = verdict_counts(compared)
    counted = ", ".join(f"{counts[label]} {label}" for label in CELL_VERDICTS if counts[label])
    return [*lines, "", f"Cells (rows that coincide counted once): {counted}.", ""]


_STATUS_SHOWN = {HOLDS: "holds", CONTRADICTED: "**contradicted**", NOT_RESOLVED: "not resolved",
                 NOT_CHECKED: "not checked"}  # fmt: skip


VERDICT_FIELD = re.compile(r"\[\[(cells|cell (.+?)\|(.+?)|numbers (.+?)\|(.+?))\]\]")
"""`[[cells]]`, `[[cell ROW | COLUMN]]` or `[[numbers ROW | COLUMN]]` in a table's finding: the table's counts, one
cell's verdict, or its numbers ('0.998 ± 0.012 against 1.04 ± 0.01')."""


def with_verdicts(text: str, compared: pd.DataFrame, table_file: Path) -> str:
    """A table's finding with its verdict fields filled from the kept table (`VERDICT_FIELD`), so that a rule change
    or a new batch cannot leave the prose stating verdicts the table no longer has."""

    def field(match: re.Match) -> str:
        if match.group(1) == "cells":
            counts = verdict_counts(compared)
            return ", ".join(f"{counts[label]} {label}" for label in CELL_VERDICTS if counts[label])
        numbers = match.group(1).startswith("numbers")
        row, column = (match.group(4), match.group(5)) if numbers else (match.group(2), match.group(3))
        cell = compared[(compared["row"] == row.strip()) & (compared["column"] == column.strip())]
        if cell.empty:
            raise ValueError(f"{table_file}: a finding names the cell {row} | {column}, which the table has not")
        first = cell.iloc[0]
        if numbers:
            ours, published = (_printed(first[k], first[f"{k}_error"]) for k in ("ours", "published"))
            return f"{ours} against {published}"
        return str(first["verdict"])

    return VERDICT_FIELD.sub(field, text)


def _claims_section(claims: pd.DataFrame, findings: dict) -> list[str]:
    lines = ["| claim (the paper's words) | verdict | our numbers |", "|---|---|---|"]
    for _, row in claims.iterrows():
        lines.append(f"| {_cell(row['claim'])} | {_STATUS_SHOWN[row['status']]} | {_cell(row['evidence'])} |")
    notes = [f"- *{row['claim']}* {findings[row['claim']]}" for _, row in claims.iterrows() if row["claim"] in findings]
    return [*lines, "", *(["Why:", *notes, ""] if notes else [])]


def study_section(folder: Path, artifacts: dict[str, dict]) -> tuple[list[str], dict]:
    """The Markdown of one collected study, and its counts for the summary."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    claims = pd.read_csv(folder / CLAIMS_FILE)
    findings = read_yaml(folder / FINDINGS_FILE) if (folder / FINDINGS_FILE).is_file() else {}
    findings = {artifact: {key: with_values(str(text), folder) for key, text in texts.items()}
                for artifact, texts in findings.items()}  # fmt: skip
    wall = provenance.get("wall_seconds")
    lines = [
        f"## {provenance['study']} at `{provenance['scale']}`", "",
        f"Runs: {provenance['grid']}; training {provenance['train_seconds'] / 60:.1f} min summed over runs "
        f"(longest run {provenance['longest_run_seconds']:.0f} s)"
        + (f", {wall / 60:.0f} min wall for its batches" if wall else "")
        + f"; {provenance['machine']}; {_commits(provenance)}, {provenance['collected']}."
        + (" **Some runs used stand-in data.**" if provenance["standin"] else "")
        + "".join(f" {sentence}" for sentence in reproduction_sentences(provenance)), "",
    ]  # fmt: skip
    lines += code_section(folder)  # whether the code that trained its batches is the current code
    lines += missing_runs_section(folder)  # the runs of a grid grown since its batches
    shown = _collected_artifacts(claims, folder, artifacts)
    counts = {"claims": claims["status"].value_counts().to_dict(), "cells": dict.fromkeys(CELL_VERDICTS, 0),
              "artifacts": shown}  # fmt: skip
    for artifact_id in shown:
        lines += [f"### {artifact_id}: {artifacts[artifact_id]['title']}", ""]
        table_file = folder / TABLES / f"{artifact_stem(artifact_id)}.csv"
        if table_file.is_file():
            table = pd.read_csv(table_file)
            compared = table[table["published"].notna() & table["ours"].notna()]  # our cells beside published ones
            lines += _table_section(compared)
            for label, count in verdict_counts(compared).items():
                counts["cells"][label] += count
            if "table" in findings.get(artifact_id, {}):
                lines += [with_verdicts(findings[artifact_id]["table"], compared, table_file), ""]
        own = claims[claims["artifact"] == artifact_id]
        if not own.empty:
            lines += _claims_section(own, findings.get(artifact_id, {}))
    return lines, {**provenance, **counts}


def _collected_artifacts(claims: pd.DataFrame, folder: Path, artifacts: dict[str, dict]) -> list[str]:
    """The artifacts a collected study's folder has claims (its claims.csv, `claims`) or a table of, those with
    claims first."""
    return list(dict.fromkeys([*claims["artifact"], *_table_ids(folder, artifacts)]))


def _commits(provenance: dict) -> str:
    """'commit `a`', or for batches collected from trees at several commits, 'commits `a`, `b`'."""
    commits = list(dict.fromkeys(batch["commit"] for batch in provenance_batches(provenance)))
    return ("commits " if len(commits) > 1 else "commit ") + ", ".join(f"`{commit}`" for commit in commits)


def _table_ids(folder: Path, artifacts: dict[str, dict]) -> list[str]:
    stems = {path.stem for path in (folder / TABLES).glob("*.csv")}
    return [artifact_id for artifact_id in artifacts if artifact_stem(artifact_id) in stems]


def not_run_section(scale_folder: Path, collected: set[str], artifacts: dict[str, dict]) -> list[str]:
    """The artifacts without collected results at this scale: a row per study with the reason `not_run.yaml` gives,
    for a study none of whose results were collected or one that misses an artifact with a published number or a
    checked claim; the rest of the studies' missing artifacts have nothing to compare and are only named."""
    reasons_file = scale_folder / NOT_RUN_FILE
    reasons = read_yaml(reasons_file) if reasons_file.is_file() else {}
    unknown = sorted(set(reasons) - set(available_studies()))
    if unknown:
        raise ValueError(f"{reasons_file}: {', '.join(unknown)} are not studies (config/studies/)")
    claimed = {claim.artifact_id for claim in all_claims()}
    rows, nothing_to_compare = [], []
    for study in available_studies():
        if load_study(study).is_own:  # no published artifact: a benchmark's document is docs/benchmark.md
            continue
        missing = [a for a in load_study(study).artifacts if a not in collected]
        comparable = [a for a in missing if a in claimed or {"published", "published_points"} & set(artifacts[a])]
        if not comparable and (scale_folder / study / PROVENANCE_FILE).is_file():
            nothing_to_compare += missing
            continue
        if study not in reasons:
            raise ValueError(
                f"{reasons_file}: study {study} has no results collected at {scale_folder.name} scale for "
                f"{', '.join(comparable or missing)}: collect them, or say why they were not run, under the key {study}"
            )
        rows.append(f"| {study} | {', '.join(missing)} | {_cell(' '.join(str(reasons[study]).split()))} |")
    lines = [f"## Not run at `{scale_folder.name}` here", ""]
    if rows:
        lines += ["| study | artifacts | why |", "|---|---|---|", *rows, ""]
    if nothing_to_compare:
        lines += [
            "Not in this document because they have no published number and no claim we check (views of the data, "
            f"examples, generated tables): {', '.join(nothing_to_compare)}.",
            "",
        ]
    return lines


def margin_lines() -> list[str]:
    """The equivalence margins of the cell rule, one row per metric kind (`MARGINS`), with their reasons."""
    rows = [f"| {kind} | {margin.describe()} | {margin.reason} |" for kind, margin in MARGINS.items()]
    return ["| metric kind | equivalence margin | why |", "|---|---|---|", *rows]


RULE_TEXT = [
    "**The rule** (`src/bnnrepro/artifacts/verdict_rules.py`). A cell: ours (mean and standard error over our n runs)",
    "against the published value, whose ± is read as a standard error from the kind and number of runs the paper",
    "states (a standard deviation over n runs is divided by sqrt(n)); the difference has the two's combined standard",
    "error and Welch-Satterthwaite degrees of freedom. *agrees* when two one-sided t-tests at 5% show it inside the",
    "equivalence margin of its metric kind (below): the 90% interval of the difference lies within ± the margin, so a",
    "result truly a margin away agrees in at most 5% of comparisons; *differs* when Welch's test at 5% separates the",
    "two and equivalence is not shown; *undetermined* otherwise (the interval is too wide to tell), with one run of",
    "ours, or where the cell averages fewer settings than the paper's (*partial*). Cells of rows that coincide (one",
    "model under two names) count once. *not judged*: the paper does not explain its ± (kind or number of runs",
    "unstated, no ±, a standard deviation over one run); *not comparable*: the published column measures something",
    "ours cannot (the reason is in the table's note). Both are counted apart, never as differing.",
    "",
    "A comparison claim: one-sided paired t-tests over the repetitions (seeds or splits) at 5% (the signs' binomial",
    "test where the differences have no spread or one is infinite): *holds* when the stated direction is significant,",
    "*contradicted* when the other is, *not resolved* otherwise. A claim made of K comparisons (every setting, each",
    "rival) holds when each comparison holds (an intersection-union test) and is contradicted when one is after",
    "Holm's correction over the K, so that with every method truly equal a claim is contradicted in at most 5% of",
    "repetitions whatever K. A claim checked on run files that are not kept here (evaluations) stays *not resolved*",
    "until its runs are collected again; its evidence says what the first rule (the figure's one run) found. A",
    "comparison left not resolved says how many repetitions would decide it at the difference observed (the paired",
    "t-test's 80% power) and which way: where the difference points against the claim, more repetitions would",
    "contradict it, not make it hold.",
    "",
    *margin_lines(),
]


def fidelity_document(results: Path, shown_as: str) -> str:
    """The document of every study collected under `results` (<scale>/<study>/), a folder the document names
    `shown_as`."""
    artifacts = {entry["id"]: entry for entry in catalog()["artifacts"]}
    sections, summary, collected = [], [], {}
    totals = {"claims": dict.fromkeys(CLAIM_STATUSES, 0), "cells": dict.fromkeys(CELL_VERDICTS, 0)}
    for folder in sorted(path.parent for path in results.glob(f"*/*/{PROVENANCE_FILE}")):
        lines, counts = study_section(folder, artifacts)
        sections += lines
        collected.setdefault(folder.parent, set()).update(counts["artifacts"])
        claims = [counts["claims"].get(status, 0) for status in CLAIM_STATUSES[:3]]
        cells = [counts["cells"][label] for label in JUDGED_VERDICTS]
        apart = [counts["cells"][label] for label in (NOT_JUDGED, NOT_COMPARABLE)]
        for kind, labels in (("claims", CLAIM_STATUSES), ("cells", CELL_VERDICTS)):
            for label in labels:
                totals[kind][label] += counts[kind].get(label, 0)
        summary.append(
            f"| {counts['study']} | {counts['scale']} | {counts['runs']} | {counts['train_seconds'] / 3600:.2f} h | "
            + " / ".join(map(str, claims)) + " | " + (" / ".join(map(str, cells)) if sum(cells) else "–") + " | "
            + (" / ".join(map(str, apart)) if sum(apart) else "–") + " |"
        )  # fmt: skip
    summary.append(
        "| **all** | | | | " + " / ".join(str(totals["claims"][s]) for s in CLAIM_STATUSES[:3]) + " | "
        + " / ".join(str(totals["cells"][label]) for label in JUDGED_VERDICTS) + " | "
        + " / ".join(str(totals["cells"][label]) for label in (NOT_JUDGED, NOT_COMPARABLE)) + " |"
    )  # fmt: skip
    header = [
        "# Paper-scale results on a CPU",
        "",
        "What this pipeline reproduces at the papers' own settings, run on a 2-core CPU machine without a GPU:",
        "each study's published numbers beside ours, and each caption claim checked on our results (the criterion",
        "of each check is in `src/bnnrepro/artifacts/claims/`). Generated by `python -m bnnrepro.fidelity document`",
        f"from the committed results in `{shown_as}/` (tidy metrics, tables, claim checks; no checkpoints);",
        "`python -m bnnrepro.fidelity collect` makes those from a built tree. Do not edit by hand.",
        "",
        "To rerun a study here (a batch), or a part of its grid, then keep and write up its results:",
        "",
        "```bash",
        "snakemake --cores 2 --config 'study_scales={sdebnn_toy: paper}'",
        "snakemake --cores 2 $(python -m bnnrepro.fidelity targets udn_spirals method=udn,dun_10 omega=4,16) \\",
        "    --config 'study_scales={udn_spirals: paper}'  # Snakemake's targets go before --config",
        "python -m bnnrepro.fidelity collect . --studies sdebnn_toy udn_spirals --scale paper --wall-seconds SECONDS",
        "python -m bnnrepro.fidelity document",
        "```",
        "",
        "A later batch of a study, trained in another tree, joins the runs already kept with `collect --add`: their",
        "tables and claims are drawn again from all the runs (not for an artifact drawn from run files that the",
        "batches split: collect those from one tree). `targets ... --batch COMMIT` keeps only the runs of the batch",
        "kept at that commit (the rerun commands below use it), so no run of another batch or grid trains with them.",
        "",
        "Whether your machine gives these numbers: train some kept runs again (`targets ... --batch COMMIT`), then",
        "`python -m bnnrepro.fidelity reproduce . --study S` compares them with the kept ones bit for bit (their",
        "training seconds aside); `--record` keeps the outcome, which the study's section then states. The default",
        "`cpu_arithmetic: portable` makes a run's numbers the same whatever the widest kernels of the CPU, not",
        "across CPU vendors: expect the last float32 digits to differ on another vendor's CPU, and more after long",
        "training.",
        "",
        *RULE_TEXT,
        "",
        "| study | scale | runs | training (sum over runs) | claims: hold / contradicted / not resolved | "
        "published numbers: agree / differ / undetermined | not judged / not comparable |",
        "|---|---|---|---|---|---|---|",
        *summary,
        "",
    ]
    not_run = [line for scale, done in collected.items() for line in not_run_section(scale, done, artifacts)]
    return "\n".join([*header, *sections, *not_run])

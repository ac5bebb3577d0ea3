"""Render the artifact manifest as Typst source and compile it to the report PDF.

Every piece of text from the manifest or a table CSV enters the Typst source as a string literal
(`typst_str`), never as markup, so characters such as `#`, `$`, `*`, `_`, `@`, `<`, `[` and `\\` print
verbatim. The PDF is compiled offline with the fonts embedded in typst (system fonts are ignored), with
its creation date taken from the manifest, so the same manifest gives the same PDF.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pandas as pd
import typst

from bnnrepro.files import write_atomic
from bnnrepro.report.practical_equivalence import DECIDED, MIN_DATASETS
from bnnrepro.report.recommendation import recommendation
from bnnrepro.report.summary import NOT_DRAWN, summary_rows
from bnnrepro.report.typst_elements import figure_image, table_from_csv, typst_str
from bnnrepro.report.verdicts import VERDICTS, claim_status

# "reproduced" in the manifest says the artifact was drawn; whether it agrees with the paper is its verdict.
STATUS_LABELS = {"reproduced": "drawn", "not yet reproduced": "not yet reproduced", "diagram": "diagram: no data"}

PREAMBLE = r"""
#set page(paper: "a4", margin: 2cm, numbering: "1 / 1")
#set text(size: 10pt, lang: "en")
#set par(justify: false)
#set table(inset: (x: 4pt, y: 3pt), stroke: (_, y) => (bottom: if y == 0 { 0.6pt } else { 0.2pt + luma(190) }))
#show table.cell.where(y: 0): strong
#show heading.where(level: 1): set text(size: 14pt)
#show heading.where(level: 1): set block(above: 1.8em, below: 0.9em)
#show raw: set text(size: 8.5pt)
#show link: set text(fill: rgb("#1565c0"))

#let status-color = ("reproduced": rgb("#1565c0"), "not yet reproduced": rgb("#c62828"), "diagram": luma(110))
#let verdict-color = ("matches": rgb("#2e7d32"), "differs": rgb("#c62828"), "undetermined": rgb("#ef6c00"),
  "not comparable": luma(110))
#let cell-fill = (agrees: rgb("#e8f5e9"), differs: rgb("#ffebee"), undetermined: rgb("#fff8e1"))

#let badge(color, label) = box(
  fill: color.lighten(88%),
  stroke: 0.5pt + color,
  inset: (x: 3pt, y: 1.5pt),
  outset: (y: 1pt),
  radius: 2pt,
  text(size: 8.5pt, weight: "bold", fill: color, label),
)

// One artifact entry, labelled with its id so that the summary links to it.
#let artifact(
  id, title, status, status-label, verdict: none, standin: false, fields: (), body: none,
) = [#block(
  width: 100%,
  above: 1.5em,
  inset: (left: 6pt, y: 2pt),
  stroke: (left: 1.5pt + if verdict != none { verdict-color.at(verdict) } else { status-color.at(status) }),
  {
    let verdict-badge = if verdict != none { badge(verdict-color.at(verdict), verdict) }
    block(below: 0.7em, sticky: true)[
      #raw(id) #h(0.3em) #strong(title) #h(0.3em) #badge(status-color.at(status), status-label) #verdict-badge
    ]
    if standin {
      block(below: 0.7em, text(weight: "bold", fill: rgb("#c62828"), "(computed on a stand-in dataset)"))
    }
    for (name, value) in fields { block(spacing: 0.55em)[#strong(name) #value] }
    if body != none { block(above: 0.9em, body) }
  },
) #label(id)]
"""


def _array(items: list[str]) -> str:
    """A Typst array literal (the trailing comma keeps a one-element array an array)."""
    return f"({', '.join(items)},)" if items else "()"


def _artifact_file(artifact: dict, kind: str, root: Path) -> tuple[Path, str]:
    """The artifact's file of `kind` on disk and as a Typst root-relative path; it must exist."""
    relative = artifact["files"][kind]
    path = root / relative
    if not path.is_file():
        raise FileNotFoundError(f"artifact {artifact['id']}: missing {kind} file {path}")
    return path, "/" + Path(relative).as_posix()


def _artifact_body(artifact: dict, root: Path) -> str:
    """The Typst body of a reproduced artifact: its figure, or its table (which may break across pages). An entry may
    break before its figure: a figure of the largest printed size below a long note is taller than what is left of a
    page, and an entry kept whole would run off it."""
    files = artifact.get("files", {})
    if "png" in files:
        return figure_image(*_artifact_file(artifact, "png", root))
    if "csv" in files:
        return table_from_csv(_artifact_file(artifact, "csv", root)[0])
    raise ValueError(f"artifact {artifact['id']}: status is reproduced but it lists no png or csv file")


def drawn_by_text(drawn_by: dict) -> str:
    """'module.function (file:line) at commit abc1234', with '+ local changes' when the checkout's src/ differed
    from that commit, or 'not a git checkout'."""
    where = f"{drawn_by['function']} ({drawn_by['file']}:{drawn_by['line']})"
    if drawn_by["commit"] is None:
        return f"{where}, not a git checkout"
    return f"{where} at commit {drawn_by['commit']}" + (" + local changes" if drawn_by["local_changes"] else "")


_CLAIM_MARKS = {"holds": "✓ holds", "contradicted": "✗ contradicted", "not resolved": "? not resolved",
                "not checked": "– not checked"}  # fmt: skip


def claims_text(claims: list[dict]) -> str:
    """One line per caption claim: whether it holds on our results, the paper's words and the numbers behind it."""
    return "\n".join(f"{_CLAIM_MARKS[claim_status(c)]}: {c['claim']} ({c['evidence']})" for c in claims)


def _verdict(artifact: dict) -> str | None:
    """The verdict of a drawn artifact; an error naming the checks file where the manifest could not make one."""
    if artifact["status"] != "reproduced":
        return None
    if artifact.get("verdict") is None:
        raise FileNotFoundError(f"artifact {artifact['id']}: missing checks file {artifact.get('checks_file')}")
    return artifact["verdict"]


def _published_values(artifact: dict) -> str | None:
    """For a drawn figure: where the paper states numbers for it (overlaid in black on ours), or that it states none."""
    if artifact["status"] != "reproduced" or "png" not in artifact.get("files", {}):
        return None
    note = artifact.get("published_points")
    return f"overlaid in black on our figure; {note}" if note else "the paper states no numbers for this figure."


def paper_verdict_text(paper: dict | None) -> str | None:
    """The committed paper-scale verdict of an artifact (docs/fidelity.md has the numbers), or None."""
    if paper is None:
        return None
    return (f"{paper['verdict']}: {paper['reason']} (study {paper['study']} at paper scale, runs of commit "
            f"{paper['commit']}, collected {paper['collected']}; docs/fidelity.md)")  # fmt: skip


def render_artifact(artifact: dict, root: Path) -> str:
    """One artifact entry: heading line with status and verdict badges, the paper's caption, our note, the verdict's
    reason, the caption claims as checked, figure or table."""
    status = artifact["status"]
    if status not in STATUS_LABELS:
        raise ValueError(f"artifact {artifact['id']}: unknown status {status!r}")
    verdict = _verdict(artifact)
    fields = [
        ("Paper:", artifact.get("caption")),
        ("Published figure shows:", artifact.get("shows")),
        ("Why not reproduced:", artifact.get("diagram_reason")),
        ("Study:", artifact.get("study")),
        ("Scale:", artifact.get("scale")),
        ("Note:", artifact.get("note")),
        ("Published values:", _published_values(artifact)),
        ("Verdict:", f"{verdict}: {artifact['verdict_reason']}" if verdict else None),
        ("Paper-scale verdict:", paper_verdict_text(artifact.get("paper_verdict"))),
        ("Caption claims:", claims_text(artifact.get("claims", []))),
        ("Missing:", artifact.get("missing")),
        ("Run checks:", artifact.get("flags")),
        ("Drawn by:", drawn_by_text(artifact["drawn_by"]) if "drawn_by" in artifact else None),
    ]
    pairs = [f"({typst_str(name)}, {typst_str(value)})" for name, value in fields if value]
    body = _artifact_body(artifact, root) if status == "reproduced" else "none"
    args = [typst_str(artifact["id"]), typst_str(artifact.get("title", "")), typst_str(status)]
    return (
        f"#artifact({', '.join(args)}, {typst_str(STATUS_LABELS[status])},\n"
        f"  verdict: {typst_str(verdict) if verdict else 'none'},\n"
        f"  standin: {'true' if artifact.get('standin') else 'false'},\n"
        f"  fields: {_array(pairs)},\n"
        f"  body: {body},\n)\n"
    )


def _grouped(manifest: dict) -> dict[str, list[dict]]:
    """The artifacts by paper, papers in manifest order; an artifact of an unlisted paper is an error."""
    groups: dict[str, list[dict]] = {paper: [] for paper in manifest["papers"]}
    for artifact in manifest["artifacts"]:
        if artifact.get("paper") not in groups:
            raise ValueError(f"artifact {artifact['id']}: paper {artifact.get('paper')!r} is not in the manifest")
        groups[artifact["paper"]].append(artifact)
    return groups


def scale_text(provenance: dict) -> str:
    """The run's scale, and the studies that ran at another one (config 'study_scales')."""
    others = provenance.get("study_scales") or {}
    listed = ", ".join(f"{study} at {scale}" for study, scale in sorted(others.items()))
    return str(provenance.get("scale", "")) + (f" ({listed})" if listed else "")


def render_provenance(provenance: dict) -> str:
    """Git commit, scale, time, the command that ran the workflow, versions (the configuration is an appendix)."""
    commit = str(provenance.get("git_commit", "unknown"))
    dirty = ' + " (uncommitted changes)"' if provenance.get("git_dirty") else ""
    versions = ", ".join(f"{name} {version}" for name, version in provenance.get("versions", {}).items())
    rows = [
        ("Git commit", f"raw({typst_str(commit)}){dirty}"),
        ("Scale", typst_str(scale_text(provenance))),
        ("Created", typst_str(provenance.get("created", ""))),
        ("Command", f"raw({typst_str(provenance.get('command', ''))})"),
        ("Configuration", 'link(label("configuration"), "in full at the end of the report")'),
        ("Versions", typst_str(versions)),
    ]
    cells = ", ".join(f"strong({typst_str(name)}), {value}" for name, value in rows)
    return (
        '#heading(level: 1, "Provenance")\n'
        f"#grid(columns: (auto, 1fr), column-gutter: 1em, row-gutter: 0.65em, {cells})\n"
    )


def render_configuration(provenance: dict) -> str:
    """The workflow's whole configuration as a monospace block."""
    config = json.dumps(provenance.get("config", {}), indent=2, ensure_ascii=False)
    return (
        '#heading(level: 1, "Configuration") #label("configuration")\n'
        "#block(width: 100%, fill: luma(245), inset: 6pt, radius: 2pt, "
        f"text(size: 8pt, raw({typst_str(config)}, block: true)))\n"
    )


def _links(ids: list[str]) -> str:
    """Typst links to the artifacts' entries, comma separated."""
    return " + [, ] + ".join(f"link(label({typst_str(i)}), raw({typst_str(i)}))" for i in ids)


_SUMMARY_INTRO = (
    "Drawn: the pipeline made the figure or table. Verdict: matches (every judged cell agrees with its published "
    "value and every caption claim the runs can check holds), differs (a cell differs or a claim is contradicted), "
    "undetermined (nothing differs, but a cell or claim cannot be told), or not comparable (stand-in data, a scale "
    "smaller than the paper's, or nothing to judge by); each entry says why. The rule: a cell agrees when two "
    "one-sided t-tests at 5% show ours (mean, standard error over our runs) within its metric's equivalence margin of"
    " the published value (its ± read as a standard error from the kind and number of runs the paper states; the "
    "margins are listed in docs/fidelity.md), differs when Welch's test at 5% separates them otherwise, and is "
    "undetermined when neither, with one run, or with fewer settings than the paper's; cells of rows that coincide "
    "count once. A claim holds when a one-sided paired t-test over the repetitions (seeds, splits) shows its "
    "direction at 5%, is contradicted when it shows the other, and is not resolved otherwise; a claim of several "
    "comparisons holds when each holds and is contradicted when one is after Holm's correction. Claims: the caption's"
    " qualitative claims checked on our results."
)


def render_summary(manifest: dict) -> str:
    """Per work and scale: artifacts, drawn, each verdict, claims holding; then each work's artifacts by verdict,
    linked to their entries."""
    rows = summary_rows(manifest)
    cells = []
    for row in rows:
        claims = f"{row.claims_holding} of {row.claims_checked}" if row.claims_checked else "–"
        counts = [len(row.artifacts), row.drawn, *(len(row.verdicts[v]) for v in VERDICTS), claims]
        title = manifest["papers"][row.paper].get("title", row.paper)
        cells.append(", ".join([typst_str(title), typst_str(row.scale), *(typst_str(n) for n in counts)]))
    totals = [
        sum(len(r.artifacts) for r in rows), sum(r.drawn for r in rows),
        *(sum(len(r.verdicts[v]) for r in rows) for v in VERDICTS),
        f"{sum(r.claims_holding for r in rows)} of {sum(r.claims_checked for r in rows)}",
    ]  # fmt: skip
    cells.append(", ".join(f"strong({typst_str(n)})" for n in ["Total", "", *totals]))
    lists = []
    for paper in manifest["papers"]:
        groups = {verdict: [i for r in rows if r.paper == paper for i in r.verdicts[verdict]] for verdict in VERDICTS}
        groups[NOT_DRAWN] = [i for r in rows if r.paper == paper and r.scale == NOT_DRAWN for i in r.artifacts]
        parts = [
            f'text(fill: verdict-color.at({typst_str(name)}, default: status-color.at("not yet reproduced")), '
            f"{typst_str(name)}) + [: ] + {_links(ids)}"
            for name, ids in groups.items()
            if ids
        ]
        if parts:
            title = typst_str(manifest["papers"][paper].get("title", paper))
            lists.append(f"#par(strong({title}) + [: ] + {' + [; ] + '.join(parts)})\n")
    if own := manifest.get("own_studies"):
        names = ", ".join(f"{study['study']} ({study['scale']})" for study in own)
        lists.insert(0, f"#par(strong({typst_str('Studies of your own')}) + [: ] + {typst_str(names)})\n")
    headers = [
        "Work", "Scale", "Artifacts", "Drawn", "Matches", "Differs", "Undetermined", "Not comparable", "Claims hold",
    ]  # fmt: skip
    return (
        '#heading(level: 1, "Summary")\n'
        f"#par(text(size: 9pt, {typst_str(_SUMMARY_INTRO)}))\n"
        f"#text(size: 9pt, table(columns: (1fr, {', '.join(['auto'] * (len(headers) - 1))}),\n"
        f"  align: (left, left, {', '.join(['right'] * (len(headers) - 2))}),\n"
        f"  table.header({', '.join(typst_str(h) for h in headers)}),\n"
        + "".join(f"  {cell},\n" for cell in cells)
        + "))\n#text(size: 9pt)[\n"
        + "".join(lists)
        + "]\n"
    )


def render_paper(paper: dict, artifacts: list[dict], root: Path) -> str:
    """A section for one paper: its title, authors and venue, then its artifacts in manifest order."""
    byline = ", ".join(str(paper[key]) for key in ("authors", "venue") if paper.get(key))
    entries = "".join(render_artifact(artifact, root) for artifact in artifacts) or '#par("No artifacts listed.")\n'
    return (
        f"#heading(level: 1, {typst_str(paper.get('title', ''))})\n"
        f'#text(style: "italic", {typst_str(byline)})\n' + entries
    )


def _own_study_file(study: dict, section: dict, name: str, extension: str, root: Path) -> tuple[Path, str]:
    """A file of one task's section of a study of your own (report_files.own_study_files) on disk and as a Typst
    root-relative path."""
    relative = section["files"][name][extension]
    path = root / relative
    if not path.is_file():
        raise FileNotFoundError(f"study {study['study']} ({section['task']}): missing {name} file {path}")
    return path, "/" + Path(relative).as_posix()


def render_own_studies(studies: list[dict], root: Path) -> str:
    """A section for the studies of your own, before the papers' artifacts: each with its description and, per task
    of its datasets (a subheading where it has several), the figure of their test metrics per dataset, the methods'
    average ranks with the critical-difference diagrams, and the table of test metrics ('' when there are none)."""
    if not studies:
        return ""
    entries = []
    for study in studies:
        sections = study["sections"]
        for number, section in enumerate(sections):
            file = partial(_own_study_file, study, section, root=root)
            metrics_png, ranking_png = (file(name, "png") for name in ("metrics_figure", "ranking_figure"))
            heading = f"#heading(level: 2, raw({typst_str(study['study'])}))\n" if number == 0 else ""
            described = f"#par({typst_str(study['description'])})\n" if number == 0 and study.get("description") else ""
            task = f"{section['task'].capitalize()}: {', '.join(section['datasets'])}"
            subheading = f"#heading(level: 3, {typst_str(task)})\n" if len(sections) > 1 else ""
            # the headings, the description and the first figure on one page: a heading never ends a page alone
            entries.append(
                f"#block(breakable: false)[\n{heading}{described}{subheading}#{figure_image(*metrics_png)}\n]\n"
                + f"#par(text(size: 9pt, {typst_str(_RANKING_NOTE)}))\n"
                + f"#block({table_from_csv(file('ranking', 'csv')[0], published=False)})\n"
                + f"#{figure_image(*ranking_png)}\n"
                + _optional_table(file("equivalence", "csv")[0], _EQUIVALENCE_NOTE, published=False)
                + _recommendation(file)
                + _benchmark_tables(file)
                + f"#block({table_from_csv(file('table', 'csv')[0], published=False)})\n"
            )
    intro = (
        "Studies outside the five works (paper: own in their study file): the test metrics at each run's selected "
        "evaluation, mean ± standard error over seeds and data splits (n runs)."
    )
    return '#heading(level: 1, "Studies of your own")\n' + f"#par({typst_str(intro)})\n" + "".join(entries)


def _recommendation(file: Callable[[str, str], tuple[Path, str]]) -> str:
    """Which method to use (`bnnrepro.report.recommendation`) from the section's ranking and equivalence tables, ''
    where the equivalence table is empty (one dataset)."""
    lines = recommendation(pd.read_csv(file("ranking", "csv")[0]), pd.read_csv(file("equivalence", "csv")[0]))
    if not lines:
        return ""
    paragraphs = "".join(f"#par(text(size: 9pt, {typst_str(line.removeprefix('- '))}))\n" for line in lines if line)
    return f'#par(text(size: 9pt, weight: "bold", "Which method to use?"))\n{paragraphs}'


def _benchmark_tables(file: Callable[[str, str], tuple[Path, str]]) -> str:
    """A benchmark's published numbers beside ours and the settings its validation chose ('' for a study without a
    `benchmark:` block, whose tables are empty); `file(name, extension)` finds the section's files."""
    return _optional_table(file("published", "csv")[0], _PUBLISHED_NOTE, published=True) + _optional_table(
        file("selection", "csv")[0], _SELECTION_NOTE, published=False
    )


def _optional_table(path: Path, note: str, published: bool) -> str:
    """A note and the table of `path`, or '' where the table is empty."""
    if pd.read_csv(path).empty:
        return ""
    return f"#par(text(size: 9pt, {typst_str(note)}))\n#block({table_from_csv(path, published)})\n"


_EQUIVALENCE_NOTE = (
    "Each method against the best of each metric over the datasets: the Bayesian signed-rank test on their per-dataset "
    "means (Benavoli et al. 2017, baycomp), the probability that the method is practically equivalent to the best or "
    "better, and that it is worse, beyond a region of practical equivalence (RMSE 1% of the best's, NLL 0.01 nats, "
    "accuracy and ECE 0.5 points); the best itself shows 1 and 0; n = datasets; decided where one reaches "
    f"{DECIDED} over {MIN_DATASETS} datasets or more."
)
_PUBLISHED_NOTE = (
    "Published numbers of the methods that report this protocol, beside ours at the settings validation chose, each "
    "cell judged by the rule of docs/fidelity.md (equivalence within the metric's margin by two one-sided t-tests, "
    "Welch's test for a difference, at 5%; the published ± read as its source states); a published method we do not "
    "run is shown for reference."
)
_SELECTION_NOTE = (
    "Settings chosen per dataset and split by the benchmark's validation metric (its select_by) among each method's "
    "declared values (how many splits chose each); no setting is chosen on test data."
)


_RANKING_NOTE = (
    "Average rank of each method over the datasets (its mean over the replicates, seeds or data splits, where every "
    "method has a result; over the replicates where there is one dataset), 1 = best (n = blocks); the Friedman test "
    "and, where it rejects at 0.05, the Nemenyi post-hoc test (scikit-posthocs) in the critical-difference diagrams "
    "below, with the critical difference: methods joined by a bar do not differ significantly (where the Friedman "
    "test does not reject, one bar joins them all)."
)


def render_typst(manifest: dict, root: Path) -> str:
    """The whole report as Typst source; figure and table files are looked up under `root`."""
    groups = _grouped(manifest)
    title = typst_str(manifest.get("title", "Reproduction report"))
    header = (
        f"// Compile with: typst compile --root {root} <this file>\n"
        f"#set document(title: {title})\n{PREAMBLE}\n"
        f'#align(center, text(size: 18pt, weight: "bold", {title}))\n'
    )
    papers = [render_paper(manifest["papers"][key], artifacts, root) for key, artifacts in groups.items()]
    own = render_own_studies(manifest.get("own_studies", []), root)
    provenance = manifest.get("provenance", {})
    return "\n".join(
        [
            header,
            render_summary(manifest),
            render_provenance(provenance),
            own,
            *papers,
            render_configuration(provenance),
        ]
    )


def _timestamp(provenance: dict) -> int | None:
    """The manifest's creation time as a Unix timestamp (naive times are UTC), used as the PDF's date."""
    created = provenance.get("created")
    if not created:
        return None
    moment = datetime.fromisoformat(created)
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def printed_figures(manifest_path: Path) -> list[Path]:
    """The PNGs the report of this manifest prints: the drawn artifacts' and the own studies' figures."""
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    root = (Path(manifest_path).parent / manifest["root"]).resolve()
    files = [artifact.get("files", {}) for artifact in manifest.get("artifacts", [])]
    sections = [section for study in manifest.get("own_studies", []) for section in study["sections"]]
    files += [kinds for section in sections for kinds in section["files"].values()]
    return [root / kinds["png"] for kinds in files if "png" in kinds and (root / kinds["png"]).is_file()]


def build_report(manifest_path: Path, out_pdf: Path) -> None:
    """Write `out_pdf` and its Typst source (`out_pdf` with suffix .typ) from the JSON manifest."""
    manifest_path, out_pdf = Path(manifest_path), Path(out_pdf)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    root = (manifest_path.parent / manifest["root"]).resolve()
    source = render_typst(manifest, root)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    typ_path = out_pdf.with_suffix(".typ")
    write_atomic(typ_path, lambda tmp: tmp.write_bytes(source.encode("utf-8")))
    try:
        pdf = typst.compile(
            source.encode("utf-8"),
            root=str(root),
            ignore_system_fonts=True,
            timestamp=_timestamp(manifest.get("provenance", {})),
        )
    except typst.TypstError as error:
        raise RuntimeError(f"typst could not compile {typ_path}: {error}") from error
    write_atomic(out_pdf, lambda tmp: tmp.write_bytes(pdf))

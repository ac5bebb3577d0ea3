"""docs/benchmark.md: the benchmarks run at the `paper` scale and kept under docs/benchmark/ (by
`python -m bnnrepro.fidelity collect TREE --studies <benchmark> --scale paper --out docs/benchmark`), written from
those files alone: what ran and what it cost per dataset, the leaderboard (average ranks, Friedman and Nemenyi tests),
each method's test RMSE and NLL per dataset at the settings validation chose, and the published numbers beside ours
under the fidelity document's cell rule. `python -m bnnrepro.report.benchmark_document` writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from bnnrepro.fidelity.finding_values import with_values
from bnnrepro.fidelity.kept_files import METRICS_FILE, PROVENANCE_FILE
from bnnrepro.fidelity.reproduce import reproduction_sentences
from bnnrepro.fidelity.staleness import code_section
from bnnrepro.files import read_yaml
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import load_study
from bnnrepro.report.benchmark import (
    block_keys,
    method_costs,
    published_comparison,
    published_values,
    ranked,
    replicate_name,
    unranked_methods,
    validation_choice,
)
from bnnrepro.report.benchmark_results import (
    SHOWN_METRICS,
    calibration_section,
    metric_tables,
    per_dataset_section,
    published_section,
)
from bnnrepro.report.hierarchical_comparison import kept_comparisons
from bnnrepro.report.per_dataset_tests import holdout_fraction
from bnnrepro.report.practical_equivalence import (
    DECIDED,
    RANKED_METRICS_DIRECTION,
    ROPES,
    Comparison,
    compare_each,
    equivalence_table,
    verdict,
)
from bnnrepro.report.ranking import (
    COST_COLUMNS,
    COST_FORMATS,
    RANKED_METRICS,
    SIGNIFICANCE,
    Ranking,
    cost_columns,
    leave_one_out,
    on_every_dataset,
    paired_replicates,
    ranking_table,
    study_rankings,
)
from bnnrepro.report.recommendation import SIGNED_RANK_LIMIT, recommendation

RESULTS = Path("docs/benchmark")
FINDINGS_FILE = "findings.yaml"
"""In a benchmark's folder, {subject: text}: what a comparison means, written after looking into the runs (with the
experiment that shows it, e.g. scripts/uci_budget_sensitivity.py's CSV kept beside)."""
NOT_RUN_FILE = "not_run.yaml"
"""Beside a scale's benchmarks, {study: {method or dataset: why}}: what the benchmark has at that scale but the kept
runs lack, each with the reason (written by hand; the document refuses to leave one out unexplained)."""
DOCUMENT = Path("docs/benchmark.md")
CELL_RULE = (
    "ours (mean and standard error over our splits) against the published value, whose ± is read as a standard error "
    "from the kind and number of splits stated by the work that made the number (a standard deviation over n splits "
    "is divided by sqrt(n)); a ± whose kind that work does not state is read both ways, and a cell whose two readings "
    "disagree is undetermined. *agrees* when two one-sided t-tests at 5% show the difference inside the equivalence "
    "margin of its metric (test RMSE: a tenth of the published value; test NLL: log 1.1 = 0.095 nats, what a Gaussian "
    "predictive a tenth wider loses); *differs* when Welch's test separates the two at 5% after Holm's correction "
    "over all of the benchmark's published-number tests and equivalence is not shown; *undetermined* otherwise. "
    "Where the source gives its own number per split on the splits we run, the same "
    "tests are paired by split (the published column then shows its mean and the standard deviation over its splits). "
    "Without a published error (or a number of splits) a cell is *not judged*; on stand-in data *not comparable*; a "
    "published method we do not run is shown *for reference*, and counted apart."
)


def cost_section(tidy: pd.DataFrame) -> list[str]:
    """Training time summed over each dataset's runs, and per run."""
    seconds = tidy[tidy["metric"] == "train_seconds"].groupby("dataset")["value"]
    lines = ["| dataset | runs | training, summed | per run (mean) |", "|---|---|---|---|"]
    for dataset, values in seconds:
        lines.append(f"| {dataset} | {len(values)} | {values.sum() / 60:.1f} min | {values.mean():.1f} s |")
    return lines


def leaderboard(
    rankings: list[Ranking], costs: pd.DataFrame, replicate: str, unranked: dict[str, str] | None = None
) -> list[str]:
    """Average ranks per metric (1 = best) beside each method's cost (`method_costs`), the Friedman p-value, and the
    methods the Nemenyi test cannot tell from the best at the level of `SIGNIFICANCE` (none is told apart where the
    Friedman test does not reject: `Ranking.posthoc_p`); the `unranked` methods' costs
    below the ranked, with why they are not ranked."""
    unranked = {m: why for m, why in (unranked or {}).items() if m in costs.index}
    methods = list(dict.fromkeys([*(m for ranking in rankings for m in ranking.average_ranks.index), *unranked]))
    header = " | ".join(f"{SHOWN_METRICS.get(r.metric, r.metric)} rank" for r in rankings)
    lines = [f"| method | {header} | {' | '.join(cost_columns(replicate).values())} |",
             "|---|" + "---|" * (len(rankings) + len(COST_COLUMNS))]  # fmt: skip
    for method in methods:
        cells = [f"{r.average_ranks[method]:.2f}" if method in r.average_ranks else "–" for r in rankings]
        cost = costs.reindex([method], columns=list(COST_COLUMNS)).iloc[0]
        cells += ["–" if pd.isna(cost[key]) else COST_FORMATS[key].format(cost[key]) for key in COST_COLUMNS]
        lines.append(f"| {method} | {' | '.join(cells)} |")
    lines.append("")
    lines += [f"- {method}, not ranked: {why}" for method, why in unranked.items()]
    for ranking in rankings:
        name = SHOWN_METRICS.get(ranking.metric, ranking.metric)
        lines.append(f"- {name}, the pool's effect: {pool_sensitivity(ranking)}")
        if ranking.friedman_p is None:
            lines.append(f"- {name}: {len(ranking.blocks)} blocks, too few methods or blocks for the Friedman test.")
            continue
        best = ranking.average_ranks.index[0]
        tied = [m for m in ranking.average_ranks.index[1:] if ranking.posthoc_p().loc[best, m] >= SIGNIFICANCE]
        units = "datasets" if ranking.unit == "dataset" else "splits of one dataset"
        posthoc = (
            f"not told apart from it by the Nemenyi test at {SIGNIFICANCE}: {', '.join(tied) or 'none'}"
            if ranking.friedman_p < SIGNIFICANCE
            else f"the Friedman test does not reject at {SIGNIFICANCE}, so no post-hoc test tells any method from it"
        )
        lines.append(
            f"- {name}: Friedman p = {ranking.friedman_p:.2g} over {len(ranking.blocks)} {units}; critical difference "
            f"{ranking.critical_difference():.2f} ranks; best average rank {best}; {posthoc}."
        )
    return lines


def ran_on_by_all(tidy: pd.DataFrame, methods: set[str]) -> list[str]:
    """The datasets of `tidy` on which each of `methods` has a run (where the rankings over datasets compare them,
    so where their costs compare too)."""
    return [d for d, rows in tidy.groupby("dataset", sort=False) if methods <= set(rows["method"])]


def every_dataset_leaderboard(paired: pd.DataFrame, costs: pd.DataFrame, task: str, replicate: str) -> list[str]:
    """Where a ranked method has no run on some dataset (the rankings above leave that dataset out: they are paired),
    the leaderboard over every dataset of the methods that ran on all of them (`on_every_dataset`); else nothing."""
    pool = on_every_dataset(paired)
    if not (without := sorted(set(paired["method"]) - set(pool["method"]))):
        return []
    return [
        f"#### Over all {paired['dataset'].nunique()} datasets, without {', '.join(without)}",
        "",
        f"The same over every dataset, ranking the methods that ran on all of them ({', '.join(without)} did not: "
        "see what was not run).",
        "",
        *leaderboard(study_rankings(pool, task), costs, replicate),
        "",
    ]


def pool_sensitivity(ranking: Ranking) -> str:
    """How the ranking moves when one method leaves the pool (`leave_one_out`), in a sentence; with fewer than three
    methods, that there is no such order to compare (one left out leaves one at most)."""
    if (methods := len(ranking.average_ranks)) < 3:
        return f"not measured: {methods} ranked method(s), and leaving one out leaves no order to compare."
    moves = leave_one_out(ranking, RANKED_METRICS_DIRECTION[ranking.metric])
    best = str(ranking.average_ranks.index[0])
    changed = moves[(moves["best"] != best) & (moves["left_out"] != best)]
    changes = "; ".join(f"without {row.left_out}, {row.best}" for row in changed.itertuples())
    return (
        f"leaving one of the {len(moves)} methods out, {best} stays best in {len(moves) - 1 - len(changed)} of the "
        f"{len(moves) - 1} pools that keep it" + (f" ({changes} is best)" if changes else "")
        + f"; the others' order keeps Kendall's tau of at least {moves['tau'].min():.2f} with the full pool's."
    )  # fmt: skip


HIERARCHICAL_TEST = (
    "Each method against the best (by average rank) over the datasets, with each dataset's {replicate}s as its "
    "repeated measures: the hierarchical Bayesian t-test (Corani et al. 2017, baycomp with Stan; {correlation}), "
    "P(worse than the best by more than the region of practical "
    f"equivalence on a new dataset), P(within it), P(better); decided at {DECIDED}."
)


UNIT_REASON = {
    "split": "its splits overlap and are repeated measures of it, not independent data sets",
    "seed": "its seeds are repeated measures of it (fresh draws of one problem), not different problems",
}
"""Why a dataset, not its replicates, is the unit of the rankings, by what the replicates are."""
NO_PUBLISHED = "None: the study file names no published numbers to set beside these."
NO_TUNING = "None: every method ran at its configured settings (the study gives no method a tuning grid)."


def correlation_phrase(replicate: str, holdout: float) -> str:
    """What the tests take for the correlation of a dataset's replicates (`holdout`: the share each holds out)."""
    if holdout:
        return f"the {replicate}s' correlation the held-out share, {holdout:.3g}"
    return f"the {replicate}s' correlation 0: each draws its data afresh"


SIGNED_RANK_TEST = (
    "The same on the datasets' means alone, as the report computes it at any scale: the Bayesian signed-rank test "
    "(Benavoli et al. 2017, baycomp), where every dataset weighs alike whatever the noise of its mean."
)
HIERARCHICAL_LIMIT = (
    "the hierarchical test's probabilities are of a new dataset like these {datasets}, and with this few a "
    "difference that changes size or sign between datasets leaves the answer open, so 'not shown worse' is no "
    "evidence of equivalence"
)


def rope_sentence(task: str) -> str:
    """The regions of practical equivalence of the task's ranked metrics, in a sentence."""
    ropes = [f"{SHOWN_METRICS.get(m, m)} {rope:g}{' of the best' if kind == 'relative' else ''}"
             for m, (kind, rope) in ROPES.items() if m in RANKED_METRICS[task]]  # fmt: skip
    return "ROPE: " + "; ".join(ropes) + "."


def equivalence_section(compared: dict[str, tuple[str, list[Comparison]]], test: str) -> list[str]:
    """Per ranking over datasets (`compared`: a test's comparisons with each metric's best, `test` its description):
    its best method and, for each other, the probabilities that it is worse than the best beyond the ROPE, within it,
    or better, and the methods each answer decides for."""
    lines = [test, ""]
    for metric, (best, comparisons) in compared.items():
        name = SHOWN_METRICS.get(metric, metric)
        lines += [f"**{name}**: best average rank {best}.", "", "| method | P(worse) | P(equivalent) | P(better) |",
                  "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {c.method} | {c.worse:.2f} | {c.equivalent:.2f} | {c.better:.2f} |" for c in comparisons]
        decided = {answer: [c.method for c in comparisons if verdict(c) == answer]
                   for answer in ("equivalent or better", "worse", "undecided")}  # fmt: skip
        shown = {answer: ", ".join(methods) or "none" for answer, methods in decided.items()}
        lines += ["", f"Equivalent to {best} or better: {shown['equivalent or better']}; worse: {shown['worse']}; "
                  f"undecided: {shown['undecided']}.", ""]  # fmt: skip
    return lines


def recommendation_section(
    rankings: list[Ranking],
    costs: pd.DataFrame,
    left_out: list[str],
    compared: dict[str, tuple[str, list[Comparison]]] | None = None,
    limit: str = SIGNED_RANK_LIMIT,
) -> list[str]:
    """`recommendation` from the benchmark's ranking and equivalence tables (of the comparisons `compared`, the
    signed-rank test's made here where not given; `limit` what their test cannot tell), and the methods and datasets
    it left out, does not rank or did not run here."""
    equivalence = equivalence_table(rankings, False, compared)
    lines = recommendation(ranking_table(rankings, False, costs), equivalence, SHOWN_METRICS, limit)
    return [*lines, "", f"Left out, unranked or not run here, so not compared: {', '.join(left_out) or 'none'}."]


def not_run(folder: Path, tidy: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(the methods, then the datasets, of the benchmark at the kept scale that no kept run has; the pairs
    '<method> on <dataset>' of a kept method and a kept dataset that no kept run has)."""
    runs = load_study(folder.name).runs(folder.parent.name)
    methods = sorted({run.method for run in runs} - set(tidy["method"]))
    datasets = sorted({run.dataset for run in runs} - set(tidy["dataset"]))
    planned = {(run.method, run.dataset) for run in runs} - set(zip(tidy["method"], tidy["dataset"], strict=True))
    pairs = [f"{m} on {d}" for m, d in sorted(planned) if m not in methods and d not in datasets]
    return methods + datasets, pairs


def not_run_section(folder: Path, missing: list[str]) -> list[str]:
    """The methods, datasets and method-dataset pairs of the benchmark at the kept scale that no kept run has
    (`missing`: `not_run`'s), with `NOT_RUN_FILE`'s reasons; an error naming the file where one has none."""
    study, scale = load_study(folder.name), folder.parent.name
    reasons_file = folder.parent / NOT_RUN_FILE
    reasons = (read_yaml(reasons_file) if reasons_file.is_file() else {}).get(study.name, {})
    if unexplained := [name for name in missing if name not in reasons]:
        raise ValueError(f"{reasons_file}: say under {study.name} why {', '.join(unexplained)} did not run here")
    if not missing:
        return []
    lines = [f"### Not run at `{scale}` here", "", "| method or dataset | why |", "|---|---|"]
    return [*lines, *(f"| {name} | {' '.join(str(reasons[name]).split())} |" for name in missing), ""]


def benchmark_section(folder: Path, root: Path, sample: bool = False) -> list[str]:
    """The section of one benchmark kept at one scale; its hierarchical posteriors sampled and kept where stale and
    `sample` (`bnnrepro.report.hierarchical_comparison.kept_comparisons`)."""
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    tidy = pd.read_csv(folder / METRICS_FILE)
    missing, pairs = not_run(folder, tidy)
    not_run_lines = not_run_section(folder, [*missing, *pairs])  # first: a run left out without its reason stops here
    study = load_study(provenance["study"])
    selected, choices = validation_choice(tidy, study.benchmark["select_by"], block_keys(study.benchmark))
    replicate = replicate_name(study.benchmark)
    compared = published_comparison(selected, published_values(study.benchmark.get("published", [])))
    task = study.benchmark["task"]
    paired = paired_replicates(ranked(selected, study.benchmark), task)  # what the rankings and the tests compare
    unranked = unranked_methods(study.benchmark)
    rankings = study_rankings(paired, task)
    every_cost = method_costs(tidy, block_keys(study.benchmark))
    costs = method_costs(
        tidy[tidy["dataset"].isin(ran_on_by_all(tidy, set(paired["method"])))], block_keys(study.benchmark)
    )
    to_best = compare_each(rankings)
    holdout = holdout_fraction(study.benchmark)
    correlation = correlation_phrase(replicate, holdout)
    hierarchical_test = HIERARCHICAL_TEST.format(replicate=replicate, correlation=correlation)
    hierarchical = kept_comparisons(folder, rankings, paired, sample, holdout)
    wall = provenance.get("wall_seconds")
    lines = [
        f"## {provenance['study']} at `{provenance['scale']}`",
        "",
        f"{study.description}",
        "",
        f"Runs: {provenance['grid']}. Training {provenance['train_seconds'] / 3600:.2f} h summed over runs"
        + (f", {wall / 60:.0f} min wall" if wall else "")
        + f"; {provenance['machine']}; commit `{provenance['commit']}`, {provenance['collected']}."
        + "".join(f" {sentence}" for sentence in reproduction_sentences(provenance)),
        "",
        *code_section(folder, root),
        "### Which method to use?",
        "",
        "Generated from the tests below: the hierarchical Bayesian test of each method against each metric's best "
        f"over the datasets and their {replicate}s, and each method's training seconds per run. {rope_sentence(task)}",
        "",
        *recommendation_section(
            rankings,
            costs,
            list(dict.fromkeys([*study.benchmark.get("leave_out", {}), *unranked, *missing])),
            hierarchical,
            HIERARCHICAL_LIMIT,
        ),
        "",
        *not_run_lines,
        "### Cost per dataset",
        "",
        *cost_section(tidy),
        "",
        "### Leaderboard",
        "",
        f"Average rank of each method over the datasets (each method's mean over the {replicate}s where every "
        "method has a result), at the settings validation chose (1 = best), beside its size and cost: the hidden "
        "layers of the network that predicts (a learned depth's posterior mean; a continuous-depth network's, those "
        "of the function it integrates) and the values training fits (every member of an ensemble, a variational "
        "posterior's means and scales), each a mean over its runs on the datasets every ranked method ran on, '–' "
        f"where its runs did not record them; the settings it tried on each {replicate} (its tuning grid; each one "
        f"a run) and its training time per run. The dataset is the unit: {UNIT_REASON[replicate]} (counting them as "
        "blocks would shrink the critical difference with their number).",
        "",
        *leaderboard(rankings, costs, replicate, unranked),
        "",
        *every_dataset_leaderboard(paired, every_cost, task, replicate),
        "### Practically equivalent to the best?",
        "",
        *equivalence_section(hierarchical, f"{hierarchical_test} {rope_sentence(task)}"),
        *equivalence_section(to_best, SIGNED_RANK_TEST),
    ]
    lines += metric_tables(selected, task, replicate)
    lines += ["", "### Per dataset", "", *per_dataset_section(paired, task, holdout, replicate), ""]
    if task == "regression":
        lines += ["### Calibration", "", *calibration_section(selected), ""]
    published = published_section(compared) if study.benchmark.get("published") else [NO_PUBLISHED]
    lines += ["### Published numbers beside ours", "", *published, ""]
    if (folder / FINDINGS_FILE).is_file():
        findings = read_yaml(folder / FINDINGS_FILE)
        lines += ["### Findings (written after looking into the runs)", ""]
        lines += [
            f"- *{subject}* {' '.join(with_values(str(text), folder).split())}" for subject, text in findings.items()
        ]
        lines.append("")
    lines += ["### Settings chosen on validation", ""]
    if choices.empty:
        return [*lines, NO_TUNING, ""]
    lines += [f"| method | dataset | settings ({replicate}s) |", "|---|---|---|"]
    lines += [f"| {row.row} | {row.column} | {row.ours} |" for row in choices.itertuples()]
    return [*lines, ""]


def benchmark_document(results: Path, shown: str = RESULTS.as_posix(), sample: bool = False) -> str:
    """The document of the benchmarks kept under `results` (named `shown` in its text), staleness judged against the
    current checkout's code; stale hierarchical posteriors sampled and kept where `sample`, else an error."""
    root = project_root()
    folders = sorted(path.parent for path in results.glob(f"*/*/{PROVENANCE_FILE}"))
    lines = [
        "# Benchmarks at the papers' scale on a CPU",
        "",
        "Every method of the five works on the tasks they share, on equal footing (the study file says how), run at "
        "the `paper` scale on a 2-core CPU machine. Generated by `python -m bnnrepro.report.benchmark_document` from "
        f"the results kept in `{shown}/` (`python -m bnnrepro.fidelity collect TREE "
        "--studies <benchmark> --scale paper --out docs/benchmark`). Do not edit by hand. The report's benchmark "
        "section shows the same at any scale.",
        "",
        f"**The cell rule** (`src/bnnrepro/artifacts/verdict_rules.py`, as in docs/fidelity.md): {CELL_RULE}",
        "",
    ]
    for folder in folders:
        lines += benchmark_section(folder, root, sample)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    root = project_root()
    (root / DOCUMENT).write_text(benchmark_document(root / RESULTS, sample=True))
    print(root / DOCUMENT)


if __name__ == "__main__":
    main()

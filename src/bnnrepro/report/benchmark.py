"""A benchmark's results (a study of your own with a `benchmark:` block, bnnrepro.pipeline.benchmark_grids):
each method's setting chosen per dataset and replicate by its validation metric, and the published numbers of the
methods that have them beside ours, each cell judged by the fidelity document's rule (bnnrepro.artifacts.verdict_rules).

The validation protocol (`validation_choice`): every run of a benchmark trains on the training rows less a validation
share (`dataset.val_fraction`) and records its validation metrics; for each method, dataset and replicate (a data
split and seed) the setting with the best `select_by` is the method's result there, so no setting is chosen on test
data. The report then treats the chosen runs as one entrant per method (its tables, ranks and figures).

Published numbers (`published_values`) come from the benchmark's `published:` entries: a catalog table of the five works
(`artifact`, its values and the kind of its ±), the values of another work written in the study file (`source`,
`spread`, `values`), or another study file's entry of that `source` (`study`, resolved when the study is read:
bnnrepro.pipeline.published_references); `rows` maps a published row to our method (null: a published method we do not
run, shown for reference), `dataset_prefix` turns a published column into our dataset's name, `negate` turns a reported
log-likelihood into our NLL. The kind of a ± belongs to the work that made the number, not to the table that cites it:
`spread` is one {kind, runs} or one per row. A value may give the source's own runs (`splits`, one per split in the
benchmark's order of splits) in place of `value` and `error`: its cell is then judged paired by split.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bnnrepro.artifacts.registry import catalog_entry
from bnnrepro.artifacts.render import TABLE_COLUMNS, standard_error
from bnnrepro.artifacts.verdict_rules import (
    MARGINS,
    NOT_COMPARABLE,
    CellVerdict,
    PublishedSpread,
    cell_verdict,
    family_differs,
    metric_kind,
    paired_cell_verdict,
    spread_of,
)
from bnnrepro.layout import PAIR_SEPARATOR
from bnnrepro.report.study_summary import REPLICATES, TEST_PREFIX

VALIDATION_PREFIX = "val_"
HIGHER_IS_BETTER = ("accuracy",)
"""Validation metrics (by their name after `val_`) where the larger value is the better setting."""


def _split_slug(hparams: str, keys: set[str]) -> tuple[str, str, str]:
    """(the tuned setting, the dataset's own pairs, the replicate) of a run's slug: 'dropout=0.05', '', 'split=3' of
    'split=3+dropout=0.05' with block keys {'split'}; each 'default' where it has no pair ('' for the dataset's)."""
    parts: dict[str, list[str]] = {"setting": [], "dataset": [], "replicate": []}
    for pair in hparams.split(PAIR_SEPARATOR):
        key = pair.split("=", 1)[0]
        if pair != "default":
            parts["replicate" if key in REPLICATES else "dataset" if key in keys else "setting"].append(pair)
    setting, replicate = (PAIR_SEPARATOR.join(parts[name]) or "default" for name in ("setting", "replicate"))
    return setting, PAIR_SEPARATOR.join(parts["dataset"]), replicate


def block_keys(benchmark: dict) -> set[str]:
    """The short names of the keys a benchmark's block grids vary besides dataset and seed (`split`, `omega`): they
    say which data a run is on, not how the method is set."""
    return {key.rsplit(".", 1)[-1] for grid in benchmark["grids"].values() for key in grid} - {"dataset", "seed"}


def replicate_name(benchmark: dict) -> str:
    """What a block's replicates are: 'split' where a grid runs a dataset's splits (`dataset.split`), else 'seed'
    (fresh draws of a generated problem, or fresh initialisations)."""
    return "split" if any("dataset.split" in grid for grid in benchmark["grids"].values()) else "seed"


def as_blocks(metrics: pd.DataFrame, keys: set[str]) -> pd.DataFrame:
    """The tidy metrics with a `setting` column (the tuned pairs of each run's slug), the block keys other than the
    replicates folded into the dataset's name ('spirals [omega=4]': each is a dataset of its own to rank over) and
    `hparams` the replicate pairs alone ('split=3')."""
    frame = metrics.copy()
    slugs = frame["hparams"].astype(str)
    parsed = {slug: _split_slug(slug, keys) for slug in slugs.unique()}  # a row per metric and run: few slugs
    parts = [parsed[slug] for slug in slugs]
    frame["setting"] = [setting for setting, _, _ in parts]
    names = zip(frame["dataset"], parts, strict=True)
    frame["dataset"] = [f"{name} [{own}]" if own else name for name, (_, own, _) in names]
    frame["hparams"] = [replicate for _, _, replicate in parts]
    return frame


def unranked_methods(benchmark: dict | None) -> dict[str, str]:
    """The benchmark's `unranked` methods, each with why it is trained and tabled but left out of the rankings and
    the tests against the best (say, settings not tuned for the task: ranking them would judge the settings)."""
    return {method: " ".join(str(why).split()) for method, why in (benchmark or {}).get("unranked", {}).items()}


def ranked(selected: pd.DataFrame, benchmark: dict | None) -> pd.DataFrame:
    """The selected runs of the methods a benchmark ranks (all but its `unranked_methods`)."""
    return selected[~selected["method"].isin(unranked_methods(benchmark))]


def method_costs(tidy: pd.DataFrame, keys: set[str] = frozenset(REPLICATES)) -> pd.DataFrame:
    """Per method: the mean over every run (tuning runs included) of its network's `hidden_layers` and trained
    `parameters` (NaN where its runs do not record them: bnnrepro.methods.architecture), `settings`, the most
    settings it tried on one block (dataset, block keys, seed: its tuning grid), and `seconds`, its training time
    per run."""
    blocks = as_blocks(tidy, keys)
    settings = blocks.groupby(["method", "dataset", "hparams", "seed"])["setting"].nunique().groupby("method").max()

    def mean(metric: str) -> pd.Series:
        return tidy[tidy["metric"] == metric].groupby("method")["value"].mean().reindex(settings.index)

    return pd.DataFrame({
        "hidden_layers": mean("hidden_layers"), "parameters": mean("parameters"), "settings": settings,
        "seconds": mean("train_seconds"),
    })  # fmt: skip


def validation_choice(
    metrics: pd.DataFrame, select_by: str, keys: set[str] = frozenset(REPLICATES)
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the metrics of the runs whose setting `select_by` chose for their method and block (dataset, its block keys
    `keys` and seed; `as_blocks`), one entrant per method; the choices, a row per method and dataset: each chosen
    setting with how many replicates chose it, for the methods that had settings to choose between). A method with one
    setting on a block needs no validation metric."""
    frame = as_blocks(metrics, keys)
    group = ["method", "dataset", "hparams", "seed"]
    frame["settings"] = frame.groupby(group)["setting"].transform("nunique")  # how many to choose between
    candidates = frame[frame["metric"] == select_by]
    if (frame["settings"] > 1).any() and candidates.empty:
        raise ValueError(
            f"the benchmark's runs record no {select_by}: give them a validation split (common: "
            "{dataset.val_fraction: 0.2}) or choose a recorded validation metric in benchmark.select_by"
        )
    higher = select_by.removeprefix(VALIDATION_PREFIX) in HIGHER_IS_BETTER
    ordered = candidates.sort_values("value", ascending=not higher, kind="stable", na_position="last")
    single = frame[frame["settings"] == 1].drop_duplicates("run")
    chosen = pd.concat([ordered.drop_duplicates(group), single]).drop_duplicates(group)
    selected = frame[frame["run"].isin(set(chosen["run"]))].drop(columns=["setting", "settings"])
    tuned = chosen[chosen["settings"] > 1]
    counts = tuned.groupby(["method", "dataset", "setting"], sort=False).size().rename("count").reset_index()
    totals = tuned.groupby(["method", "dataset"], sort=False).size()
    choices = [
        {"row": method, "column": dataset, "ours": ", ".join(
            f"{chosen_setting} ({count}/{totals[method, dataset]})"
            for chosen_setting, count in zip(rows["setting"], rows["count"], strict=True)
        )}
        for (method, dataset), rows in counts.groupby(["method", "dataset"], sort=False)
    ]  # fmt: skip
    table = pd.DataFrame(choices, columns=["row", "column", "ours"]).reindex(columns=TABLE_COLUMNS)
    table["standin"] = bool(metrics["standin"].any())
    return selected, table


REGRESSION_KINDS = {"metric_kinds": {"nll": "log-likelihood (density)"}}
"""The metric kinds of a regression benchmark's published metrics beyond their names' words: its NLL is a density's."""

PUBLISHED_COLUMNS = ["source", "row", "method", "dataset", "metric", "value", "error", "kind", "runs", "splits"]
BENCHMARK_COLUMNS = ["published_kind", "reason", "p_holm"]
"""Beyond a table's columns: what the published ± is (its source's kind, or `PER_SPLIT`), why the verdict, and its
p after Holm's correction over the benchmark's tests."""
PER_SPLIT = "per split"
"""The `kind` of a published value given as the source's own runs, one per split (judged paired by split)."""


def _spread(entry: dict, row: str) -> PublishedSpread:
    """A published entry's ± kind for `row`: a catalog table's, or the study file's one `spread` or the row's own."""
    if "artifact" in entry:
        return spread_of(catalog_entry(entry["artifact"])["published"])
    spread = entry.get("spread", {})
    spread = spread if "kind" in spread else spread.get(row)
    if spread is None:
        raise ValueError(
            f"the published entry {entry['source']!r} states no spread for its row {row!r}: give "
            f"spread: {{{row}: {{kind: standard_deviation, runs: 20}}}} (or standard_error, unstated), "
            "or the source's runs per split (`splits`)"
        )
    return PublishedSpread(spread["kind"], spread.get("runs"))


def published_values(entries: list[dict]) -> pd.DataFrame:
    """The published numbers of a benchmark's `published:` entries as a frame of PUBLISHED_COLUMNS (a value given
    per split has its mean, its standard deviation and the kind `PER_SPLIT`)."""
    rows = []
    for entry in entries:
        if "artifact" in entry:
            source, values = (
                entry.get("source", entry["artifact"]),
                catalog_entry(entry["artifact"])["published"]["values"],
            )
        else:
            source, values = entry["source"], entry["values"]
        sign = -1.0 if entry.get("negate") else 1.0
        for value in values:
            if value["row"] not in entry["rows"]:
                continue
            splits = [sign * v for v in value["splits"]] if "splits" in value else None
            spread = PublishedSpread(PER_SPLIT, len(splits)) if splits else _spread(entry, value["row"])
            rows.append({
                "source": source, "row": value["row"], "method": entry["rows"][value["row"]],
                "dataset": entry.get("dataset_prefix", "") + value["column"],
                "metric": value.get("metric", entry["metric"]),
                "value": float(np.mean(splits)) if splits else sign * value["value"],
                "error": float(np.std(splits, ddof=1)) if splits else value["error"],
                "kind": spread.kind, "runs": spread.runs, "splits": splits,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=PUBLISHED_COLUMNS)


def published_comparison(selected: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Our test metric (mean and standard error over the replicates) beside each published value of a method and
    dataset the benchmark ran, judged by the cell rule (not judged on stand-in data, which are not the paper's), its
    *differs* corrected over the benchmark's published-number tests (`family_differs`); a published method we do not
    run is shown with its number alone, for reference."""
    test = selected[selected["metric"].str.startswith(TEST_PREFIX)]
    ours = test.groupby(["method", "dataset", "metric"])["value"].agg(["mean", standard_error, "count"])
    per_split = test.set_index(["method", "dataset", "metric", "hparams"])["value"]
    standin = bool(selected["standin"].any())
    ran = set(selected["method"]) | {None}
    shown = published[published["dataset"].isin(set(selected["dataset"])) & published["method"].isin(ran)]
    rows, verdicts = [], []
    for item in shown.itertuples():
        key = (item.method, item.dataset, TEST_PREFIX + item.metric)
        mean, error, runs = ours.loc[key] if key in ours.index else (float("nan"), float("nan"), 0)
        margin = MARGINS[metric_kind(item.metric, REGRESSION_KINDS)].size(item.value)
        if item.kind == PER_SPLIT:
            verdict = _paired(per_split, key, item.splits, margin)
        else:
            spread = PublishedSpread(item.kind, item.runs)
            verdict = cell_verdict(mean, error, runs, item.value, item.error, spread, margin)
        if standin and runs:
            verdict = CellVerdict(NOT_COMPARABLE, float("nan"), "stand-in data are not the paper's")
        verdicts.append(verdict)
        label = item.method if isinstance(item.method, str) else item.row
        rows.append({
            "row": f"{label} ({item.source})", "column": f"{item.dataset} {item.metric}", "ours": mean,
            "ours_error": error, "n_runs": runs or None, "published": item.value, "published_error": item.error,
            "difference": mean - item.value, "verdict": verdict.label, "p_value": verdict.p_value,
            "margin": margin, "p_equivalence": verdict.p_equivalence, "published_kind": item.kind,
            "reason": verdict.reason,
        })  # fmt: skip
    table = pd.DataFrame(rows).reindex(columns=[*TABLE_COLUMNS, *BENCHMARK_COLUMNS])
    corrected = family_differs(verdicts)
    table["verdict"] = [verdict.label for verdict in corrected]
    table["reason"] = [verdict.reason for verdict in corrected]
    table["p_holm"] = [verdict.p_holm for verdict in corrected]
    table["n_runs"] = table["n_runs"].astype("Int64")
    table["standin"] = standin
    return table


def _paired(ours: pd.Series, key: tuple, published: list[float], margin: float) -> CellVerdict:
    """The paired cell of a source's per-split runs against ours on the splits both have (split k is the k-th)."""
    method, dataset, metric = key
    pairs = [(ours[method, dataset, metric, f"split={k}"], theirs) for k, theirs in enumerate(published)
             if (method, dataset, metric, f"split={k}") in ours.index]  # fmt: skip
    return paired_cell_verdict([o for o, _ in pairs], [t for _, t in pairs], margin)

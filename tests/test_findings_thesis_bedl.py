"""The numbers the BEDL chapter's findings (docs/fidelity/paper/thesis_bedl/findings.yaml) take from the kept runs,
computed again from them (metrics.csv, batches.csv, provenance.json; the claims and Table 5.1 as the project checks
and draws them on these runs): a new batch cannot leave the prose behind (the control: the same check on runs with
other values fails). The training-length grid's means (test log-likelihood, BEDL's test RMSE and training
log-likelihood), its paired changes and split 0's energy run are `[[value]]` fields (values.yaml), the table's numbers
and verdicts `[[cell]]`, `[[numbers]]` and `[[cells]]` fields, computed when the document is made.

Not the kept runs' numbers, so not checked here:
- published numbers (thesis Table 5.1, as the catalog holds them): -0.87 ± 0.10, -0.73 ± 0.04, -2.45 ± 0.08,
  -2.43 ± 0.06, BEDL-Hyper's protein -3.00, the boston standard errors 0.06-0.08, and BEDL-PAC's five standard
  errors above the cap (a published number against the cap);
- settings of the thesis or the study's config: 100, 300 and 1000 epochs, Adam lr 1e-3, batches of 16/32/64/256,
  beta = 100, InvGamma(1, 1) and its mode 0.5, b_0 = 1e-4 and its mode 5e-5, the initial variance 1.2e-4 (log -9),
  splits 0-4, a history every 10 epochs, 50 and 100 units, the margin log 1.1, issue 38; the image tables' 6, 8 and 2
  runs, 40 and 50 epochs, the 96-filter CNN;
- numbers of the data sets and of float32: protein's 41,000 training points, the 2,900 and 16,100 steps, energy's
  std(y) = 10.1 and the cap -0.93 it implies, the overflow above 88.7;
- runs or outputs that are not kept: the batches at a172f79 and 019d6c0 (agreement within 2.4e-6 and 6e-4, equal
  "to the last digit"), the sensitivity grid's first batch (equal "to 5e-6"), the five diverged BEDL-Hyper protein
  runs (their epochs 59-65, 59 and 63-65), the diagnosis from split 0's resumable states (1e-3 per step, median
  variances 1e-3 and 0.011, the exponent 67, four epochs later) and its gradient-clipping control (norm 10, epoch
  59), the per-epoch test histories (0.48 and -1.04 after 500 epochs, -1.10 at 500 and -1.07 at 800, boston's peak
  at epoch 40 of -2.41 and -2.40, "500 or more" and "about 40" epochs), and the image runs' measured epoch times (73,
  49 and 182 s, 30-50 minutes, 3-5 and 2.5 hours);
- the hyperprior grid's own 255 s wall: provenance.json keeps it only summed into the 867b279 batch's wall, so the
  test checks the 95 runs' 52 minutes as that batch's wall less 255 s.
"""

from __future__ import annotations

import pandas as pd
import pytest

from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.registry import catalog_entry
from bnnrepro.artifacts.render import standard_error
from tests.conftest import ROOT
from tests.findings_helpers import PER_SET, KeptFolder, artifact_context, cores, listed, number_word, scaled

KEPT = KeptFolder(ROOT / "docs/fidelity/paper/thesis_bedl")
TABLE = "thesis/table5.1"
HYPERPRIOR_WALL = 255  # s: the hyperprior grid's part of the 867b279 batch's wall (see the module docstring)


def claim_sets(metrics: pd.DataFrame) -> dict[str, dict[str, tuple[str, float]]]:
    """{the claim's first word (BEDL-PAC, BEDL-Hyper): {data set: (status, mean difference)}}, the Table 5.1 claims
    checked on these runs as the project checks them (the context reads a metrics file, and leaves out the
    sensitivity grids' runs)."""
    with artifact_context("thesis_bedl", metrics) as context:
        outcomes = {claim.text: check(claim, context) for claim in claims_of(TABLE)}
    return {text.split()[0]: {m[1]: (m[2], float(m[3])) for m in PER_SET.finditer(outcome.evidence)}
            for text, outcome in outcomes.items()}  # fmt: skip


def with_status(sets: dict[str, tuple[str, float]], status: str) -> list[str]:
    return [name for name, (found, _) in sets.items() if found == status]


def grid_means(metrics: pd.DataFrame) -> pd.Series:
    """The test log-likelihood (-NLL, in the targets' units) of the training-length grid, BEDL and BEDL-PAC on energy
    and boston, averaged over splits 0-4 per (method, dataset, epochs)."""
    grid = metrics["method"].isin(["bedl", "bedl_pac"]) & metrics["dataset"].isin(["uci_energy", "uci_boston"])
    rows = metrics[grid & (metrics["metric"] == "test_nll_original") & metrics["split"].isin(range(5))]
    return -rows.groupby(["method", "dataset", "epochs"])["value"].mean()


def gap_closed(means: pd.Series, method: str, row: str) -> float:
    """The part of the gap between the 100-epoch mean and the published energy cell that 1000 epochs close."""
    values = catalog_entry(TABLE)["published"]["values"]
    target = next(float(v["value"]) for v in values if v["row"] == row and v["column"] == "energy")
    start, end = (means[(method, "uci_energy", epochs)] for epochs in (100, 1000))
    return (end - start) / (target - start)


def pac_at_1000(means: pd.Series, dataset: str) -> str:
    """'behind on energy (-1.12 against -1.08': BEDL-PAC's 1000-epoch test log-likelihood against BEDL's."""
    pac, bedl = (means[(method, dataset, 1000)] for method in ("bedl_pac", "bedl"))
    return f"{'ahead' if pac > bedl else 'behind'} on {dataset.removeprefix('uci_')} ({pac:.2f} against {bedl:.2f}"


def batch_fragments(metrics: pd.DataFrame) -> list[str]:
    """The phrases about the kept batches: their commits, runs, walls and values."""
    provenance = KEPT.provenance()
    batch = KEPT.batches()
    runs = metrics.drop_duplicates("run").set_index("run")
    added, rerun = (int(batch[runs.index[runs["dataset"] == d]].iloc[0]) for d in ("uci_protein", "uci_boston"))
    first, second = provenance["batches"][added], provenance["batches"][rerun]
    hyperprior = int(runs["b_0"].notna().sum())
    values = int((metrics[metrics["run"].map(batch) == rerun]["metric"] != "train_seconds").sum())
    return [
        f"a second batch at {first['commit']} ({first['runs'] - hyperprior} runs, "
        f"{(first['wall_seconds'] - HYPERPRIOR_WALL) / 60:.0f} min wall",
        f"All {second['runs']} runs (the sensitivity grid's too)",
        f"the {second['runs']} runs were trained a third time at {second['commit']} ({second['wall_seconds']:.0f} s "
        f"wall on {cores(second['machine'])} cores): all {values:,} of their values but the timings",
    ]


def hyperprior_fragments(metrics: pd.DataFrame) -> list[str]:
    """The phrases about grid sensitivity_hyperprior's runs (those with a b_0)."""
    rows = metrics[metrics["b_0"].notna()]
    runs = rows.pivot_table(index="run", columns="metric", values="value")
    trained = (runs["selected_epoch"] == rows["epochs"].max()).all() and (rows["health"] == "ok").all()
    log_likelihood = -runs["test_nll_original"]
    return [
        f"on the {number_word(len(runs))} splits",
        f"every run trains all {rows['epochs'].max()} epochs" if trained else "a run stopped early",
        f"test log-likelihood {log_likelihood.mean():.2f} +- {standard_error(log_likelihood):.2f}",
    ]


def expected_fragments(metrics: pd.DataFrame) -> list[str]:
    """The findings' phrases that carry a number of the kept runs, as the runs make them."""
    paper = metrics[metrics["b_0"].isna() & (metrics["epochs"] == 100)]
    splits = paper.drop_duplicates("run").groupby(["method", "dataset"]).size()
    means = grid_means(metrics)
    claims = claim_sets(metrics)
    pac, opposite = claims["BEDL-PAC"], with_status(claims["BEDL-Hyper"], "contradicted")
    return [
        *batch_fragments(metrics),
        f"All {number_word(paper['dataset'].nunique())} data sets",
        f"{splits.max()} splits (protein {splits.xs('uci_protein', level='dataset').max()}:",
        "BEDL-Hyper has no protein cell" if "bedl_hyper@protein" not in set(paper["method"]) else "a BEDL-Hyper cell",
        *hyperprior_fragments(metrics),
        f"longer training closes {gap_closed(means, 'bedl', 'BEDL'):.0%} (BEDL) and "
        f"{gap_closed(means, 'bedl_pac', 'BEDL-PAC'):.0%} (BEDL-PAC) of the gap",
        f"Holds on {listed(with_status(pac, 'holds'))} ({listed(with_status(pac, 'not resolved'))}: not resolved) and "
        f"is contradicted on {listed([f'{s} ({pac[s][1]:.3f})' for s in with_status(pac, 'contradicted')])}.",
        f"BEDL-PAC is still {pac_at_1000(means, 'uci_energy')}) and {pac_at_1000(means, 'uci_boston')},",
        f"The opposite on {number_word(len(opposite))} of {number_word(len(claims['BEDL-Hyper']))} sets "
        f"({listed(opposite)}).",
    ]


def test_every_number_the_findings_take_from_the_runs_is_the_runs() -> None:
    missing = KEPT.missing_fragments(expected_fragments(KEPT.metrics()))
    assert not missing, f"findings.yaml no longer says what the kept runs make: {missing}"


@pytest.mark.parametrize(
    ("method", "dataset", "factor"), [("bedl", "uci_energy", 1.05), ("bedl_pac", "uci_boston", 0.9)]
)
def test_control_runs_with_other_values_fail_the_check(method: str, dataset: str, factor: float) -> None:
    metrics = scaled(KEPT.metrics(), factor, method=method, dataset=dataset, metric=".*_original.*")
    assert KEPT.missing_fragments(expected_fragments(metrics)), "the changed runs pass the check"

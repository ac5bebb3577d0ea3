"""The verdict rules' edge cases, a null table that must not agree, and the checks of the claims on run files, against
a fit and their nulls (all claims' nulls: tests/test_negative_controls.py; the rules' rates by simulation:
tests/test_verdict_rates.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from bnnrepro.artifacts.claims import all_claims, check
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import catalog
from bnnrepro.artifacts.verdict_rules import (
    AGREES,
    CONTRADICTED,
    DIFFERS,
    HOLDS,
    MARGINS,
    NOT_JUDGED,
    NOT_RESOLVED,
    STANDARD_DEVIATION,
    STANDARD_ERROR,
    UNDETERMINED,
    UNSTATED,
    CellVerdict,
    Decision,
    PublishedSpread,
    all_of,
    cell_verdict,
    family_differs,
    holm_adjusted,
    metric_kind,
    paired_cell_verdict,
    paired_comparison,
    repetitions_to_decide,
    spread_of,
)

ROOT = Path(__file__).resolve().parents[1]


def judged_cells() -> list[tuple[str, dict, PublishedSpread, float]]:
    """(artifact, published value, its spread, the equivalence margin) of every catalog cell the rule judges."""
    cells = []
    for entry in catalog()["artifacts"]:
        published = entry.get("published") or {}
        spread = spread_of(published)
        for value in published.get("values", []):
            if spread.why_not_judged(value["error"]) is None:
                margin = MARGINS[metric_kind(value["column"], published)].size(value["value"])
                cells.append((entry["id"], value, spread, margin))
    return cells


def test_every_judged_catalog_table_has_cells_and_every_column_a_metric_kind() -> None:
    assert len(judged_cells()) > 100
    for entry in catalog()["artifacts"]:
        published = entry.get("published") or {}
        for value in published.get("values", []):
            assert metric_kind(value["column"], published) in MARGINS, (entry["id"], value["column"])


def test_a_column_of_no_known_kind_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="metric_kinds"):
        metric_kind("test log-likelihood", {})  # a density's or a class distribution's: the catalog must say


def test_a_wide_result_is_undetermined_and_an_unexplained_error_is_not_judged() -> None:
    spread = PublishedSpread(STANDARD_DEVIATION, 10)
    assert cell_verdict(13.0, 9.5e4, 10, 13.89, 0.5, spread, 2.9).label == UNDETERMINED  # Table 6.2's runaway seed
    assert cell_verdict(13.0, math.nan, 1, 13.89, 0.5, spread, 2.9).label == UNDETERMINED  # one run
    assert cell_verdict(13.0, 0.1, 5, 13.89, math.nan, spread, 2.9).label == NOT_JUDGED
    assert cell_verdict(13.0, 0.1, 5, 13.89, 0.5, PublishedSpread(STANDARD_DEVIATION, None), 2.9).label == NOT_JUDGED


def test_edge_cases_of_the_cell_rule() -> None:
    """A standard deviation over one run is not judged (its Welch p would be NaN); a test without a number is
    undetermined, never agreeing; a published "± 0.00" can agree; an 18% RMSE difference does not agree."""
    one_run = PublishedSpread(STANDARD_DEVIATION, 1)
    assert cell_verdict(1.0, 0.1, 5, 1.0, 0.2, one_run, 0.1).label == NOT_JUDGED
    spread = PublishedSpread(STANDARD_DEVIATION, 5)
    assert cell_verdict(math.inf, math.inf, 5, 1.0, 0.2, spread, 0.1).label == UNDETERMINED
    printed_zero = cell_verdict(-0.031, 0.002, 5, -0.03, 0.0, spread, 0.01)  # thesis Table 3.2's "-0.03 ± 0.00"
    assert printed_zero.label == AGREES, printed_zero
    boston = PublishedSpread(STANDARD_ERROR, 20)  # PBP's boston RMSE 3.01 ± 0.18 (s.e. over 20 splits)
    margin = MARGINS["RMSE"].size(3.01)
    assert cell_verdict(3.55, 0.2, 20, 3.01, 0.18, boston, margin).label != AGREES  # 18% above
    assert cell_verdict(3.01, 0.0, 20, 3.01, 0.0, boston, margin).label == AGREES  # both exact and equal
    assert cell_verdict(3.55, 0.0, 20, 3.01, 0.0, boston, margin).label == DIFFERS  # both exact, outside the margin


def test_an_unstated_kind_of_error_is_judged_under_both_readings() -> None:
    """The deep-ensemble paper's ± (kind never stated, 20 splits): a verdict only where reading it as a standard
    deviation and as a standard error give the same; the runs unstated as well, not judged."""
    unstated, margin = PublishedSpread(UNSTATED, 20), MARGINS["RMSE"].size(6.03)
    both = cell_verdict(6.03, 0.05, 20, 6.03, 0.2, unstated, margin)
    assert both.label == AGREES and "either reading" in both.reason  # s.e. 0.2 or 0.045: both inside ± 0.6
    split = cell_verdict(5.79, 0.14, 20, 6.03, 0.58, unstated, margin)  # concrete's RMSE
    assert cell_verdict(5.79, 0.14, 20, 6.03, 0.58, PublishedSpread(STANDARD_DEVIATION, 20), margin).label == AGREES
    assert cell_verdict(5.79, 0.14, 20, 6.03, 0.58, PublishedSpread(STANDARD_ERROR, 20), margin).label == UNDETERMINED
    assert split.label == UNDETERMINED and "agrees as a standard deviation" in split.reason
    assert cell_verdict(9.2, 0.1, 20, 6.03, 0.58, unstated, margin).label == DIFFERS  # a constant predictor
    assert cell_verdict(6.03, 0.1, 20, 6.03, 0.58, PublishedSpread(UNSTATED, None), margin).label == NOT_JUDGED


def test_a_paired_cell_cancels_the_splits_shared_difficulty() -> None:
    """Per-split results of a source on our splits: a 10% offset hidden by the splits' spread unpaired is found
    paired; our own rerun of the source's numbers agrees; a constant predictor differs."""
    rng = np.random.default_rng(3)
    theirs = rng.normal(3.0, 0.85, 20)  # boston's per-split RMSEs vary by 0.85
    margin = MARGINS["RMSE"].size(float(theirs.mean()))
    offset = theirs * 1.12 + rng.normal(0, 0.05, 20)
    unpaired = cell_verdict(offset.mean(), offset.std(ddof=1) / math.sqrt(20), 20, theirs.mean(),
                            theirs.std(ddof=1), PublishedSpread(STANDARD_DEVIATION, 20), margin)  # fmt: skip
    assert unpaired.label == UNDETERMINED
    assert paired_cell_verdict(offset, theirs, margin).label == DIFFERS
    assert paired_cell_verdict(theirs + rng.normal(0, 0.05, 20), theirs, margin).label == AGREES
    assert paired_cell_verdict(np.full(20, 9.2), theirs, margin).label == DIFFERS
    assert paired_cell_verdict(theirs[:1], theirs[:1], margin).label == UNDETERMINED  # one pair


def test_a_family_of_published_number_tests_differs_only_after_holm() -> None:
    """40 cells: p = 0.006 differs alone and not among 40; p = 1e-6 differs either way; agrees is kept."""
    borderline, clear = CellVerdict(DIFFERS, 0.006, "Welch"), CellVerdict(DIFFERS, 1e-6, "Welch")
    agrees, untested = CellVerdict(AGREES, 0.5, "TOST"), CellVerdict(NOT_JUDGED, math.nan, "no error")
    corrected = family_differs([borderline, clear, agrees, untested] + [CellVerdict(UNDETERMINED, 0.5, "")] * 37)
    assert [v.label for v in corrected[:4]] == [UNDETERMINED, DIFFERS, AGREES, NOT_JUDGED]
    assert "Holm over 40" in corrected[0].reason
    assert family_differs([borderline])[0].label == DIFFERS  # a family of one: no correction


def test_holm_adjusted_p_values_are_statsmodels_and_reject_as_it_does() -> None:
    """The reference library on the same inputs: ties, values adjusted past 1, one test, random families."""
    rng = np.random.default_rng(4)
    families = [[0.01, 0.04, 0.03, 0.005], [0.02, 0.02, 0.5, 0.9, 0.02], [0.3], rng.uniform(0, 0.1, 40)]
    for p in [*families, rng.uniform(0, 1, 7) ** 3]:
        rejected, reference, _, _ = multipletests(p, alpha=0.05, method="holm")
        np.testing.assert_allclose(holm_adjusted(p), reference, rtol=1e-15)
        np.testing.assert_array_equal(holm_adjusted(p) <= 0.05, rejected)
    assert holm_adjusted([]).shape == (0,)


def test_a_paired_comparison_holds_is_contradicted_or_not_resolved() -> None:
    rng = np.random.default_rng(1)
    base = pd.Series(rng.normal(0, 1, 10))
    noise = pd.Series(rng.normal(0, 0.1, 10))
    assert paired_comparison(base + 1 + noise, base, "greater").status == HOLDS
    assert paired_comparison(base - 1 + noise, base, "greater").status == CONTRADICTED
    assert paired_comparison(base + noise, base, "greater").status == NOT_RESOLVED
    assert paired_comparison(base, base, "less").status == NOT_RESOLVED  # a constant predictor: no difference
    assert paired_comparison(base.iloc[:1] + 1, base.iloc[:1], "greater").status == NOT_RESOLVED  # one repetition


@pytest.mark.parametrize("effect_size", [0.3, 0.8, 1.5])
def test_the_repetitions_to_decide_a_comparison_give_it_the_stated_power(effect_size: float) -> None:
    """At `repetitions_to_decide`'s count, normal differences of that size (in units of their spread) are decided by
    the paired rule in about 80% of 2,000 draws (within three binomial standard errors); at a third of that count,
    clearly less (the control: a count that decides whatever the size would pass the first check alone)."""
    needed = repetitions_to_decide(effect_size)
    rng = np.random.default_rng(7)
    for n, low, high in ((needed, 0.8 - 0.027, 0.8 + 0.027 + 0.05), (max(needed // 3, 2), 0.0, 0.6)):
        draws = rng.normal(effect_size, 1.0, (2000, n))
        decided = np.mean([paired_comparison(pd.Series(d), pd.Series(np.zeros(n)), "greater").status == HOLDS
                           for d in draws])  # fmt: skip
        assert low <= decided <= high, (effect_size, n, decided)


def test_a_not_resolved_comparison_says_which_way_more_repetitions_would_decide_it() -> None:
    """The thesis' mean-path MSE of Fig. 6.7 (hybrid against the black box, five seeds): the observed difference is
    against the claim, so more seeds would contradict it, not make it hold; the reversed claim would be shown; a
    decided comparison says nothing of more repetitions."""
    hybrid, baseline = pd.Series([394, 236, 18.3, 57, 21.5]), pd.Series([14.4, 16.6, 27.5, 23.2, 22.5])
    against, toward = paired_comparison(hybrid, baseline, "less"), paired_comparison(baseline, hybrid, "less")
    assert against.status == toward.status == NOT_RESOLVED
    assert against.describe().endswith("about 14 repetitions would contradict it (80% power)")
    assert toward.describe().endswith("about 14 repetitions would show it holding (80% power)")
    assert "repetitions would" not in paired_comparison(hybrid, baseline - 1000, "greater").describe()


def test_identical_paired_differences_are_decided_by_their_count() -> None:
    """Equal differences have no spread for a t-test: the signs decide, so two repetitions cannot (p = 0.25) and
    five can (p = 0.031); the p-value is never 0."""
    two, five = pd.Series([0.0, 0.0]), pd.Series([0.0] * 5)
    assert paired_comparison(two + 0.2, two, "greater").status == NOT_RESOLVED
    assert paired_comparison(two + 0.2, two, "greater").p_value == pytest.approx(0.25)
    assert paired_comparison(five + 0.2, five, "greater").status == HOLDS
    assert paired_comparison(five + 0.2, five, "greater").p_value == pytest.approx(1 / 32)
    assert paired_comparison(five - 0.2, five, "greater").status == CONTRADICTED


def test_a_family_holds_when_each_holds_and_is_contradicted_only_after_holm() -> None:
    holds, borderline = Decision(HOLDS, 0.01, 0.99), Decision(CONTRADICTED, 0.99, 0.0497)
    assert all_of([holds] * 3).status == HOLDS
    assert all_of([holds, Decision(NOT_RESOLVED, 0.2, 0.8)]).status == NOT_RESOLVED
    assert all_of([borderline]).status == CONTRADICTED  # one comparison: no correction
    assert all_of([borderline] + [Decision(NOT_RESOLVED, 0.5, 0.5)] * 67).status == NOT_RESOLVED  # 1 of 68
    assert all_of([Decision(CONTRADICTED, 1.0, 1e-5)] + [holds] * 67).contradicting == (0,)
    assert all_of([]).status == NOT_RESOLVED


# --- negative control of the cell rule (the claims': tests/test_negative_controls.py) --------------------------


def test_a_null_table_does_not_agree() -> None:
    """An untrained model's numbers (a constant far from the published values) differ from every judged cell."""
    rng = np.random.default_rng(2)
    for _, value, spread, margin in judged_cells():
        far = value["value"] + 10 * abs(value["value"]) + 10
        ours_se = abs(far) * 0.01 + rng.uniform(0, 1e-3)
        verdict = cell_verdict(far, ours_se, 5, value["value"], value["error"], spread, margin)
        assert verdict.label != AGREES, value


# --- negative controls of the claims checked on run files ---------------------------------------------------------


def toy_run_files(tmp_path: Path, method: str, predict) -> list[Path]:
    """The 1-D toy's evaluation file of `method`'s smoke run: 40 points of a curve with a dip, and 50 posterior
    predictive draws of `predict(x_grid, y_train)`."""
    from bnnrepro.pipeline.studies import load_study

    x = np.linspace(-1, 1, 40)[:, None]
    y = np.sin(3 * x) - 2 * np.exp(-(((x + 0.6) / 0.08) ** 2))
    grid = np.linspace(-1, 1, 200)[:, None]
    run = next(r for r in load_study("sdebnn_toy").runs("smoke") if r.method == method)
    path = tmp_path / run.file("eval/toy_paths.npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    draws = np.repeat(predict(grid, x, y)[None, :, 0], 50, axis=0)
    np.savez(path, x_train=x, y_train=y, x_grid=grid, posterior_predictive=draws)
    return [path]


@pytest.mark.parametrize("artifact_id,method", [("sdebnn/fig2", "sdebnn"), ("sdebnn_ws/fig4", "ws_sdebnn")])
def test_the_toy_fit_claim_holds_on_a_fit_and_not_on_a_constant_predictor(
    artifact_id: str, method: str, tmp_path: Path
) -> None:
    (claim,) = [c for c in all_claims() if c.artifact_id == artifact_id]

    def outcome(predict, folder: str):
        files = toy_run_files(tmp_path / folder, method, predict)
        return check(claim, ArtifactContext("sdebnn_toy", "smoke", run_files=files))

    fitted = outcome(lambda grid, x, y: np.interp(grid[:, 0], x[:, 0], y[:, 0])[:, None], "fit")
    constant = outcome(lambda grid, x, y: np.full_like(grid, y.mean()), "constant")
    smooth = outcome(lambda grid, x, y: np.sin(3 * grid), "smooth")  # misses the dip, fits the rest
    assert fitted.holds is True
    assert constant.holds is False, constant.evidence  # errors everywhere: the dip is no worse than the rest
    assert smooth.holds is False, smooth.evidence


def test_the_toy_fit_claim_leaves_out_the_runs_of_a_sensitivity_grid(tmp_path: Path) -> None:
    """At paper scale the workshop model's only finished run may be that of grid sensitivity_clipping (a setting
    the paper does not state): the claim is about the paper's settings, so it is not checked on that run."""
    from bnnrepro.pipeline.studies import load_study

    (claim,) = [c for c in all_claims() if c.artifact_id == "sdebnn_ws/fig4"]
    study = load_study("sdebnn_toy")
    (clipped,) = [r for r in study.runs("paper") if r.method == "ws_sdebnn" and r not in study.runs("paper", False)]
    path = tmp_path / clipped.file("eval/toy_paths.npz")
    x, grid = np.linspace(-1, 1, 40)[:, None], np.linspace(-1, 1, 200)[:, None]
    y = np.sin(3 * x)
    path.parent.mkdir(parents=True)
    np.savez(path, x_train=x, y_train=y, x_grid=grid, posterior_predictive=np.sin(3 * grid)[None, :, 0])
    outcome = check(claim, ArtifactContext("sdebnn_toy", "paper", run_files=[path]))
    assert outcome.holds is None, outcome.evidence
    assert check(claim, ArtifactContext("sdebnn_toy", "smoke", run_files=toy_run_files(tmp_path, "ws_sdebnn",
        lambda grid, x, y: np.interp(grid[:, 0], x[:, 0], y[:, 0])[:, None]))).holds  # fmt: skip


def gradient_variance_files(tmp_path: Path, ratios: list[float]) -> list[Path]:
    """Evaluation files of the latent gradient-variance runs at smoke scale, full MC and drift-only variances at
    `ratios` times STL's (one per run)."""
    from bnnrepro.pipeline.studies import load_study

    runs = [r for r in load_study("sdebnn_latent").runs("smoke") if r.method == "latent_gradvar"]
    files = []
    for run, ratio in zip(runs, ratios, strict=False):
        path = tmp_path / run.file("eval/gradient_variance.npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, estimators=np.array(["stl", "fmc", "ckl"]), variance=np.array([1.0, ratio, ratio]),
                 iterations=np.array(3))  # fmt: skip
        files.append(path)
    return files


def test_roughly_4_states_its_interval_and_no_reduction_does_not_hold(tmp_path: Path) -> None:
    (claim,) = [c for c in all_claims() if c.artifact_id == "sdebnn/fig4"]

    def holds(ratio: float, folder: str) -> bool | None:
        context = ArtifactContext(
            "sdebnn_latent", "smoke", run_files=gradient_variance_files(tmp_path / folder, [ratio])
        )
        return check(claim, context).holds

    assert holds(4.0, "four") is True and holds(3.2, "three") is True
    assert holds(2.1, "two") is False  # the committed paper run's 2.1-2.2x: not 'roughly 4'
    assert holds(1.0, "null") is False  # no reduction at all (the same estimator three times)

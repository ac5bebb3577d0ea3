"""Negative controls: every caption claim's check, run on a null result of its quantity (an untrained model, a constant
predictor, methods that do not differ, or the committed paper-scale metrics with the methods made equal and the
settings shuffled away), must not hold. The registry lists a null for every registered claim; a claim added without
one fails the first test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnnrepro.artifacts.claims import all_claims, check
from bnnrepro.artifacts.claims.udn_uci import untrained_depth
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.pipeline.studies import load_study
from tests.test_thesis_ral_artifacts import claim_context as ral_metrics
from tests.test_verdict_rules import gradient_variance_files, toy_run_files

ROOT = Path(__file__).resolve().parents[1]
Null = Callable[[Path], ArtifactContext]


def committed(study: str, tmp_path: Path, change: Callable[[pd.DataFrame], pd.DataFrame]) -> ArtifactContext:
    """The study's committed paper-scale metrics, changed by `change`."""
    metrics = change(pd.read_csv(ROOT / "docs" / "fidelity" / "paper" / study / "metrics.csv"))
    path = tmp_path / f"{study}_null.csv"
    metrics.to_csv(path, index=False)
    return ArtifactContext(study, "paper", path)


def methods_equal(metrics: pd.DataFrame) -> pd.DataFrame:
    """Every method given the same value per (metric, dataset, seed, split), drawn from a shuffle of the metric's
    values: a constant predictor shared by all methods, with no relation left between a setting and the results."""
    rng = np.random.default_rng(0)
    keys = [c for c in ("metric", "dataset", "seed", "split") if c in metrics]
    shuffled = metrics.groupby("metric")["value"].transform(lambda v: rng.permutation(v.to_numpy()))
    return metrics.assign(value=shuffled.groupby([metrics[c] for c in keys]).transform("first"))


def changed_method(method: str, metric: str, value: Callable[[pd.Series], pd.Series]) -> Callable:
    def change(metrics: pd.DataFrame) -> pd.DataFrame:
        rows = (metrics["method"] == method) & (metrics["metric"] == metric)
        metrics.loc[rows, "value"] = value(metrics.loc[rows, "value"])
        return metrics

    return change


def equal_metrics(study: str) -> Null:
    return lambda tmp_path: committed(study, tmp_path, methods_equal)


def run_files(tmp_path: Path, study: str, scale: str, artifact_id: str, content: Callable) -> ArtifactContext:
    """The run files an artifact reads (its declaration's run file of its methods' runs at `scale`), each written
    with `content(run)`: a dict of arrays (.npz) or a JSON object."""
    drawn = implementation(artifact_id)
    files = []
    for run in load_study(study).runs(scale):
        if run.method not in drawn.methods or (drawn.datasets and run.dataset not in drawn.datasets):
            continue
        path = tmp_path / run.file(drawn.run_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content(run)
        if path.suffix == ".npz":
            np.savez(path, **data)
        else:
            path.write_text(json.dumps(data))
        files.append(path)
    return ArtifactContext(study, scale, run_files=files)


def constant_forecast(run) -> dict[str, np.ndarray]:
    """A forecast that stays at the start state with almost no spread, whatever the model (an untrained drift)."""
    dims = 2 if run.dataset == "lotka_volterra" else 3
    steps = 201 if run.dataset == "lotka_volterra" else 1000
    observed = np.sin(np.arange(steps)[:, None] * 0.05 + np.arange(dims))
    paths = np.repeat(observed[:1][None], 4, axis=0).repeat(steps, axis=1) + 1e-6 * np.arange(4)[:, None, None]
    return {"times": np.arange(steps) * 0.01, "observed": observed, "paths": paths}


def same_regression(run) -> dict[str, np.ndarray]:
    """Every method's (and HMC's) posterior predictive the same draws: no method closer to HMC than another."""
    x = np.linspace(-2, 2, 50)[:, None]
    draws = np.random.default_rng(0).normal(size=(20, 50))
    return {"x_grid": x, "posterior_predictive": draws, "x_train": x[:5], "y_train": x[:5], "y_grid": x}


def same_entropy(run) -> dict[str, np.ndarray]:
    axis = np.linspace(-20, 20, 21)
    return {"grid_axis": axis, "entropy": np.full((21, 21), 0.5), "x_train": np.zeros((4, 2)), "y_train": np.zeros(4)}


def flat_history(x: str) -> Callable:
    """A run result whose test error never changes, the same for every method (nothing learned)."""
    return lambda run: {"history": [{x: step, "test_error": 50.0} for step in (1, 2, 3)]}


def untrained_depths(run) -> dict:
    """Fig. 7's runs: E_q[l] stays at each initialisation's own start (nothing learned)."""
    from bnnrepro.artifacts.udn_images import depth_log_pmf
    from bnnrepro.inference.depth_posteriors import expected_depth

    rate = float(load_study("udn_images").variant_overrides(run.method)["method.depth_posterior.initial_rate"])
    start = expected_depth(depth_log_pmf(rate))
    return {"history": [{"epoch": epoch, "expected_depth": start} for epoch in (1, 2, 3)]}


def untrained_cifar(tmp_path: Path) -> ArtifactContext:
    """UDN CIFAR runs that learned nothing: chance accuracy (1/2 on the pairs, 1/10 on CIFAR-10), every depth at the
    posterior's start, every network alike."""
    rows = []
    for seed in range(3):
        for method, chance in (("udn@deer_car", 0.5), ("udn@cat_dog", 0.5), ("udn", 0.1), ("finite_15", 0.1),
                               ("finite_30", 0.1)):  # fmt: skip
            run = {"study": "udn_images", "run": f"{method}/cifar10/{seed}", "method": method, "dataset": "cifar10",
                   "seed": seed, "standin": False}  # fmt: skip
            rows += [{**run, "metric": "test_accuracy", "value": chance + 0.001 * seed},
                     {**run, "metric": "last_expected_depth", "value": 1.94 + 0.001 * seed}]  # fmt: skip
    path = tmp_path / "udn_images.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return ArtifactContext("udn_images", "paper", path)


NULLS: dict[str, Null] = {
    # committed paper-scale metrics, the methods made equal
    **dict.fromkeys(
        (
            "udn_best_at_every_omega",
            "accuracy_falls_with_omega",
            "udn_deepens_with_omega",
            "udn_best_on_average",
            "dun_beats_each_finite_network",
            "deep_networks_sensitive_to_learning_rate",
        ),
        equal_metrics("udn_spirals"),
    ),
    "udn_deeper_on_hard_uci": equal_metrics("udn_uci"),
    **dict.fromkeys(("pac_improves_bedl", "hyperprior_worse_than_bedl"), equal_metrics("thesis_bedl")),
    **dict.fromkeys(
        ("hybrids_beat_black_boxes", "pac_restricts_black_box", "pac_improves_hybrids", "full_model_best_on_mocap"),
        equal_metrics("thesis_bnsde"),
    ),  # fmt: skip
    **dict.fromkeys(
        ("gradient_estimators_fit_the_gaussian", "gradient_estimators_best_on_the_funnel"),
        equal_metrics("repulsive_toy"),
    ),  # fmt: skip
    # non-inferiority and levels: the claimed method untrained
    "vbp_competitive_on_uci": lambda tmp: committed(
        "thesis_vbp", tmp, changed_method("vbp", "test_nll_original", lambda v: v + 1.0)
    ),  # a nat worse
    "udn_competitive_on_uci": lambda tmp: committed(
        "udn_uci", tmp, changed_method("udn", "test_rmse_original", lambda v: 2 * v)
    ),
    "udn_shallow_on_easy_uci": lambda tmp: committed(
        "udn_uci", tmp, changed_method("udn", "expected_depth", lambda v: v * 0 + untrained_depth())
    ),
    # run files: constant predictors, methods that do not differ
    **{
        name: (lambda tmp, a=artifact: run_files(tmp, "thesis_bnsde", "paper", a, constant_forecast))
        for name, artifact in (
            ("hybrid_improves_lotka_volterra", "thesis/fig6.3"),
            ("hybrid_band_holds_the_data_longer", "thesis/fig6.5"),
            ("hybrid_tracks_200_steps", "thesis/fig6.7"),
            ("hybrid_band_covers_1000_steps", "thesis/fig6.8"),
        )
    },  # fmt: skip
    "sdebnn_posterior_fits_the_data": lambda tmp: ArtifactContext(
        "sdebnn_toy", "smoke", run_files=toy_run_files(tmp, "sdebnn", lambda g, x, y: np.full_like(g, y.mean()))
    ),
    "workshop_posterior_fits_the_data": lambda tmp: ArtifactContext(
        "sdebnn_toy", "smoke", run_files=toy_run_files(tmp, "ws_sdebnn", lambda g, x, y: np.full_like(g, y.mean()))
    ),
    "stl_reduces_gradient_variance": lambda tmp: ArtifactContext(
        "sdebnn_latent", "smoke", run_files=gradient_variance_files(tmp, [1.0])
    ),
    "function_space_closer_to_hmc": lambda tmp: run_files(
        tmp, "repulsive_toy", "paper", "repulsive/fig1", same_regression
    ),
    "function_space_uncertain_far_from_data": lambda tmp: run_files(
        tmp, "repulsive_toy", "paper", "repulsive/fig3", same_entropy
    ),
    **dict.fromkeys(
        ("ral_lowest_error", "random_weak_on_mnist", "thinning_helps_maxent_short_of_ral"),
        lambda tmp: ral_metrics(tmp, {}),
    ),  # every acquisition at the same error
    "clt_predictors_converge_faster": lambda tmp: run_files(
        tmp, "thesis_ral", "paper", "thesis/fig4.5", flat_history("epoch")
    ),
    "ral_best_and_closed_form_maxent_better": lambda tmp: run_files(
        tmp, "thesis_ral", "paper", "thesis/fig4.6", flat_history("labels")
    ),
    **dict.fromkeys(
        ("udn_deepens_with_task_difficulty", "udn_subset_accuracies", "udn_best_on_cifar"), untrained_cifar
    ),  # fmt: skip
    "udn_initialisations_converge": lambda tmp: run_files(tmp, "udn_images", "paper", "udn/fig7", untrained_depths),
}
"""{claim check's function name: a null result of its quantity}."""
NO_NULL = {"theorem_bound_holds": "exact, from the Poisson quantiles alone: no run, so nothing to null"}


def test_every_claim_has_a_negative_control() -> None:
    names = {c.check.__name__ for c in all_claims()}
    assert names - set(NULLS) - set(NO_NULL) == set(), "claims without a null in NULLS"
    assert set(NULLS) <= names, "NULLS names a check that no claim has"


@pytest.mark.parametrize("name", sorted(NULLS))
def test_no_claim_holds_on_its_null(name: str, tmp_path: Path) -> None:
    (claim,) = [c for c in all_claims() if c.check.__name__ == name]
    outcome = check(claim, NULLS[name](tmp_path))
    assert outcome.checked, f"the null did not reach the check: {outcome.evidence}"
    assert outcome.holds is not True, outcome.evidence


def test_fig46s_claim_needs_ral_ahead_of_random_acquisition(tmp_path: Path) -> None:
    """The thesis' own Table 4.1 has Random ahead of Maxent and BALD on FashionMNIST: a RAL whose policy learned
    nothing (it acquires as random does) would be ahead of every curve of Fig. 4.6, so the claim compares it with the
    random-acquisition control too; a RAL ahead of Random holds."""
    (claim,) = [c for c in all_claims() if c.check.__name__ == "ral_best_and_closed_form_maxent_better"]
    areas = {"drop_maxent": 34.0, "drop_bald": 33.0, "maxent": 31.0, "bald": 31.5, "random": 28.7}

    def labelling(ral: float) -> Callable:
        def content(run) -> dict:
            level = ral if run.method == "ral" else areas[run.method]
            noise = np.random.default_rng([run.seed, *map(ord, run.method)]).normal(0.0, 0.3)  # per run
            return {"history": [{"labels": n, "test_error": level + noise} for n in (50, 200, 400)]}

        return content

    as_random = check(claim, run_files(tmp_path / "random", "thesis_ral", "paper", "thesis/fig4.6", labelling(28.7)))
    assert as_random.checked and as_random.holds is not True, as_random.evidence
    learned = check(claim, run_files(tmp_path / "learned", "thesis_ral", "paper", "thesis/fig4.6", labelling(26.0)))
    assert learned.holds is True, learned.evidence

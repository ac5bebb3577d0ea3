"""Thesis chapter 4 (RAL, Haußmann 2021): Tables 4.1 and 4.2 on a constructed tidy metrics table (their mean ± sample
standard deviation, their labels against the catalog's published cells, the labelling runs apart from Fig. 4.6's),
Figs. 4.3-4.6 on constructed run histories, and Tables 4.3-4.5 against hand-computed shapes and parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import pyplot as plt

from bnnrepro.artifacts import thesis_ral as ral
from bnnrepro.artifacts import thesis_ral_architectures as architectures
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import catalog_entry, implementation
from bnnrepro.layout import RUN_METRICS
from bnnrepro.pipeline.studies import Run, load_study
from bnnrepro.train_configs import SCALES

STUDY = load_study(ral.STUDY)
STUDY_INDEX = {method: index for index, method in enumerate(sorted(STUDY.method_variants))}
UNCERTAINTY_ERROR = 90.0
"""The error of every run at Fig. 4.6's lr 1e-3: far from the labelling runs', so that a mix shows."""


def published_cells(artifact_id: str) -> set[tuple[str, str]]:
    return {(v["row"], v["column"]) for v in catalog_entry(artifact_id)["published"]["values"]}


def cells(table: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(row.row, row.column): row for row in table.itertuples(index=False)}


def is_uncertainty_run(run: Run) -> bool:
    return dict(run.hparams)["optim.lr"] == 0.001


def final_error(run: Run) -> float:
    """A labelling run's constructed Final Error: distinct per method, data set and seed."""
    if is_uncertainty_run(run):
        return UNCERTAINTY_ERROR
    return 10.0 + STUDY_INDEX[run.method] + 3.0 * run.seed**2 + len(run.dataset)


def labelling_runs(scale: str = "paper") -> list[Run]:
    return [run for run in STUDY.runs(scale) if "initial_labels" in run.hparam_slug or "@cifar10" in run.method]


@pytest.fixture(scope="module")
def metrics_context(tmp_path_factory: pytest.TempPathFactory) -> ArtifactContext:
    """The tidy metrics (bnnrepro.aggregate) of the paper-scale labelling runs: Average Error = Final Error + 5."""
    rows = []
    for run in labelling_runs():
        base = {"study": STUDY.name, "run": run.id, "method": run.method, "dataset": run.dataset,
                "hparams": run.hparam_slug, "seed": run.seed, "standin": False,
                **{ral.short_name(key): value for key, value in run.hparams}}  # fmt: skip
        rows += [{**base, "metric": "final_error", "value": final_error(run)},
                 {**base, "metric": "average_error", "value": final_error(run) + 5.0}]  # fmt: skip
    path = tmp_path_factory.mktemp("ral_metrics") / "metrics.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return ArtifactContext(STUDY.name, "paper", path)


def test_table41_is_the_mean_and_sample_std_over_seeds_of_each_published_cell(metrics_context) -> None:
    table = ral.labelling_results(metrics_context)
    got = cells(table)
    assert set(got) == published_cells("thesis/table4.1")
    errors = np.array([final_error(run) for run in labelling_runs() if run.method == "ral@cifar10"])
    cell = got["RAL", "CIFAR-10 final error"]
    assert cell.ours == pytest.approx(errors.mean()) and cell.n_runs == 5
    assert cell.ours_error == pytest.approx(np.std(errors, ddof=1))
    assert got["RAL", "CIFAR-10 average error"].ours == pytest.approx(errors.mean() + 5.0)
    assert list(dict.fromkeys(table["row"])) == ["Random", "Maxent", "BALD", "RAL"]


def test_table41_and_table42_leave_out_fig46s_runs_at_lr_1e_3(metrics_context) -> None:
    table41, table42 = cells(ral.labelling_results(metrics_context)), cells(ral.ablation_results(metrics_context))
    expected = 10.0 + STUDY_INDEX["maxent"] + 3.0 * np.mean(np.arange(5) ** 2) + len("fashion_mnist")
    for cell in (table41["Maxent", "FashionMNIST final error"], table42["Maxent", "final error"]):
        assert cell.ours == pytest.approx(expected) and cell.n_runs == 5  # the five lr 1e-4 runs, no 90s
    assert table42["RAL", "average error"].ours == pytest.approx(table41["RAL", "FashionMNIST average error"].ours)
    assert all(cell.ours < UNCERTAINTY_ERROR for cell in table41.values())


def test_table42_has_the_published_rows_and_columns(metrics_context) -> None:
    table = ral.ablation_results(metrics_context)
    assert set(cells(table)) == published_cells("thesis/table4.2")
    assert list(dict.fromkeys(table["row"])) == list(ral.ABLATION_LABELS.values())
    reinit = [final_error(run) for run in labelling_runs() if run.method == "ral_reinit"]
    assert cells(table)["Reinit RAL", "final error"].ours_error == pytest.approx(np.std(reinit, ddof=1))


# --- the figures on constructed histories ----------------------------------------------------------------------------


def history(run: Run) -> list[dict]:
    """A constructed metrics.json history: per round of 5 labels (labelling runs) or per epoch (Fig. 4.5's runs)."""
    hparams = dict(run.hparams)
    if "train.eval_every" in hparams:
        return [{"epoch": epoch, "test_accuracy": 0.5 + 0.04 * epoch + 0.01 * run.seed}
                for epoch in range(1, hparams["train.epochs"] + 1)]  # fmt: skip
    initial = hparams.get("method.initial_labels", 50)
    offset = UNCERTAINTY_ERROR if is_uncertainty_run(run) else STUDY_INDEX[run.method]
    return [{"round": index, "labels": labels, "test_error": offset + 100.0 / labels + run.seed * (index % 3)}
            for index, labels in enumerate(range(initial, hparams["method.budget"] + 1, 5))]  # fmt: skip


def figure_context(root: Path, artifact_id: str, scale: str) -> ArtifactContext:
    """The metrics.json of each run at `scale` that the figure reads (as the workflow selects them)."""
    declared = implementation(artifact_id)
    files = []
    for run in STUDY.runs(scale):
        if run.method in declared.methods and (not declared.datasets or run.dataset in declared.datasets):
            path = root / run.file(RUN_METRICS)
            if not path.exists():
                path.parent.mkdir(parents=True)
                path.write_text(json.dumps({"history": history(run), "standin": True}))
            files.append(path)
    return ArtifactContext(STUDY.name, scale, run_files=files)


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ral_runs")


def curve(ax, label: str) -> np.ndarray:
    """The y values of the line of `label` (its legend entry starts with it)."""
    (line,) = [line for line in ax.get_lines() if line.get_label().startswith(f"{label} (")]
    return line.get_ydata()


def test_fig43_draws_smoothed_means_of_the_labelling_runs_a_panel_per_data_set(runs_root) -> None:
    fig = ral.labelling_curves(figure_context(runs_root, "thesis/fig4.3", "default"))
    assert [ax.get_title() for ax in fig.axes] == ["MNIST", "FashionMNIST", "CIFAR-10"]
    runs = [run for run in labelling_runs("default") if run.method == "maxent" and run.dataset == "fashion_mnist"]
    runs = [run for run in runs if not is_uncertainty_run(run)]
    means = pd.Series(np.mean([[r["test_error"] for r in history(run)] for run in runs], axis=0))
    smoothed = means.rolling(ral.SMOOTHING_WINDOW, center=True, min_periods=1).mean()
    np.testing.assert_allclose(curve(fig.axes[1], "Maxent"), smoothed)
    assert len(fig.axes[2].get_lines()) == 4
    assert {line.get_label() for line in fig.axes[0].get_lines()} >= {"Maxent (1 run)", "RAL (1 run)"}  # one seed
    plt.close(fig)


def test_fig44_and_fig46_separate_the_labelling_runs_from_fig46s(runs_root) -> None:
    fig = ral.ablation_curves(figure_context(runs_root, "thesis/fig4.4", "default"))
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 3]
    assert curve(fig.axes[0], "Maxent").max() < UNCERTAINTY_ERROR
    plt.close(fig)
    fig = ral.uncertainty_curves(figure_context(runs_root, "thesis/fig4.6", "default"))
    (ax,) = fig.axes
    assert len(ax.get_lines()) == len(ral.UNCERTAINTY_LABELS)
    assert curve(ax, "CLT-BNN-Maxent").min() > UNCERTAINTY_ERROR
    plt.close(fig)


def test_fig45_is_the_test_error_per_epoch(runs_root) -> None:
    fig = ral.convergence_curves(figure_context(runs_root, "thesis/fig4.5", "default"))
    (ax,) = fig.axes
    epochs = np.arange(1, 11)
    expected = 100 * (1 - (0.5 + 0.04 * epochs))  # seed 0's, the one seed of the default scale
    np.testing.assert_allclose(curve(ax, "Drop-BNN-Prob"), expected)
    assert ax.get_xlabel() == "epoch"
    plt.close(fig)


@pytest.mark.parametrize("artifact_id", ["thesis/fig4.3", "thesis/fig4.4", "thesis/fig4.5", "thesis/fig4.6"])
def test_each_figure_draws_the_few_smoke_runs_and_raises_without_runs(runs_root, artifact_id: str) -> None:
    draw = implementation(artifact_id).draw
    plt.close(draw(figure_context(runs_root, artifact_id, "smoke")))
    with pytest.raises(ValueError, match="no run results"):
        draw(ArtifactContext(STUDY.name, "smoke", run_files=[]))


@pytest.mark.parametrize("scale", SCALES)
def test_each_note_names_its_scale_and_the_spread(scale: str) -> None:
    for artifact_id in ("thesis/table4.1", "thesis/table4.2", "thesis/fig4.3", "thesis/fig4.4", "thesis/fig4.6",
                        "thesis/fig4.5"):  # fmt: skip
        note = implementation(artifact_id).note(scale)
        assert note.startswith(f"{scale} scale") and "one standard deviation over seeds" in note
    assert f"over {ral.SMOOTHING_WINDOW} rounds" in implementation("thesis/fig4.3").note(scale)
    assert "first" in implementation("thesis/fig4.5").note(scale)


# --- the architectures -----------------------------------------------------------------------------------------------

# (out * in * k * k + out) per convolution, (out * in + out) per linear layer
MNIST_LAYERS = [20 * 25 + 20, 50 * 20 * 25 + 50, 800 * 500 + 500, 500 * 10 + 10]
CIFAR_LAYERS = [192 * 3 * 25 + 192, 192 * 192 * 25 + 192, 4800 * 1000 + 1000, 1000 * 10 + 10]
POLICY_LAYERS = [500 * 256 + 256, 256 * 50 + 50]


@pytest.mark.parametrize(
    ("artifact_id", "flattened", "counts"),
    [("thesis/table4.3", "50 × 4 × 4 (flatten 800)", MNIST_LAYERS),
     ("thesis/table4.4", "192 × 5 × 5 (flatten 4800)", CIFAR_LAYERS)],
)  # fmt: skip
def test_the_predictor_tables_flatten_to_the_thesis_features_with_hand_computed_counts(
    artifact_id: str, flattened: str, counts: list[int]
) -> None:
    got = architectures.predictor_architecture(artifact_id).set_index(["row", "column"])["ours"]
    assert got["layer 2", "output shape"] == flattened
    for index, count in enumerate(counts, start=1):
        assert got[f"layer {index}", "weights"] == count
        assert got[f"layer {index}", "variational parameters"] == 2 * count  # a mean and a log-variance each
    assert got["total", "weights"] == sum(counts)
    assert got["layer 4", "output shape"] == "10"


def test_table45_is_the_policy_from_500_state_moments_to_50_candidates() -> None:
    got = architectures.policy_architecture().set_index(["row", "column"])["ours"]
    assert got["input", "layer"] == "(500, 2) mean and variance"
    assert (got["layer 1", "layer"], got["layer 2", "layer"]) == ("Linear (500, 256)", "Linear (256, 50)")
    for index, count in enumerate(POLICY_LAYERS, start=1):
        assert got[f"layer {index}", "weights"] == count
        assert got[f"layer {index}", "variational parameters"] == 2 * count
    assert got["total", "variational parameters"] == 2 * sum(POLICY_LAYERS)
    assert got["prior", "precision α"] == 100.0
    assert all(implementation(f"thesis/table4.{n}").uses == "nothing" for n in (3, 4, 5))


# --- the caption claims (bnnrepro.artifacts.claims) ----------------------------------------------------------------


def claim_context(tmp_path: Path, errors: dict[str, float]) -> ArtifactContext:
    """Tidy metrics of the paper-scale labelling runs with Final Error errors[method] (+ the seed / 10 and a jitter of
    up to 0.1) and Average Error 5 more."""
    rows = []
    for run in labelling_runs():
        base = {"study": STUDY.name, "run": run.id, "method": run.method, "dataset": run.dataset,
                "hparams": run.hparam_slug, "seed": run.seed, "standin": False,
                **{ral.short_name(key): value for key, value in run.hparams}}  # fmt: skip
        method = run.method.partition("@")[0]
        jitter = 0.02 * ((run.seed + 1) * len(method) % 5)  # paired differences with spread, as real runs have
        error = errors.get(method, 50.0) + run.seed / 10 + jitter
        rows += [{**base, "metric": "final_error", "value": error},
                 {**base, "metric": "average_error", "value": error + 5.0}]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "metrics.csv", index=False)
    return ArtifactContext(STUDY.name, "paper", tmp_path / "metrics.csv")


@pytest.mark.parametrize(
    ("errors", "ral_lowest", "random_weak", "thinning_helps"),
    [
        ({"random": 30, "maxent": 25, "bald": 22, "ral": 20, "maxent_thinned": 23}, True, True, True),
        ({"random": 20, "maxent": 25, "bald": 22, "ral": 21, "maxent_thinned": 26}, False, False, False),
    ],
)
def test_the_chapter_4_table_claims_hold_exactly_when_their_orderings_do(
    tmp_path: Path, errors: dict, ral_lowest: bool, random_weak: bool, thinning_helps: bool
) -> None:
    from bnnrepro.artifacts.claims import check, claims_of
    from bnnrepro.artifacts.claims.thesis_ral import (
        ral_lowest_error,
        random_weak_on_mnist,
        thinning_helps_maxent_short_of_ral,
    )

    context = claim_context(tmp_path, errors)
    assert ral_lowest_error(context).holds is ral_lowest
    assert random_weak_on_mnist(context).holds is random_weak
    assert thinning_helps_maxent_short_of_ral(context).holds is thinning_helps
    assert {claim.check for claim in claims_of("thesis/table4.1")} == {ral_lowest_error, random_weak_on_mnist}
    without_bald = claim_context(tmp_path, {**errors, "bald": float("nan")})
    assert check(claims_of("thesis/table4.1")[0], without_bald).holds is None

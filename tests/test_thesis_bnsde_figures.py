"""Thesis chapter 6 (BNSDE, Haußmann 2021): the `forecast_paths` evaluation (bnnrepro.evaluations.forecast_paths) on
tiny untrained BNSDEs built here on the study's simulated series (shapes, the start at the observed state, one
batched solve, the horizon error), and Figs. 6.3-6.9 (bnnrepro.artifacts.thesis_bnsde) on contexts of the arrays it
makes, laid out as the workflow's run files."""

from __future__ import annotations

import importlib
import inspect
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt

from bnnrepro.artifacts import thesis_bnsde as bnsde_figures
from bnnrepro.artifacts.claims import check, claims_of
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementation
from bnnrepro.data.dynamics import generate_lorenz, generate_lotka_volterra
from bnnrepro.data.registry import data_path
from bnnrepro.data.spec import Splits
from bnnrepro.evaluations import forecast_paths
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods import build_method
from bnnrepro.methods.bnsde import BNSDEMethod
from bnnrepro.models.hybrid_sde import HybridSDE
from bnnrepro.pipeline.studies import SCALES
from bnnrepro.train_configs import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FORECAST_WINDOWS = {"n_train": 20, "train_len": 50, "n_test": 10, "test_len": 100}
"""Grid lorenz_forecasts' windows: together the whole series of 2000 observations."""
TINY_DRIFT = "method.drift.widths=[8]"
LV_VARIANTS = {
    "e_pac_bayes@lv": ["method.objective=e_pac_bayes", "method.drift.activation=relu"],
    "white_box@lv": ["method.objective=none", "method.knowledge.gamma=[1,1]"],
    "e_pac_bayes_hybrid@lv": ["method.objective=e_pac_bayes", "method.knowledge.gamma=[1,1]"],
}
LORENZ_VARIANTS = {
    "e_pac_bayes@forecast": ["method.objective=e_pac_bayes"],
    "e_pac_bayes_hybrid@z_forecast": ["method.objective=e_pac_bayes", "method.knowledge.gamma=[0,0,1]"],
}
LORENZ_FIGURES = {"thesis/fig6.5": (200, 1, 1), "thesis/fig6.6": (100, 1, 3), "thesis/fig6.7": (200, 1, 3),
                  "thesis/fig6.8": (999, 1, 3), "thesis/fig6.9": (999, 2, 3)}  # fmt: skip
"""Lorenz figure -> (steps drawn, rows, columns of panels)."""


def tiny_bnsde(dataset: str, splits: Splits, overrides: list[str]) -> BNSDEMethod:
    """An untrained BNSDE of the study's kind on `dataset` with a drift of 8 units."""
    cfg = compose_config(["method=bnsde", f"dataset={dataset}", "dataset.path=unused", "run_dir=unused", TINY_DRIFT,
                          *overrides])  # fmt: skip
    torch.manual_seed(0)
    return build_method(cfg, splits.spec("forecasting")).eval()


def forecast_inputs(dataset: str, scale: str = "default") -> EvaluationInputs:
    return EvaluationInputs(declared_evaluation("forecast_paths").settings[scale], run_dataset={"name": dataset})


def forecast_arrays(method: BNSDEMethod, splits: Splits, dataset: str) -> dict[str, np.ndarray]:
    torch.manual_seed(1)
    return forecast_paths.evaluation_arrays(method, "forecast_paths", splits, forecast_inputs(dataset))


@pytest.fixture(scope="module")
def lorenz_splits() -> Splits:
    return generate_lorenz(0, **FORECAST_WINDOWS)


@pytest.fixture(scope="module")
def lv_splits() -> Splits:
    return generate_lotka_volterra(0)


@pytest.fixture(scope="module")
def lorenz_arrays(lorenz_splits: Splits) -> dict[str, dict[str, np.ndarray]]:
    return {m: forecast_arrays(tiny_bnsde("lorenz", lorenz_splits, o), lorenz_splits, "lorenz")
            for m, o in LORENZ_VARIANTS.items()}  # fmt: skip


@pytest.fixture(scope="module")
def lv_arrays(lv_splits: Splits) -> dict[str, dict[str, np.ndarray]]:
    return {m: forecast_arrays(tiny_bnsde("lotka_volterra", lv_splits, o), lv_splits, "lotka_volterra")
            for m, o in LV_VARIANTS.items()}  # fmt: skip


# --- the evaluation --------------------------------------------------------------------------------------------------


def test_the_evaluation_is_declared_at_every_scale_for_both_series() -> None:
    declared = declared_evaluation("forecast_paths")
    module = importlib.import_module(declared.code)
    assert list(inspect.signature(module.evaluation_arrays).parameters) == ["method", "name", "splits", "inputs"]
    assert declared.device == "cpu" and set(SCALES) <= set(declared.settings)
    for scale in SCALES:
        lorenz = forecast_paths.forecast_setting(declared.settings[scale], "lorenz")
        lv = forecast_paths.forecast_setting(declared.settings[scale], "lotka_volterra")
        assert (lorenz.split, lorenz.start, lorenz.trajectories) == ("test", 0, 21)  # T = 10, Figs. 6.5-6.9
        assert lorenz.horizon >= max(steps for steps, _, _ in LORENZ_FIGURES.values())
        assert (lv.split, lv.start, lv.horizon, lv.trajectories) == ("train", 100, 200, 10)  # Fig. 6.3's caption


def test_lorenz_forecasts_start_at_the_first_test_observation_and_cover_the_test_half(lorenz_arrays, lorenz_splits):
    test_series = lorenz_splits.x("test").reshape(-1, 4)
    for arrays in lorenz_arrays.values():
        assert arrays["paths"].shape == (21, 1000, 3) and arrays["observed"].shape == (1000, 3)
        np.testing.assert_array_equal(arrays["observed"], test_series[:, :3])
        np.testing.assert_array_equal(arrays["times"], test_series[:, 3])
        assert arrays["times"][0] == pytest.approx(10.0) and arrays["times"][-1] == pytest.approx(19.99)
        np.testing.assert_array_equal(arrays["paths"][:, 0], np.broadcast_to(arrays["observed"][0], (21, 3)))
        assert arrays["paths"][:, 1:100].std(0).min() > 0  # the diffusion separates the paths after the start
    assert np.isfinite(lorenz_arrays["e_pac_bayes@forecast"]["paths"]).all()


def test_lotka_volterra_forecasts_start_at_the_true_state_at_t_1(lv_arrays, lv_splits):
    training_series = lv_splits.x("train").reshape(-1, 3)
    for arrays in lv_arrays.values():
        assert arrays["paths"].shape == (10, 201, 2)
        np.testing.assert_array_equal(arrays["observed"], training_series[100:301, :2])
        assert arrays["times"][0] == pytest.approx(1.0) and arrays["times"][-1] == pytest.approx(3.0)
        np.testing.assert_array_equal(arrays["paths"][:, 0], np.broadcast_to(training_series[100, :2], (10, 2)))


def test_all_trajectories_are_one_batched_solve(lorenz_splits, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    solve = HybridSDE.solve

    def counted(self, h0, steps, *args, **kwargs):
        calls.append((tuple(h0.shape), len(steps), kwargs.get("with_kl")))
        return solve(self, h0, steps, *args, **kwargs)

    monkeypatch.setattr(HybridSDE, "solve", counted)
    forecast_arrays(
        tiny_bnsde("lorenz", lorenz_splits, LORENZ_VARIANTS["e_pac_bayes@forecast"]), lorenz_splits, "lorenz"
    )
    assert calls == [((21, 3), 999, False)]


def test_a_horizon_past_the_series_names_the_horizon_the_length_and_the_fix() -> None:
    ablation_splits = generate_lorenz(0)  # Table 6.1's 20 x 24 windows: a test series of 480 observations
    method = tiny_bnsde("lorenz", ablation_splits, LORENZ_VARIANTS["e_pac_bayes@forecast"])
    with pytest.raises(
        ValueError, match=r"horizon of 999 steps .* has 480 \(479 steps .*config/evaluations/forecast_paths.yaml"
    ):
        forecast_arrays(method, ablation_splits, "lorenz")


def test_a_dataset_without_a_setting_is_an_error(lorenz_splits) -> None:
    method = tiny_bnsde("lorenz", lorenz_splits, LORENZ_VARIANTS["e_pac_bayes@forecast"])
    with pytest.raises(ValueError, match="no setting for dataset 'cmu_mocap35'.*lorenz, lotka_volterra"):
        forecast_paths.evaluation_arrays(method, "forecast_paths", lorenz_splits, forecast_inputs("cmu_mocap35"))


# --- the figures -----------------------------------------------------------------------------------------------------


def write_run_arrays(
    root: Path, grid: str, arrays: dict[str, dict[str, np.ndarray]], scale: str, jitter: float = 0.0
) -> list[Path]:
    """The arrays of each model, written as the workflow's run files of `grid`'s runs at `scale`; each run's paths
    moved by up to 4 `jitter`, by its seed and method (so that seeds differ as real runs do)."""
    files = []
    for run in bnsde_figures.grid_runs(scale, (grid,)):
        path = root / run.file(bnsde_figures.FORECAST_PATHS)
        path.parent.mkdir(parents=True, exist_ok=True)
        shift = jitter * np.random.default_rng([run.seed, zlib.crc32(run.method.encode())]).uniform(0, 4)
        np.savez(path, **{**arrays[run.method], "paths": arrays[run.method]["paths"] + shift})
        files.append(path)
    return files


@pytest.fixture(scope="module")
def run_files(tmp_path_factory, lorenz_arrays, lv_arrays) -> list[Path]:
    """Smoke-scale run files of both grids, and a 24-step forecast of Table 6.1's hybrid run (grid lorenz_ablation)
    that the Lorenz figures must leave out."""
    root = tmp_path_factory.mktemp("bnsde_runs")
    files = write_run_arrays(root, bnsde_figures.LV_GRID, lv_arrays, "smoke")
    files += write_run_arrays(root, bnsde_figures.LORENZ_GRID, lorenz_arrays, "smoke")
    short = {key: values[..., :25, :] if key == "paths" else values[:25]
             for key, values in lorenz_arrays["e_pac_bayes_hybrid@z_forecast"].items()}  # fmt: skip
    return files + write_run_arrays(root, "lorenz_ablation", {"e_pac_bayes_hybrid@z": short, "e_bayes": short,
                                                              "full_dynamics": short}, "smoke")  # fmt: skip


def test_fig63_is_a_panel_per_model_with_x_and_y_mean_bands_and_the_observed_series(run_files, lv_arrays) -> None:
    fig = implementation("thesis/fig6.3").draw(ArtifactContext("thesis_bnsde", "smoke", run_files=run_files))
    assert [ax.get_title() for ax in fig.axes] == list(bnsde_figures.LV_MODELS.values())
    for ax, arrays in zip(fig.axes, lv_arrays.values(), strict=True):
        lines = {line.get_label(): line for line in ax.get_lines()}
        np.testing.assert_allclose(lines["x_t"].get_ydata(), arrays["paths"][..., 0].mean(0), rtol=1e-6)
        np.testing.assert_array_equal(lines["observed y_t"].get_ydata(), arrays["observed"][:, 1])
        assert lines["observed y_t"].get_linestyle() == "--"
        assert len(ax.collections) == 2  # the ± 3 std bands of x_t and y_t
    plt.close(fig)


@pytest.mark.parametrize("artifact_id", LORENZ_FIGURES)
def test_each_lorenz_figure_draws_its_horizon_from_the_forecast_grids_runs(run_files, lorenz_arrays, artifact_id):
    steps, rows, columns = LORENZ_FIGURES[artifact_id]
    fig = implementation(artifact_id).draw(ArtifactContext("thesis_bnsde", "smoke", run_files=run_files))
    assert len(fig.axes) == rows * columns
    models_per_panel = 2 // rows
    for ax in fig.axes:
        assert len(ax.collections) == models_per_panel  # a ± 2 std band per model
        observed = ax.get_lines()[0]
        assert observed.get_label() == "observed (test)" and len(observed.get_xdata()) == steps + 1
    x_panel = fig.axes[columns * (rows - 1)]  # of the baseline's row in Fig. 6.9
    baseline = {line.get_label(): line for line in x_panel.get_lines()}["baseline: E-PAC-Bayes (black box)"]
    paths = lorenz_arrays["e_pac_bayes@forecast"]["paths"][:, : steps + 1, 0]
    np.testing.assert_allclose(baseline.get_ydata(), paths.mean(0), rtol=1e-5, atol=1e-5)
    sample_lines = len(fig.axes[0].get_lines()) - 1 - models_per_panel  # besides the observed series and the means
    assert sample_lines == (bnsde_figures.SAMPLE_PATHS if artifact_id == "thesis/fig6.9" else 0)
    plt.close(fig)


def test_fig64_draws_the_forecast_grids_series_train_blue_test_red(tmp_path: Path, lorenz_splits) -> None:
    declared = implementation("thesis/fig6.4")
    expected = data_path("lorenz", {"train_len": 50, "n_test": 10, "test_len": 100}, 0)
    assert all(declared.data_files(scale) == [expected] for scale in SCALES)
    path = tmp_path / "lorenz.npz"
    lorenz_splits.save(path)
    fig = declared.draw(ArtifactContext("thesis_bnsde", "default", data_files=[path]))
    (ax,) = fig.axes
    assert ax.name == "3d"
    train, test = ax.get_lines()
    assert (train.get_color(), test.get_color()) == ("tab:blue", "tab:red")
    assert len(train.get_xdata()) == len(test.get_xdata()) == 1000
    np.testing.assert_array_equal(test.get_xdata(), lorenz_splits.y("test").reshape(-1, 3)[:, 0])
    plt.close(fig)


@pytest.mark.parametrize("artifact_id", ["thesis/fig6.3", *LORENZ_FIGURES])
def test_a_figure_without_its_runs_names_the_missing_model(artifact_id: str) -> None:
    with pytest.raises(ValueError, match="no 'forecast_paths' arrays of model"):
        implementation(artifact_id).draw(ArtifactContext("thesis_bnsde", "smoke", run_files=[]))


def test_a_band_says_how_many_of_its_paths_diverged(run_files) -> None:
    """The untrained hybrid's paths overflow within 141 steps: its curve ends there and its label says so."""
    fig = implementation("thesis/fig6.6").draw(ArtifactContext("thesis_bnsde", "smoke", run_files=run_files))
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["observed (test)", "E-PAC-Bayes-Hybrid, knows dz", "baseline: E-PAC-Bayes (black box)"]
    fig = implementation("thesis/fig6.8").draw(ArtifactContext("thesis_bnsde", "smoke", run_files=run_files))
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[1] == "E-PAC-Bayes-Hybrid, knows dz (21 of 21 paths diverged)"
    plt.close("all")


def test_a_figure_longer_than_the_evaluation_says_how_to_fix_it(lorenz_arrays) -> None:
    forecast = bnsde_figures.Forecast(**lorenz_arrays["e_pac_bayes@forecast"])
    assert forecast.first_steps(100).paths.shape == (21, 101, 3)
    with pytest.raises(ValueError, match="draws 1000 forecast steps, but .* has 999: raise its `horizon`"):
        forecast.first_steps(1000)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("artifact_id", ["thesis/fig6.3", "thesis/fig6.4", *LORENZ_FIGURES])
def test_each_note_names_its_scale_and_what_was_trained(scale: str, artifact_id: str) -> None:
    note = implementation(artifact_id).note(scale)
    assert note.startswith(f"{scale} scale")
    if artifact_id != "thesis/fig6.4":
        epochs = 100 if artifact_id != "thesis/fig6.3" else 50
        assert ("epochs, seed 0" in note) and (f"thesis: {epochs} epochs" in note)
    if artifact_id in LORENZ_FIGURES:
        assert "E-PAC-Bayes without prior knowledge, (ii)" in note and "21 sample paths" in note


# --- the claims of the text about the figures (bnnrepro.artifacts.claims.thesis_bnsde) ------------------------------


def constructed_forecast(observed: np.ndarray, offset: float, spread: float, steps: int) -> dict[str, np.ndarray]:
    """Two paths per step at observed + offset ± spread (their mean observed + offset, their std spread * sqrt(2))."""
    paths = np.stack([observed + offset + spread, observed + offset - spread])
    paths[:, 0] = observed[0]
    return {"times": np.arange(steps + 1) * 0.01, "observed": observed, "paths": paths}


def test_a_forecasts_error_and_band_coverage_are_those_of_its_mean_and_std() -> None:
    observed = np.zeros((11, 2))
    forecast = bnsde_figures.Forecast(**constructed_forecast(observed, 1.0, 1.0, 10))
    assert forecast.squared_error((0, 1)) == pytest.approx(1.0)  # the start, at the observed state, is left out
    assert forecast.coverage((0,), 1) == 1.0  # |0 - 1| <= sqrt(2)
    narrow = bnsde_figures.Forecast(**constructed_forecast(observed, 1.0, 0.5, 10))
    assert narrow.coverage((0, 1), 1) == 0.0  # |0 - 1| > sqrt(2) / 2
    narrow.paths[0, 5:] = np.inf  # a path that diverged at step 5
    assert narrow.squared_error((0,)) == np.inf and narrow.coverage((0,), 3) == pytest.approx(0.4)


def claim_outcomes(tmp_path: Path, lv: dict, lorenz: dict) -> dict[str, bool | None]:
    """The claims' outcomes on the paper grids' five seeds, each with the given arrays."""
    files = write_run_arrays(tmp_path, bnsde_figures.LV_GRID, lv, "paper", jitter=0.02)
    files += write_run_arrays(tmp_path, bnsde_figures.LORENZ_GRID, lorenz, "paper", jitter=0.02)
    context = ArtifactContext("thesis_bnsde", "paper", run_files=files)
    artifacts = ("thesis/fig6.3", "thesis/fig6.5", "thesis/fig6.7", "thesis/fig6.8")
    return {a: check(c, context).holds for a in artifacts for c in claims_of(a)}


@pytest.mark.parametrize("hybrid_better", [True, False])
def test_the_forecast_claims_hold_exactly_when_the_hybrid_tracks_the_data(tmp_path: Path, hybrid_better: bool):
    series = np.random.default_rng(0).normal(size=(1000, 3)).cumsum(0)
    close, far = (0.1, 0.5), (3.0, 0.5)  # (offset, spread): inside a wide band, and outside a narrow one
    hybrid, baseline = (close, far) if hybrid_better else (far, close)
    lorenz = {"e_pac_bayes_hybrid@z_forecast": constructed_forecast(series, *hybrid, 999),
              "e_pac_bayes@forecast": constructed_forecast(series, *baseline, 999)}  # fmt: skip
    lv_series = series[:201, :2]
    lv = {"e_pac_bayes_hybrid@lv": constructed_forecast(lv_series, *hybrid, 200),
          "e_pac_bayes@lv": constructed_forecast(lv_series, *baseline, 200),
          "white_box@lv": constructed_forecast(lv_series, 2.0, 0.5, 200)}  # fmt: skip
    outcomes = claim_outcomes(tmp_path, lv, lorenz)
    assert outcomes == dict.fromkeys(outcomes, hybrid_better) and len(outcomes) == 4


def test_a_hybrid_that_diverges_covers_nothing_after_it_and_the_evidence_says_so(tmp_path: Path) -> None:
    series = np.zeros((1000, 3))
    hybrid = constructed_forecast(series, 0.0, 1.0, 999)
    hybrid["paths"][1, 100:] = np.inf  # after 100 of 999 steps
    lorenz = {"e_pac_bayes_hybrid@z_forecast": hybrid, "e_pac_bayes@forecast": constructed_forecast(series, 0, 1, 999)}
    files = write_run_arrays(tmp_path, bnsde_figures.LORENZ_GRID, lorenz, "paper")
    (fig68,) = claims_of("thesis/fig6.8")
    outcome = check(fig68, ArtifactContext("thesis_bnsde", "paper", run_files=files))
    assert (
        outcome.holds is False and "dz 0.0991" in outcome.evidence
    )  # steps 1-99 of 999 and "Hybrid, knows dz 1 of 2" in outcome.evidence
    (fig63,) = claims_of("thesis/fig6.3")
    assert not check(fig63, ArtifactContext("thesis_bnsde", "paper", run_files=files)).checked  # no LV runs


def test_one_seed_cannot_decide_a_forecast_claim(tmp_path: Path) -> None:
    """At smoke scale the figures' grids have one seed: a comparison over one repetition is not resolved."""
    series = np.random.default_rng(0).normal(size=(1000, 3)).cumsum(0)
    lorenz = {"e_pac_bayes_hybrid@z_forecast": constructed_forecast(series, 0.1, 0.5, 999),
              "e_pac_bayes@forecast": constructed_forecast(series, 3.0, 0.5, 999)}  # fmt: skip
    files = write_run_arrays(tmp_path, bnsde_figures.LORENZ_GRID, lorenz, "smoke")
    (fig67,) = claims_of("thesis/fig6.7")
    outcome = check(fig67, ArtifactContext("thesis_bnsde", "smoke", run_files=files))
    assert outcome.checked and outcome.holds is None and "over 1 repetition" in outcome.evidence

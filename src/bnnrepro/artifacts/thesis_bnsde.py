"""Figures of thesis chapter 6 (Haußmann 2021, "Bayesian Neural Networks for Probabilistic Machine Learning";
Haußmann, Gerwinn, Look, Rakitsch & Kandemir 2021): learning partially known stochastic dynamics (BNSDE), from
study `thesis_bnsde`.

- Fig. 6.3: Lotka-Volterra forecasts of the black box, the white-box prior SDE and the hybrid (§6.4.1), from the
  `forecast_paths` evaluation (bnnrepro.evaluations.forecast_paths) of grid `lotka_volterra`'s runs.
- Fig. 6.4: the stochastic Lorenz series, training half blue, test half red (§6.4.2), from its data file.
- Figs. 6.5-6.9: Lorenz forecasts from T = 10 of the hybrid with prior knowledge of dz against the black-box
  baseline (§6.4.2, §6.6.4), from the `forecast_paths` evaluation of grid `lorenz_forecasts`'s runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.artifacts.thesis_bedl import epochs_text
from bnnrepro.artifacts.thesis_bnsde_tables import grid_runs
from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.declarations import declared_evaluation
from bnnrepro.layout import evaluation_file

STUDY = "thesis_bnsde"
FORECAST_EVALUATION = "forecast_paths"  # bnnrepro.evaluations.forecast_paths (not imported here: it needs torch)
FORECAST_PATHS = evaluation_file(FORECAST_EVALUATION)  # made by bnnrepro.evaluations from each run's checkpoint
FORECAST_KEYS = ("trajectories", "start", "horizon")  # of its settings per dataset (its config/evaluations file)

LV_GRID, LORENZ_GRID = "lotka_volterra", "lorenz_forecasts"
LV_MODELS = {
    "e_pac_bayes@lv": "(i) black box: E-PAC-Bayes",
    "white_box@lv": "(ii) white box: prior SDE",
    "e_pac_bayes_hybrid@lv": "(iii) hybrid: E-PAC-Bayes-Hybrid",
}
"""Grid `lotka_volterra`'s models -> Fig. 6.3's panels, in the caption's order."""
LORENZ_MODELS = {
    "e_pac_bayes_hybrid@z_forecast": "E-PAC-Bayes-Hybrid, knows dz",
    "e_pac_bayes@forecast": "baseline: E-PAC-Bayes (black box)",
}
"""Grid `lorenz_forecasts`'s models -> the labels of Figs. 6.5-6.9."""
MODEL_COLOURS = {"e_pac_bayes_hybrid@z_forecast": "tab:red", "e_pac_bayes@forecast": "tab:blue"}
LV_STATES = {"x_t": "tab:blue", "y_t": "tab:orange"}
"""Lotka-Volterra's states (prey, predator) and their colours in Fig. 6.3."""
LORENZ_STATES = ("x", "y", "z")
OBSERVED_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.0}

LV_SPREAD, LORENZ_SPREAD = 3, 2  # the bands: ± 3 std (Fig. 6.3), ± 2 std (Figs. 6.5-6.9)
SHORT_STEPS, MEDIUM_STEPS = 100, 200  # Fig. 6.6; Figs. 6.5 and 6.7
LONG_STEPS = 999
"""Figs. 6.8 and 6.9's "1000 time steps" from T = 10: the whole test half, to t = 19.99, its last observation (the
thesis' 2000 observations end there; a 1000th step would end at t = 20, past the data)."""
FIG65_STATE = 0
"""Fig. 6.5's one dimension: x. The thesis' "mapped to one dimension" is not explained; x is the first state."""
SAMPLE_PATHS = 7  # Fig. 6.9: "seven individual trajectories" per model (§6.6.4), the first 7 drawn of the 21


# --- runs and notes --------------------------------------------------------------------------------------------------


def forecast_settings(scale: str, dataset: str) -> Mapping:
    """The `forecast_paths` setting of `dataset` at `scale` (config/evaluations/forecast_paths.yaml): split, start,
    horizon and trajectories."""
    return declared_evaluation(FORECAST_EVALUATION).settings[scale][dataset]


def grid_text(scale: str, grid: str) -> str:
    """'20 epochs, seed 0': the epochs of a grid's runs at `scale` and the seed the figure draws, with the seeds its
    claims pair where there are more."""
    runs = grid_runs(scale, (grid,))
    epochs = epochs_text(dict(run.hparams)["train.epochs"] for run in runs)
    seeds = sorted({run.seed for run in runs})
    paired = f" (the claims pair seeds {', '.join(map(str, seeds))})" if len(seeds) > 1 else ""
    return f"{epochs}, seed {seeds[0]}{paired}"


def fig63_note(scale: str) -> str:
    trajectories, start, horizon = (forecast_settings(scale, "lotka_volterra")[k] for k in FORECAST_KEYS)
    return (
        f"{scale} scale: one run per model, {grid_text(scale, LV_GRID)} (thesis: 50 epochs), Adam 1e-3, minibatches "
        "of 2 of the ten 50-observation training windows of t in [0, 5) (§6.6.3). (i) The black box: E-PAC-Bayes with "
        "the 4 x 50 ReLU drift (the thesis does not name its objective; ours is the hybrid's, without the knowledge); "
        "(ii) the white-box prior SDE with parameters drawn from N(θ, 0.5²), not trained; (iii) the hybrid: "
        f"E-PAC-Bayes with both equations known (γ = [1, 1]). Forecasts: {trajectories} trajectories from the observed "
        f"state at t = 1 (observation {start} of the training series) for {horizon} steps of 0.01, mean ± {LV_SPREAD} "
        "std; one panel per model with x_t and y_t, the observed series dashed. The forecast span lies in the "
        "training data, as the caption's t = 1 to 3 does."
    )


def lorenz_note(scale: str) -> str:
    """Runs, baseline and forecasts of Figs. 6.5-6.9 at `scale`."""
    trajectories = forecast_settings(scale, "lorenz")["trajectories"]
    return (
        f"{scale} scale: the runs of grid {LORENZ_GRID}, {grid_text(scale, LORENZ_GRID)} (thesis: 100 epochs), Adam "
        "1e-3, minibatches of 2 of the 20 x 50 training windows (t < 10; §6.6.3), the 2 x 100 softplus drift. The "
        "hybrid: E-PAC-Bayes-Hybrid with prior knowledge of dz (γ = [0, 0, 1], ρ drawn from N(8/3, 1)). The baseline: "
        "E-PAC-Bayes without prior knowledge, (ii) of §6.4; the thesis does not say whether its baseline is (i) "
        "E-Bayes or (ii), ours has the hybrid's objective so that the two differ only in the knowledge. Forecasts: "
        f"{trajectories} sample paths from the observed state at T = 10 (the first test observation), mean ± "
        f"{LORENZ_SPREAD} std over them; the observed test series dashed."
    )


def fig64_note(scale: str) -> str:
    return (
        f"{scale} scale (the same series at every scale): the seed-0 series of grid {LORENZ_GRID}'s data file, "
        "2e5 Euler-Maruyama steps of 1e-4 from (1, 1, 28), every 100th kept; its training windows (20 x 50, t < 10) "
        "in blue and test windows (10 x 100, t ≥ 10) in red, which together are all 2000 observations. Table 6.1's "
        "runs window the same series 20 x 24 per half (480 observations of each)."
    )


def fig65_note(scale: str) -> str:
    return (
        f"{lorenz_note(scale)} {MEDIUM_STEPS} steps of dimension {LORENZ_STATES[FIG65_STATE]}: the thesis' "
        "'mapped to one dimension' is not explained; ours draws one state, the first."
    )


def long_note(scale: str) -> str:
    return (
        f"{lorenz_note(scale)} {LONG_STEPS} steps, to t = 19.99, the last observation: the thesis' 1000 steps from "
        "T = 10 would end at t = 20, one past its 2000 observations."
    )


def fig69_note(scale: str) -> str:
    return f"{long_note(scale)} The first {SAMPLE_PATHS} of the sample paths per model, a row per model."


# --- forecasts -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Forecast:
    """One run's `forecast_paths` arrays: times [L], observed [L, P], paths [trajectories, L, P]."""

    times: np.ndarray
    observed: np.ndarray
    paths: np.ndarray

    @property
    def steps(self) -> int:
        return len(self.times) - 1

    def first_steps(self, steps: int) -> Forecast:
        """The forecast over its first `steps` steps; an error where it is shorter."""
        if steps > self.steps:
            raise ValueError(
                f"a figure draws {steps} forecast steps, but the {FORECAST_EVALUATION!r} evaluation has {self.steps}: "
                "raise its `horizon` in config/evaluations/forecast_paths.yaml"
            )
        return Forecast(self.times[: steps + 1], self.observed[: steps + 1], self.paths[:, : steps + 1])

    def mean_and_std(self) -> tuple[np.ndarray, np.ndarray]:
        """The mean and the sample standard deviation over the trajectories, each [L, P] (not finite from the first
        step at which a path diverged)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self.paths.mean(0), self.paths.std(0, ddof=1)

    def diverged(self) -> int:
        """How many of the paths overflowed (a value that is not finite)."""
        return int((~np.isfinite(self.paths)).any(axis=(1, 2)).sum())

    def squared_error(self, states: tuple[int, ...]) -> float:
        """The mean squared error of the mean path to the observed series over the steps after the start and
        `states` (inf where a path diverged)."""
        mean = self.mean_and_std()[0][1:, states]
        return float(np.square(mean - self.observed[1:, states]).mean()) if np.isfinite(mean).all() else np.inf

    def coverage(self, states: tuple[int, ...], spread: int) -> float:
        """The fraction of the steps after the start and of `states` at which the observed value lies within the
        mean ± `spread` standard deviations (a band that is not finite covers nothing)."""
        mean, std = (values[1:, states] for values in self.mean_and_std())
        with np.errstate(invalid="ignore"):
            return float((np.abs(self.observed[1:, states] - mean) <= spread * std).mean())


def seed_forecasts(context: ArtifactContext, grid: str, labels: dict[str, str]) -> dict[int, dict[str, Forecast]]:
    """{seed: {model: Forecast}} of the seeds with an evaluated run of every model of `labels` in `grid` (models in
    `labels`' order); an error names a model without an evaluated run."""
    runs = {run.id: run for run in grid_runs(context.scale, (grid,))}
    arrays = {runs[run_id]: a for run_id, a in context.run_arrays().items() if run_id in runs}
    by_seed: dict[int, dict[str, Forecast]] = {}
    for method in labels:
        seeds = {run.seed: a for run, a in arrays.items() if run.method == method}
        if not seeds:
            raise ValueError(f"study {STUDY}: no {FORECAST_EVALUATION!r} arrays of model {method!r} in grid {grid}")
        for seed, a in seeds.items():
            by_seed.setdefault(seed, {})[method] = Forecast(a["times"], a["observed"], a["paths"])
    return {seed: models for seed, models in sorted(by_seed.items()) if len(models) == len(labels)}


def grid_forecasts(context: ArtifactContext, grid: str, labels: dict[str, str]) -> dict[str, Forecast]:
    """{model: Forecast} of the first seed's run of each model of `labels` in `grid` (what the figures draw)."""
    seeds = seed_forecasts(context, grid, labels)
    if not seeds:
        raise ValueError(f"study {STUDY}: no seed has an evaluated run of every model in grid {grid}")
    return seeds[min(seeds)]


def draw_band(ax: Axes, forecast: Forecast, state: int, spread: int, colour: str, label: str) -> None:
    """The mean over the trajectories (bold) and ± `spread` standard deviations (shaded) of one state; the label says
    how many paths diverged, if any (the curves end where the first did)."""
    mean, std = (values[:, state] for values in forecast.mean_and_std())
    if forecast.diverged():
        label = f"{label} ({forecast.diverged()} of {len(forecast.paths)} paths diverged)"
    ax.plot(forecast.times, mean, color=colour, linewidth=2, label=label)
    ax.fill_between(forecast.times, mean - spread * std, mean + spread * std, color=colour, alpha=0.2, linewidth=0)


# --- figures ---------------------------------------------------------------------------------------------------------


@figure("thesis/fig6.3", uses="runs", run_file=FORECAST_PATHS, methods=tuple(LV_MODELS), datasets=("lotka_volterra",),
        note=fig63_note)  # fmt: skip
def lotka_volterra_forecasts(context: ArtifactContext) -> Figure:
    """Forecasts of x_t and y_t from the true state at t = 1, mean ± 3 std, a panel per model (Fig. 6.3)."""
    forecasts = grid_forecasts(context, LV_GRID, LV_MODELS)
    fig, axes = plt.subplots(1, len(forecasts), figsize=(4.4 * len(forecasts), 3.6), sharey=True, squeeze=False)
    for ax, (method, forecast) in zip(axes[0], forecasts.items(), strict=True):
        for state, (name, colour) in enumerate(LV_STATES.items()):
            draw_band(ax, forecast, state, LV_SPREAD, colour, name)
            ax.plot(forecast.times, forecast.observed[:, state], **{**OBSERVED_STYLE, "color": colour},
                    label=f"observed {name}")  # fmt: skip
        ax.set(xlabel="t", title=LV_MODELS[method])
    axes[0, 0].set_ylabel("population")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def lorenz_data_files(scale: str) -> list[str]:
    """The data file of grid `lorenz_forecasts`'s seed-0 runs: the whole series in its windows."""
    return [next(run.data_file() for run in grid_runs(scale, (LORENZ_GRID,)) if run.seed == 0)]


@figure("thesis/fig6.4", uses="data", data_files=lorenz_data_files, note=fig64_note)
def lorenz_data(context: ArtifactContext) -> Figure:
    """The stochastic Lorenz series in 3-D: training observations blue, test observations red (Fig. 6.4)."""
    splits = Splits.load(context.data_files[0])
    fig = plt.figure(figsize=(6, 5.5))
    ax = fig.add_subplot(projection="3d")
    for split, colour in (("train", "tab:blue"), ("test", "tab:red")):
        windows = splits.y(split)
        series = windows.reshape(-1, windows.shape[-1])
        ax.plot(*series.T, color=colour, linewidth=0.8, label=f"{split} ({len(series)} observations)")
    ax.set(xlabel="x", ylabel="y", zlabel="z")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def lorenz_horizon(context: ArtifactContext, steps: int, states: tuple[int, ...], sample_paths: int = 0) -> Figure:
    """The Lorenz forecasts over their first `steps` steps, a panel per state of `states`: mean ± 2 std of the hybrid
    and the baseline together, or with `sample_paths`, a row per model with that many of its sample paths."""
    forecasts = {m: f.first_steps(steps) for m, f in grid_forecasts(context, LORENZ_GRID, LORENZ_MODELS).items()}
    rows = [{method: forecast} for method, forecast in forecasts.items()] if sample_paths else [forecasts]
    fig, axes = plt.subplots(len(rows), len(states), figsize=(4.6 * len(states), 3.4 * len(rows)), squeeze=False)
    for row_axes, row in zip(axes, rows, strict=True):
        for ax, state in zip(row_axes, states, strict=True):
            observed = next(iter(row.values()))
            ax.plot(observed.times, observed.observed[:, state], **OBSERVED_STYLE, label="observed (test)")
            for method, forecast in row.items():
                colour = MODEL_COLOURS[method]
                for index, path in enumerate(forecast.paths[:sample_paths]):
                    label = f"{sample_paths} sample paths" if index == 0 else None
                    ax.plot(forecast.times, path[:, state], color=colour, linewidth=0.6, alpha=0.7, label=label)
                draw_band(ax, forecast, state, LORENZ_SPREAD, colour, LORENZ_MODELS[method])
            title = LORENZ_MODELS[next(iter(row))] if sample_paths else f"{steps} steps from T = 10"
            ax.set(xlabel="t", ylabel=LORENZ_STATES[state], title=title)
        row_axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


LORENZ_FIGURE = {"uses": "runs", "run_file": FORECAST_PATHS, "methods": tuple(LORENZ_MODELS), "datasets": ("lorenz",)}
ALL_STATES = tuple(range(len(LORENZ_STATES)))


@figure("thesis/fig6.5", note=fig65_note, **LORENZ_FIGURE)
def lorenz_forecast_one_dimension(context: ArtifactContext) -> Figure:
    """200 steps from T = 10 of one dimension (x), hybrid against baseline, mean ± 2 std (Fig. 6.5)."""
    return lorenz_horizon(context, MEDIUM_STEPS, (FIG65_STATE,))


@figure("thesis/fig6.6", note=lorenz_note, **LORENZ_FIGURE)
def lorenz_forecast_short(context: ArtifactContext) -> Figure:
    """100 steps from T = 10 of x, y and z, hybrid against baseline, mean ± 2 std (Fig. 6.6)."""
    return lorenz_horizon(context, SHORT_STEPS, ALL_STATES)


@figure("thesis/fig6.7", note=lorenz_note, **LORENZ_FIGURE)
def lorenz_forecast_medium(context: ArtifactContext) -> Figure:
    """200 steps from T = 10 of x, y and z, hybrid against baseline, mean ± 2 std (Fig. 6.7)."""
    return lorenz_horizon(context, MEDIUM_STEPS, ALL_STATES)


@figure("thesis/fig6.8", note=long_note, **LORENZ_FIGURE)
def lorenz_forecast_long(context: ArtifactContext) -> Figure:
    """The whole test half from T = 10 (999 steps) of x, y and z, hybrid against baseline, mean ± 2 std (Fig. 6.8)."""
    return lorenz_horizon(context, LONG_STEPS, ALL_STATES)


@figure("thesis/fig6.9", note=fig69_note, **LORENZ_FIGURE)
def lorenz_sample_paths(context: ArtifactContext) -> Figure:
    """Seven sample paths per model over the whole test half with mean ± 2 std, a row per model (Fig. 6.9)."""
    return lorenz_horizon(context, LONG_STEPS, ALL_STATES, SAMPLE_PATHS)

"""Artifacts of the SDE-BNN toy 1D study: Xu et al. 2022 (the SDE-BNN paper) Figs. 1, 2, 8 and the workshop paper
Figs. 1-4, drawn from the `toy_paths` evaluation of the trained runs (bnnrepro.evaluations.toy_paths);
SDE-BNN paper Table 2 from the runs' resolved configs and Table 5 from the method registry."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure, table
from bnnrepro.layout import RUN_CONFIG, evaluation_file, run_method
from bnnrepro.methods import METHOD_FAMILIES
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import load_study

PERCENTILES = (5, 25)  # shaded bands: 5-95 % and 25-75 % of the samples ("density percentiles")
SAMPLE_LINES = 5  # function samples drawn as lines
BAND_COLOUR = "tab:blue"
TOY_PATHS = evaluation_file("toy_paths")  # made by bnnrepro.evaluations from each run's checkpoint


def _workshop_settings(scale: str) -> tuple[int, int]:
    """The workshop SDE-BNN's Euler steps over depth [0, 1] and weight paths per step in the study's grid at `scale`."""
    (hparams,) = {run.hparams for run in load_study("sdebnn_toy").runs(scale) if run.method == "ws_sdebnn"}
    settings = dict(hparams)
    return settings["method.solver.num_steps"], settings["method.num_samples"]


def toy_note(scale: str) -> str:
    protocol = OmegaConf.load(train_config_dir() / "protocol" / f"sdebnn_toy_{scale}.yaml")
    note = f"{scale} scale: {protocol.train.epochs} full-batch epochs (paper 800)"
    if scale != "paper":
        steps, paths = _workshop_settings(scale)
        note += f"; the workshop model with {steps} Euler steps (dt {1 / steps:g}, paper 0.01) and {paths} weight"
        note += " paths (paper 100)"
    return note + ". Data: the authors' `cos` toy (40 points; the paper does not name its dataset)."


def _run(context: ArtifactContext, method: str) -> dict[str, np.ndarray]:
    """The evaluation arrays of the (first seed's) run of `method`."""
    runs = {run_id: arrays for run_id, arrays in context.run_arrays().items() if run_method(run_id) == method}
    if not runs:
        raise ValueError(f"study {context.study}: no evaluated run of method {method!r}")
    return runs[min(runs)]


def _bands(ax, x: np.ndarray, samples: np.ndarray, colour: str = BAND_COLOUR) -> None:
    """Percentile bands of samples [S, N] over x [N]."""
    for alpha, low in zip((0.2, 0.35), PERCENTILES, strict=True):
        ax.fill_between(x, *np.percentile(samples, [low, 100 - low], axis=0), color=colour, alpha=alpha, lw=0)


def _predictive(ax, arrays: dict[str, np.ndarray], key: str, title: str) -> None:
    x, samples = arrays["x_grid"][:, 0], arrays[key]
    _bands(ax, x, samples)
    colours = plt.get_cmap("tab10")(np.arange(SAMPLE_LINES) + 1)
    for sample, colour in zip(samples[:SAMPLE_LINES], colours, strict=True):
        ax.plot(x, sample, color=colour, lw=1)
    ax.scatter(arrays["x_train"][:, 0], arrays["y_train"][:, 0], s=8, color="black", zorder=3, label="data")
    ax.set(xlabel="x", ylabel="y", title=title, ylim=(-3, 3))


def _predictive_panels(panels: list[tuple[dict[str, np.ndarray], str, str]]) -> Figure:
    """One panel of predictive bands per (arrays, predictive key, title), two panels a row (legible at the report's
    text width)."""
    columns = min(len(panels), 2)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 3.5 * rows), sharey=True, squeeze=False)
    for ax, (arrays, key, title) in zip(axes.flat, panels, strict=False):
        _predictive(ax, arrays, key, title)
    for ax in axes.flat[len(panels) :]:
        ax.remove()
    fig.tight_layout()
    return fig


def _trajectories(ax, arrays: dict[str, np.ndarray], key: str, dim: int, title: str) -> None:
    """Hidden-state paths [T, S, B, dim]: one colour per input; bands over weight samples, or lines."""
    times, paths = arrays["times"], arrays[key][..., dim]
    colours = plt.get_cmap("viridis")(np.linspace(0, 1, paths.shape[2]))
    for b, colour in enumerate(colours):
        if paths.shape[1] > 1:
            _bands(ax, times, paths[:, :, b].T, colour)
        ax.plot(times, np.median(paths[:, :, b], axis=1), color=colour, lw=1)
    ax.set(xlabel="depth t", ylabel=f"hidden state h_{dim}", title=title)


def _trajectory_figure(context: ArtifactContext, ode: str, sde: str) -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    _trajectories(axes[0], _run(context, ode), "hidden_paths", 0, "ODE-Net")
    _trajectories(axes[1], _run(context, sde), "hidden_paths", 0, "SDE-BNN")
    fig.tight_layout()
    return fig


@figure("sdebnn/fig1", uses="runs", run_file=TOY_PATHS, methods=("odenet", "sdebnn"), note=toy_note)
def hidden_trajectories(context: ArtifactContext) -> Figure:
    """Hidden-unit paths over depth of 7 inputs: deterministic for ODE-Net, uncertain for SDE-BNN."""
    return _trajectory_figure(context, "odenet", "sdebnn")


@figure("sdebnn/fig2", uses="runs", run_file=TOY_PATHS, methods=("sdebnn",), note=toy_note)
def prior_and_posterior_predictive(context: ArtifactContext) -> Figure:
    """Prior predictive (the untrained model: the drift starts at zero) and posterior predictive."""
    arrays = _run(context, "sdebnn")
    return _predictive_panels([(arrays, "prior_predictive", "prior"), (arrays, "posterior_predictive", "posterior")])


@figure("sdebnn/fig8", uses="runs", run_file=TOY_PATHS, methods=("sdebnn",), note=toy_note)
def augmented_dimensions(context: ArtifactContext) -> Figure:
    """Posterior paths of the state's three dimensions: the input's and the two augmented ones."""
    arrays = _run(context, "sdebnn")
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    titles = ("(a) non-augmented dimension", "(b) first augmented dimension", "(c) last augmented dimension")
    for dim, (ax, title) in enumerate(zip(axes, titles, strict=True)):
        _trajectories(ax, arrays, "hidden_paths", dim, title)
    fig.tight_layout()
    return fig


FIG10_TITLES = {
    "gp": "Gaussian Process",
    "deep_ensemble": "Deep Ensemble K=8",
    "mfvi": "MFVI",
    "laplace": "Laplace, last layer (ours, not in the paper)",
}
"""The panels of SDE-BNN paper Fig. 10: its three comparison models, then this project's Laplace approximation."""


def fig10_note(scale: str) -> str:
    return f"{toy_note(scale)} The last panel, a Laplace approximation, is this project's addition, not the paper's."


@figure("sdebnn/fig10", uses="runs", run_file=TOY_PATHS, methods=tuple(FIG10_TITLES), note=fig10_note)
def baseline_posteriors(context: ArtifactContext) -> Figure:
    """Posterior predictives of a Gaussian process, a deep ensemble (K = 8) and mean-field VI (the paper's), and
    of a last-layer Laplace approximation after MAP training (Daxberger et al. 2021; this project's addition)."""
    return _predictive_panels([(_run(context, m), "posterior_predictive", t) for m, t in FIG10_TITLES.items()])


@figure("sdebnn_ws/fig1", uses="runs", run_file=TOY_PATHS, methods=("ws_odenet", "ws_sdebnn"), note=toy_note)
def workshop_hidden_trajectories(context: ArtifactContext) -> Figure:
    """The workshop model's version of SDE-BNN paper Fig. 1."""
    return _trajectory_figure(context, "ws_odenet", "ws_sdebnn")


@figure("sdebnn_ws/fig2", uses="runs", run_file=TOY_PATHS, methods=("ws_sdebnn",), note=toy_note)
def prior_function_samples(context: ArtifactContext) -> Figure:
    """Functions drawn from the prior (the untrained model), non-monotonic thanks to the augmented state."""
    arrays = _run(context, "ws_sdebnn")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    x = arrays["x_grid"][:, 0]
    for sample in arrays["prior_predictive"][:20]:
        ax.plot(x, sample, lw=1, alpha=0.8)
    ax.set(xlabel="x", ylabel="f(x)", title="prior samples")
    fig.tight_layout()
    return fig


@figure("sdebnn_ws/fig3", uses="runs", run_file=TOY_PATHS, methods=("ws_sdebnn",), note=toy_note)
def bias_marginal(context: ArtifactContext) -> Figure:
    """A 2D marginal of the posterior weights at t = 1: the last layer's first two biases, with a Gaussian KDE."""
    arrays = _run(context, "ws_sdebnn")
    weights = arrays["weights_at_t1"]
    state_dim = arrays["hidden_paths"].shape[-1]  # the last layer's biases: the last `state_dim` weights
    pair = weights[:, -state_dim:][:, :2]
    from scipy.stats import gaussian_kde  # here: scipy.stats takes a second to import, the other figures skip it

    kde = gaussian_kde(pair.T)
    lo, hi = pair.min(0), pair.max(0)
    grid = np.mgrid[lo[0] : hi[0] : 80j, lo[1] : hi[1] : 80j]
    density = kde(grid.reshape(2, -1)).reshape(grid.shape[1:])
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(*pair.T, s=3, alpha=0.3, color=BAND_COLOUR)
    ax.contour(grid[0], grid[1], density, levels=8, cmap="Blues")
    ax.set(xlabel="bias 1 at t = 1", ylabel="bias 2 at t = 1", title=f"{len(pair)} posterior samples")
    fig.tight_layout()
    return fig


@figure("sdebnn_ws/fig4", uses="runs", run_file=TOY_PATHS, methods=("ws_sdebnn",), note=toy_note)
def workshop_posterior_predictive(context: ArtifactContext) -> Figure:
    """Posterior percentiles and samples of the workshop model on the non-monotonic toy."""
    return _predictive_panels([(_run(context, "ws_sdebnn"), "posterior_predictive", "posterior")])


MODEL_NAMES = {"sdebnn": "SDE BNN", "odenet": "ODEnet"}
DATASET_COLUMNS = {"sdebnn_toy": "1D Regression", "mnist": "MNIST", "cifar10": "CIFAR-10"}
# Table 2's hyper-parameters and where each lives in a run's resolved config (None: not a setting of that model)
HYPERPARAMETERS = {
    "Learning Rate": lambda c: c["optim"]["lr"],
    "Batch Size": lambda c: c["train"]["batch_size"],
    "Activation": lambda c: c["method"]["activation"],
    "Epochs": lambda c: c["train"]["epochs"],
    "Augment dim.": lambda c: c["method"]["augment"],
    "# blocks": lambda c: 1,
    "Diffusion σ": lambda c: c["method"]["sigma"],
    "KL coef.": lambda c: c["method"]["kl_weight"],
    "# Solver Steps": lambda c: c["method"]["solver"]["num_steps"],
    "Drift f_x dim.": lambda c: "-".join(map(str, c["method"]["hidden_widths"])),
    "Drift f_w dim.": lambda c: "-".join(map(str, c["method"]["drift_widths"])) if c["method"]["sigma"] else None,
    "# Posterior Samples": lambda c: c["method"]["num_samples"] if c["method"]["sigma"] else None,
}


@table("sdebnn/table2", uses="runs", run_file=RUN_CONFIG, methods=tuple(MODEL_NAMES), note=toy_note)
def hyperparameters(context: ArtifactContext) -> pd.DataFrame:
    """Table 2 rendered from the resolved configs of the runs (config.yaml), so it cannot drift from them."""
    rows = {}
    for run_id, config in sorted(context.run_configs().items()):
        method = run_method(run_id)
        column = DATASET_COLUMNS.get(config["dataset"]["name"], config["dataset"]["name"])
        for name, read in HYPERPARAMETERS.items():
            value = read(config)
            if value is not None:
                rows.setdefault((f"{MODEL_NAMES[method]}: {name}", column), str(value))
    return pd.DataFrame(
        [{"row": row, "column": column, "ours": value, "ours_error": None, "n_runs": None}
         for (row, column), value in rows.items()]
    )  # fmt: skip


@table("sdebnn/table5", uses="nothing", note="A listing of each method family's properties (the paper's App. C.5).")
def method_properties(context: ArtifactContext) -> pd.DataFrame:
    """Table 5 from the method registry (bnnrepro.methods.METHOD_FAMILIES)."""
    columns = ("Posterior over Stochastic Process", "Flexible Approximate Posterior", "Adaptive Computation")
    rows = []
    for family, entry in METHOD_FAMILIES.items():
        cells = {c: "✓" if has else "✗" for c, has in zip(columns, entry["properties"], strict=True)}
        cells["References"] = entry["references"]
        cells["Implemented here as"] = ", ".join(entry["implemented_by"]) or "–"
        rows += [{"row": family, "column": c, "ours": v, "ours_error": None, "n_runs": None} for c, v in cells.items()]
    return pd.DataFrame(rows)

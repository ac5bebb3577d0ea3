"""Artifacts of the latent-SDE study: Xu et al. 2022 (the SDE-BNN paper) Fig. 3 (posterior paths and the joint
of (z_t0, z_t1) under two Cauchy observations) and Fig. 4 (gradient variance of the three KL estimators over
training), drawn from the evaluations of bnnrepro.methods.latent_sde."""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.layout import evaluation_file, run_method
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import load_study

STUDY = "sdebnn_latent"
ESTIMATOR_LABELS = {"stl": "STL", "fmc": "Full Monte Carlo", "ckl": "Li et al. (2020)"}  # SDE-BNN Fig. 4's legend
ESTIMATOR_COLOURS = {"stl": "tab:red", "fmc": "tab:blue", "ckl": "tab:green"}
PATH_LINES = 60  # sample paths drawn in Fig. 3 (left)
PATH_COLOUR = "tab:blue"


def fig3_note(scale: str) -> str:
    protocol = OmegaConf.load(train_config_dir() / "protocol" / f"sdebnn_two_obs_{scale}.yaml")
    return (
        f"{scale} scale: {protocol.train.epochs} Adam steps of 20 paths (the authors' script, `xwinxu/bayeSDE` "
        "`examples/torch/sdebnn_toy1d.py`: 300; the paper states no settings). The script's KL weight 0.2/3, but the "
        "ELBO instead of its importance-weighted bound. Both "
        "observations are of z_3 (as in the script); the joint is drawn at the interval's ends t0 = 0, t1 = 3."
    )


def fig4_note(scale: str) -> str:
    runs = [run for run in load_study(STUDY).runs(scale) if run.method == "latent_gradvar"]
    hparams = dict(runs[0].hparams)
    steps = sorted({dict(run.hparams)["train.epochs"] for run in runs})
    seeds = sorted({run.seed for run in runs})
    return (
        f"{scale} scale: variance after {', '.join(map(str, steps))} training steps (the authors' script, "
        f"`xwinxu/bayeSDE` `examples/grad_check/stl.py`: up to 3000), {hparams['method.gradient_samples']} "
        "single-path gradient draws per estimator (script: 2000), "
        f"Euler-Maruyama dt {hparams['method.dt']} (script: 3e-3), {len(seeds)} seed(s). Data: the script's "
        "segmented cosine, not the paper's unspecified 'exponentiated Brownian motion'."
    )


def _runs(context: ArtifactContext, method: str) -> dict[str, dict[str, np.ndarray]]:
    runs = {run_id: arrays for run_id, arrays in context.run_arrays().items() if run_method(run_id) == method}
    if not runs:
        raise ValueError(f"study {context.study}: no evaluated run of method {method!r}")
    return runs


@figure(
    "sdebnn/fig3", uses="runs", run_file=evaluation_file("latent_paths"), methods=("latent_two_obs",), note=fig3_note
)
def expressive_posterior(context: ArtifactContext) -> Figure:
    """Left: posterior sample paths z_t with the observations. Right: the joint of (z_t0, z_t1), scatter and
    Gaussian KDE, with the marginal histograms."""
    runs = _runs(context, "latent_two_obs")
    arrays = runs[min(runs)]
    fig = plt.figure(figsize=(10, 4))
    left, right_side = fig.add_gridspec(1, 2, wspace=0.25)
    grid = right_side.subgridspec(2, 2, width_ratios=(4, 1), height_ratios=(1, 4), wspace=0.05, hspace=0.05)
    paths = fig.add_subplot(left)
    for path in arrays["paths"][:PATH_LINES]:
        paths.plot(arrays["times"], path, color=PATH_COLOUR, lw=0.6, alpha=0.4)
    paths.scatter(arrays["observation_times"], arrays["observations"], marker="x", s=60, color="black", zorder=3,
                  label="observations (Cauchy likelihood)")  # fmt: skip
    paths.set(xlabel="time t", ylabel="z_t", title="approximate posterior samples")
    paths.legend(loc="upper left", fontsize=8)

    joint = fig.add_subplot(grid[1, 0])
    top, right = fig.add_subplot(grid[0, 0], sharex=joint), fig.add_subplot(grid[1, 1], sharey=joint)
    samples = arrays["joint"]
    t0, t1 = arrays["joint_times"]
    joint.scatter(*samples.T, s=2, alpha=0.2, color=PATH_COLOUR)
    lo, hi = np.percentile(samples, [0.5, 99.5], axis=0)
    mesh = np.mgrid[lo[0] : hi[0] : 80j, lo[1] : hi[1] : 80j]
    from scipy.stats import gaussian_kde  # here: scipy.stats takes a second to import, the other figures skip it

    density = gaussian_kde(samples.T)(mesh.reshape(2, -1)).reshape(mesh.shape[1:])
    joint.contour(mesh[0], mesh[1], density, levels=8, cmap="Blues")
    joint.set(xlabel=f"z at t0 = {t0:g}", ylabel=f"z at t1 = {t1:g}", xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]))
    top.hist(samples[:, 0], bins=60, color=PATH_COLOUR, alpha=0.7)
    right.hist(samples[:, 1], bins=60, color=PATH_COLOUR, alpha=0.7, orientation="horizontal")
    top.set_title(f"joint and marginals ({len(samples)} samples)", fontsize=10)
    top.set_axis_off()
    right.set_axis_off()
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.12, top=0.9)
    return fig


def gradient_variances(context: ArtifactContext) -> tuple[np.ndarray, dict[str, list[list[float]]]]:
    """The evaluated training steps, and per KL estimator the gradient variance of each seed at each step."""
    runs = list(_runs(context, "latent_gradvar").values())
    estimators = [str(e) for e in runs[0]["estimators"]]
    steps = np.array(sorted({int(arrays["iterations"]) for arrays in runs}))
    variance = {e: [[] for _ in steps] for e in estimators}  # estimator -> per step -> seeds
    for arrays in runs:
        position = int(np.searchsorted(steps, int(arrays["iterations"])))
        for e, value in zip(estimators, arrays["variance"], strict=True):
            variance[e][position].append(float(value))
    return steps, variance


def variance_ratios_to_stl(context: ArtifactContext) -> dict[str, float]:
    """The full Monte Carlo's and the drift-only estimator's gradient variance over STL's at the last evaluated
    step, means over seeds (the factor 'roughly 4' of the caption)."""
    _, variance = gradient_variances(context)
    return {e: float(np.mean(variance[e][-1]) / np.mean(variance["stl"][-1])) for e in ("fmc", "ckl")}


@figure("sdebnn/fig4", uses="runs", run_file=evaluation_file("gradient_variance"), methods=("latent_gradvar",),
        note=fig4_note)  # fmt: skip
def gradient_variance(context: ArtifactContext) -> Figure:
    """Variance of the gradient w.r.t. the drift net's parameters, averaged over the parameters, against training
    steps, per KL estimator: the mean over seeds, with their range shaded."""
    steps, variance = gradient_variances(context)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for e in ("stl", "fmc", "ckl"):
        values = variance[e]
        mean = np.array([np.mean(v) for v in values])
        ax.plot(steps, mean, marker="o", color=ESTIMATOR_COLOURS[e], label=ESTIMATOR_LABELS[e])
        if max(len(v) for v in values) > 1:
            ax.fill_between(steps, [min(v) for v in values], [max(v) for v in values], color=ESTIMATOR_COLOURS[e],
                            alpha=0.2, lw=0)  # fmt: skip
    ratios = ", ".join(f"{ESTIMATOR_LABELS[e]} {r:.1f}x" for e, r in variance_ratios_to_stl(context).items())
    ax.set(xlabel="training iteration", ylabel="gradient variance (mean over parameters)", yscale="log",
           title=f"variance / STL's after {steps[-1]} steps: {ratios}")  # fmt: skip
    ax.title.set_fontsize(9)
    ax.legend()
    fig.tight_layout()
    return fig

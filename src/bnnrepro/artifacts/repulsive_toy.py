"""Artifacts of the repulsive-ensembles toy study (D'Angelo & Fortuin 2021, Figs. 1, 2, 3 and F.1), drawn from the
`posterior_arrays` evaluation of each run (bnnrepro.evaluations.posterior_arrays): predictive samples on the 1D grid,
predictive-entropy maps, and the particles of the samplers with the targets' exact reference samples.

The paper gives no numbers for these figures; each panel adds our own quantitative checks:
the predictive spread between the two training clusters and its KL divergence from HMC's there (Fig. 1), the mean
entropy far from the data (Fig. 3), and the MMD to the target (Figs. 2, F.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.data.toy_regression import REPULSIVE_CLUSTERS
from bnnrepro.distributions import normal_kl
from bnnrepro.evaluations.posterior_arrays import EVALUATION as FIGURE_ARRAYS
from bnnrepro.inference.posterior_targets import SAMPLING_DENSITIES
from bnnrepro.layout import evaluation_file
from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import load_study

STUDY = "repulsive_toy"
RUN_FILE = evaluation_file(FIGURE_ARRAYS)
LABELS = {
    "de": "DE", "svgd": "SVGD", "kde_wgd": "kde-WGD", "sge_wgd": "sge-WGD", "ssge_wgd": "ssge-WGD",
    "fsvgd": "f-SVGD", "kde_fwgd": "kde-fWGD", "sge_fwgd": "sge-fWGD", "ssge_fwgd": "ssge-fWGD", "hmc": "HMC",
}  # fmt: skip
ENSEMBLES = tuple(m for m in LABELS if m != "hmc")
SAMPLERS = ("svgd", "kde_wgd", "sge_wgd", "ssge_wgd", "de")  # Fig. 2's panels left to right, then the collapse
PANELS_PER_ROW = 5
FAR_FIELD_RADIUS = 11.0  # the authors' far-field OOD ring starts at r = 11 (repulsive_ensembles, not in the paper)
# Panel limits (x1, x2) of the samplers: the Gaussian's mean +- about 4 standard deviations; the funnel's x as in the
# authors' notebook ([-12, 12]) and v within +-3 standard deviations.
SAMPLER_LIMITS = {"gaussian_target": ((-5.0, 3.5), (-6.5, 8.0)), "funnel_target": ((-12.0, 12.0), (-9.0, 9.0))}
TARGET_MASS = (0.25, 0.5, 0.75, 0.95)  # the target's contours enclose these probability masses


def seed_runs(
    context: ArtifactContext, dataset: str, methods: tuple[str, ...]
) -> dict[int, dict[str, dict[str, np.ndarray]]]:
    """{seed: {method: evaluation arrays}} of the runs of `methods` on `dataset`, seeds in order, methods in the
    order of `methods`."""
    by_seed: dict[int, dict[str, dict[str, np.ndarray]]] = {}
    for run_id, arrays in context.run_arrays().items():
        method, run_dataset = run_id.split("/")[:2]
        if run_dataset == dataset and method in methods:
            by_seed.setdefault(int(run_id.rpartition("seed=")[2]), {})[method] = arrays
    if not by_seed:
        raise ValueError(f"study {context.study}: no evaluated run on {dataset!r} of {', '.join(methods)}")
    return {s: {m: by_seed[s][m] for m in methods if m in by_seed[s]} for s in sorted(by_seed)}


def _runs(context: ArtifactContext, dataset: str, methods: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """The evaluation arrays of the first seed's run of each of `methods` on `dataset` (what the figures draw)."""
    first: dict[str, dict[str, np.ndarray]] = {}
    for runs in seed_runs(context, dataset, methods).values():
        first.update({m: a for m, a in runs.items() if m not in first})
    return {m: first[m] for m in methods if m in first}


def _panel_grid(count: int, width: float, height: float) -> tuple[Figure, list[Axes]]:
    """`count` panels in as few rows of at most PANELS_PER_ROW as possible, filled evenly."""
    rows = math.ceil(count / PANELS_PER_ROW)
    columns = math.ceil(count / rows)
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def _settings(scale: str, dataset: str) -> str:
    """The study's settings on `dataset` at `scale`: methods, their grid values and the protocol's epochs."""
    runs = [run for run in load_study(STUDY).runs(scale) if run.dataset == dataset]
    protocol = OmegaConf.load(train_config_dir() / "protocol" / f"{dataset}_{scale}.yaml").train
    groups: dict[str, list[str]] = {}
    for run in runs:
        values = ", ".join(f"{k.rsplit('.', 1)[-1]} {v}" for k, v in run.hparams) or "config defaults"
        groups.setdefault(values, []).append(LABELS[run.method])
    described = "; ".join(f"{', '.join(methods)}: {values}" for values, methods in groups.items())
    text = f"{scale} scale: {described}; {protocol.epochs} epochs at batch {protocol.batch_size}"
    if any(run.method == "hmc" for run in runs):
        chains = OmegaConf.load(train_config_dir() / "method" / "hmc.yaml").num_chains
        text += f" (HMC: {chains} chains on the full batch)"
    return text


def regression_note(scale: str) -> str:
    return (
        f"{_settings(scale, 'repulsive_toy')}. The paper states no setting; the authors' README: 100 particles, 5000 "
        "iterations at lr 1e-2 (the paper scale). Gaussian likelihood with std 1 (the code's default, "
        "`ratschlab/repulsive_ensembles` `utils/config.py`) on the code's data "
        "(`data/toy_regression/generete_regression.py`); HMC (not in the authors' code) is Pyro's NUTS from prior "
        "draws, chains run one after another."
    )


def classification_note(scale: str) -> str:
    grid = OmegaConf.load(train_config_dir() / "dataset" / "repulsive_2d.yaml").entropy_grid
    protocol = OmegaConf.load(train_config_dir() / "protocol" / f"repulsive_2d_{scale}.yaml")
    grid = OmegaConf.select(protocol, "dataset.entropy_grid", default=grid)
    return (
        f"{_settings(scale, 'repulsive_2d')}; entropy on a {grid} x {grid} grid over [-20, 20]^2 (code: 300 x 300, "
        "`ratschlab/repulsive_ensembles` `experiments/exp_2d_class.py`). The paper states no setting; the authors' "
        "README: 100 particles, 10000 iterations at lr 1e-2 (the paper scale). fWGD/f-SVGD repel the logits on the "
        "training minibatch (the code's default, `utils/config.py`, repels probabilities: "
        "config/train/method/posterior_network.yaml says why not)."
    )


def sampler_note(dataset: str) -> Callable[[str], str]:
    def note(scale: str) -> str:
        return (
            f"{_settings(scale, dataset)}. The paper states no setting: targets, initialisation and step counts are "
            "the authors' notebook's; the kernel is the median-heuristic RBF for every method (the notebook fixes "
            "h = 0.5 for SVGD, KDE and SGE). MMD with h = 0.5 to the exact reference samples."
        )

    return note


# --- Fig. 1 -----------------------------------------------------------------------------------------------------


def _gap(x: np.ndarray) -> np.ndarray:
    """Where x lies between the two training clusters."""
    (_, low), (high, _) = REPULSIVE_CLUSTERS
    return (x > low) & (x < high)


def _predictive_moments(runs: dict[str, dict[str, np.ndarray]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {m: (a["posterior_predictive"].mean(0), a["posterior_predictive"].std(0)) for m, a in runs.items()}


def gap_kl(runs: dict[str, dict[str, np.ndarray]]) -> dict[str, float]:
    """Per ensemble method of one seed's runs {method: arrays}, the mean over the gap between the clusters of
    KL(HMC || method) between the Gaussian predictive marginals; empty without an HMC run."""
    moments = _predictive_moments(runs)
    if "hmc" not in moments:
        return {}
    gap = _gap(runs["hmc"]["x_grid"][:, 0])
    return {
        method: float(normal_kl(*(torch.as_tensor(m[gap]) for m in (*moments["hmc"], *moments[method]))).mean())
        for method in moments
        if method != "hmc"
    }


@figure(
    "repulsive/fig1",
    uses="runs",
    run_file=RUN_FILE,
    methods=(*ENSEMBLES, "hmc"),
    datasets=("repulsive_toy",),
    note=regression_note,
)
def regression_against_hmc(context: ArtifactContext) -> Figure:
    """Predictive mean and +-1, 2, 3 std of each method's functions (the authors' plot: the spread of the members,
    no observation noise), the training data and the true x sin x (dashed). Titles: the mean std in the gap between
    the clusters, and there the mean KL(HMC || method) between the Gaussian predictive marginals (small when a
    method's in-between uncertainty matches HMC's, large when it is overconfident)."""
    runs = _runs(context, "repulsive_toy", (*ENSEMBLES, "hmc"))
    moments = _predictive_moments(runs)
    kl = gap_kl(runs)
    fig, axes = _panel_grid(len(runs), 3.6, 3.0)
    for ax, (method, arrays) in zip(axes, runs.items(), strict=True):
        x, (mean, std) = arrays["x_grid"][:, 0], moments[method]
        for k, alpha in ((3, 0.15), (2, 0.25), (1, 0.35)):
            ax.fill_between(x, mean - k * std, mean + k * std, color="tab:blue", alpha=alpha, lw=0)
        ax.plot(x, mean, color="tab:blue", lw=1.2)
        ax.plot(x, arrays["y_grid"][:, 0], "k--", lw=0.8)
        ax.scatter(arrays["x_train"][:, 0], arrays["y_train"][:, 0], s=5, color="black", zorder=3)
        gap = _gap(x)
        title = f"{LABELS[method]}\ngap std {std[gap].mean():.2f}"
        if method in kl:
            title += f", gap KL(HMC || ·) {kl[method]:.2f}"
        ax.set(title=title, ylim=(-12, 10), xticks=[], yticks=[])
    fig.tight_layout()
    return fig


# --- Fig. 3 -----------------------------------------------------------------------------------------------------


def far_entropy(runs: dict[str, dict[str, np.ndarray]]) -> dict[str, float]:
    """Per method of one seed's runs {method: arrays} (HMC included), the mean predictive entropy at distance >= 11
    from the origin (far from the data) on the 2-D classification task."""
    entropies = {}
    for method, arrays in runs.items():
        x1, x2 = np.meshgrid(arrays["grid_axis"], arrays["grid_axis"])
        entropies[method] = float(arrays["entropy"][np.hypot(x1, x2) >= FAR_FIELD_RADIUS].mean())
    return entropies


@figure(
    "repulsive/fig3",
    uses="runs",
    run_file=RUN_FILE,
    methods=(*ENSEMBLES, "hmc"),
    datasets=("repulsive_2d",),
    note=classification_note,
)
def classification_entropy(context: ArtifactContext) -> Figure:
    """Predictive entropy (nats, 0 to log 5) over [-20, 20]^2 with the training points; titles: the mean entropy
    at distance >= 11 from the origin (far from the data)."""
    runs = _runs(context, "repulsive_2d", (*ENSEMBLES, "hmc"))
    far_field = far_entropy(runs)
    fig, axes = _panel_grid(len(runs), 3.4, 3.2)
    for ax, (method, arrays) in zip(axes, runs.items(), strict=True):
        axis, entropy = arrays["grid_axis"], arrays["entropy"]
        x1, x2 = np.meshgrid(axis, axis)
        image = ax.contourf(x1, x2, entropy, levels=np.linspace(0, math.log(5), 21), cmap="viridis", extend="max")
        ax.scatter(*arrays["x_train"].T, c=arrays["y_train"], cmap="tab10", vmin=0, vmax=9, s=3, edgecolors="none")
        ax.set(title=f"{LABELS[method]}\nfar-field entropy {far_field[method]:.2f}", xticks=[], yticks=[])
        ax.set_aspect("equal")
    fig.colorbar(image, ax=axes, shrink=0.8, label="predictive entropy (nats)")
    return fig


# --- Figs. 2 and F.1 --------------------------------------------------------------------------------------------


def _smoothed_marginal(samples: np.ndarray, grid: np.ndarray, bandwidth: float) -> np.ndarray:
    """A Gaussian kernel density estimate of 1-D samples on `grid` with a given bandwidth (also for samples that
    collapsed to one point, where scipy's estimate of the bandwidth fails)."""
    z = (grid[:, None] - samples[None, :]) / bandwidth
    return np.exp(-0.5 * z**2).sum(1) / (len(samples) * bandwidth * math.sqrt(2 * math.pi))


def _marginals(ax: Axes, particles: np.ndarray, reference: np.ndarray, limits) -> None:
    """KDEs of the 1-D marginals of the target's samples (red) and the particles (blue) above and right of `ax`,
    with Silverman's bandwidth of the target samples for both."""
    for dim, bounds in enumerate(limits):
        inset = ax.inset_axes([0, 1.02, 1, 0.22] if dim == 0 else [1.02, 0, 0.22, 1])
        grid = np.linspace(*bounds, 200)
        bandwidth = 1.06 * reference[:, dim].std() * len(reference) ** -0.2
        for samples, colour in ((reference, "tab:red"), (particles, "tab:blue")):
            density = _smoothed_marginal(samples[:, dim], grid, bandwidth)
            curve = (grid, density) if dim == 0 else (density, grid)
            inset.plot(*curve, color=colour, lw=1)
        if dim == 0:
            inset.set_xlim(bounds)
        else:
            inset.set_ylim(bounds)
        inset.set_axis_off()


def _target_contours(ax: Axes, dataset: str, reference: np.ndarray, limits) -> None:
    """Contours of the target's density that enclose TARGET_MASS of it, located by the exact samples' densities."""
    log_density = SAMPLING_DENSITIES[dataset]
    x1, x2 = np.meshgrid(*(np.linspace(*bounds, 200) for bounds in limits))
    grid = torch.as_tensor(np.stack([x1, x2], -1), dtype=torch.float64)
    sample_levels = log_density(torch.as_tensor(reference, dtype=torch.float64)).numpy()
    levels = np.quantile(sample_levels, sorted(1 - np.asarray(TARGET_MASS)))
    ax.contour(x1, x2, log_density(grid).numpy(), levels=levels, colors="tab:red", linestyles="solid", linewidths=0.8)


def _sampler_figure(context: ArtifactContext, dataset: str) -> Figure:
    runs = _runs(context, dataset, SAMPLERS)
    limits = SAMPLER_LIMITS[dataset]
    fig, axes = _panel_grid(len(runs), 3.4, 3.6)
    for ax, (method, arrays) in zip(axes, runs.items(), strict=True):
        particles, reference = arrays["particles"], arrays["reference"]
        _target_contours(ax, dataset, reference, limits)
        ax.scatter(*particles.T, s=4, color="tab:blue", zorder=3)
        _marginals(ax, particles, reference, limits)
        ax.set(xlim=limits[0], ylim=limits[1], xticks=[], yticks=[])
        ax.set_xlabel(f"{LABELS[method]}, MMD {float(arrays['mmd']):.3f}")
    fig.tight_layout()
    return fig


@figure(
    "repulsive/fig2",
    uses="runs",
    run_file=RUN_FILE,
    methods=SAMPLERS,
    datasets=("gaussian_target",),
    note=sampler_note("gaussian_target"),
)
def single_gaussian(context: ArtifactContext) -> Figure:
    """Final particles (blue) on the target's density contours (red) for SVGD, KDE-, SGE- and SSGE-WGD, then the
    deep ensemble; insets: 1-D marginals of the target samples (red) and the particles (blue)."""
    return _sampler_figure(context, "gaussian_target")


@figure(
    "repulsive/figF.1",
    uses="runs",
    run_file=RUN_FILE,
    methods=SAMPLERS,
    datasets=("funnel_target",),
    note=sampler_note("funnel_target"),
)
def funnel(context: ArtifactContext) -> Figure:
    """As Fig. 2 on Neal's funnel (x horizontal, v vertical)."""
    return _sampler_figure(context, "funnel_target")

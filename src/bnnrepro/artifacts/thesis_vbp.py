"""Artifacts of the VBP chapter of the Haußmann (2021) thesis (Chapter 3): the expected KL term over the binary
activations, §3.1.5.1, Figs. 3.3 and 3.4."""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import figure
from bnnrepro.inference.activation_kl import expected_activation_kl, sampled_expected_activation_kl

STUDY = "thesis_vbp"
MU = np.linspace(-5, 5, 201)
SIGMAS = (0.1, 0.5, 1.0, 2.0, 3.0)
C = 1.0  # "computed with C = 1" (Figs. 3.3 and 3.4)
GRID_NOTE = (
    "One line per σ in {0.1, 0.5, 1, 2, 3} over μ in [-5, 5] (201 points), C = 1; the thesis states neither the axes "
    "nor the ranges of its plot."
)
FIG34_SAMPLES = {"smoke": 10**3, "default": 10**5, "paper": 10**6}
"""Samples per (μ, σ) pair of Fig. 3.4 by scale; the caption's "one million points" at paper scale (about 13 s on one
core, against 2 s at default)."""
FIG34_SEED = 0


def _curves(values: np.ndarray, ylabel: str) -> tuple[Figure, plt.Axes]:
    """One line per σ of `values` [σ, μ] against μ."""
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = plt.colormaps["viridis"](np.linspace(0, 0.9, len(SIGMAS)))
    for sigma, row, colour in zip(SIGMAS, values, colours, strict=True):
        ax.plot(MU, row, color=colour, label=f"σ = {sigma:g}")
    ax.set(xlabel="μ", ylabel=ylabel)
    ax.legend(loc="upper right")
    return fig, ax


def _analytic() -> np.ndarray:
    return expected_activation_kl(MU[None, :], np.array(SIGMAS)[:, None], C)


@figure("thesis/fig3.3", uses="nothing", note=f"Exact closed form (eq. 3.9), as in the thesis. {GRID_NOTE}")
def analytic_expected_kl(context: ArtifactContext) -> Figure:
    fig, ax = _curves(_analytic(), "eq. (3.9): C(μΦ(μ/σ) + σφ(μ/σ) − max(0, μ))")
    ax.set(title="analytic expected KL, C = 1")
    fig.tight_layout()
    return fig


def sampled_note(scale: str) -> str:
    return (
        f"{FIG34_SAMPLES[scale]:,} samples per (μ, σ) pair (thesis 1,000,000), seed {FIG34_SEED}; the same "
        f"standard-normal draws for every pair. {GRID_NOTE}"
    )


@figure("thesis/fig3.4", uses="nothing", note=sampled_note)
def sampled_expected_kl(context: ArtifactContext) -> Figure:
    sigmas = np.array(SIGMAS)[:, None]
    rng = np.random.default_rng(FIG34_SEED)
    sampled = sampled_expected_activation_kl(MU[None, :], sigmas, C, FIG34_SAMPLES[context.scale], rng)
    fig, ax = _curves(sampled, "E_q(a)[soft(Ca)] − soft(Cμ), sampled")
    maxima = "\n".join(
        f"σ = {sigma:g}: {mc:.4f} vs {exact:.4f}"
        for sigma, mc, exact in zip(SIGMAS, sampled.max(1), _analytic().max(1), strict=True)
    )
    ax.text(0.02, 0.97, f"max over μ, sampled vs eq. (3.9):\n{maxima}", transform=ax.transAxes, va="top",
            fontsize=8, bbox={"facecolor": "white", "alpha": 0.8})  # fmt: skip
    ax.set(title=f"sampled expected KL, C = 1, {FIG34_SAMPLES[context.scale]:,} samples per (μ, σ)")
    fig.tight_layout()
    return fig

"""The caption claims of the SDE-BNN paper's gradient-variance figure (Fig. 4):
the checks of the paper's words on our results."""

from __future__ import annotations

import math

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.sdebnn_latent import gradient_variances

ROUGHLY_4 = (4 / math.sqrt(2), 4 * math.sqrt(2))
"""'A factor of roughly 4': within a factor sqrt(2) of 4 (2.83 to 5.66), i.e. nearer 4 than 2 or 8."""


@claim("sdebnn/fig4", "Our new gradient estimator (STL) reduces variance by a factor of roughly 4.")
def stl_reduces_gradient_variance(context: ArtifactContext) -> Outcome:
    """Both other estimators' gradient variance over STL's at the last evaluated step, per seed: holds when every
    ratio lies in `ROUGHLY_4`, contradicted when one lies outside it. The ratios' own sampling error (variances of
    thousands of gradient draws, averaged over the drift net's parameters) is a few percent, far inside the
    interval's width, so each seed's ratio is read as it is."""
    require(bool(context.run_files), "evaluated gradient-variance run")
    _, variance = gradient_variances(context)
    ratios = {e: [v / s for v, s in zip(variance[e][-1], variance["stl"][-1], strict=True)] for e in ("fmc", "ckl")}
    inside = [ROUGHLY_4[0] <= r <= ROUGHLY_4[1] for values in ratios.values() for r in values]
    listed = ", ".join(f"{e} / STL {' '.join(f'{r:.1f}x' for r in values)}" for e, values in ratios.items())
    return Outcome(all(inside), f"{listed} (per seed; roughly 4: {ROUGHLY_4[0]:.2f}x to {ROUGHLY_4[1]:.2f}x)")

"""The caption claims of the SDE-BNN paper's gradient-variance figure (Fig. 4):
the checks of the paper's words on our results."""

from __future__ import annotations

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.sdebnn_latent import variance_ratios_to_stl


@claim("sdebnn/fig4", "Our new gradient estimator (STL) reduces variance by a factor of roughly 4.")
def stl_reduces_gradient_variance(context: ArtifactContext) -> Outcome:
    """Holds when both other estimators' gradient variance over STL's, at the last evaluated step, lies in [2, 8]
    (a factor of 2 around 'roughly 4')."""
    require(bool(context.run_files), "evaluated gradient-variance run")
    ratios = variance_ratios_to_stl(context)
    listed = ", ".join(f"{name} / STL {value:.1f}x" for name, value in ratios.items())
    return Outcome(all(2 <= r <= 8 for r in ratios.values()), listed)

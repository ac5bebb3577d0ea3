"""The caption claims of the SDE-BNN 1-D toy (SDE-BNN Fig. 2; workshop Fig. 4):
the checks of the paper's words on our results."""

from __future__ import annotations

import numpy as np

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.layout import run_method

DIP = (-0.7, -0.5)  # where the non-monotonic toy data dip (x), the feature a too-smooth posterior misses


def _fits_the_dip(context: ArtifactContext, method: str) -> Outcome:
    """Holds when the posterior predictive median's mean absolute error at the training points in the dip is at
    most twice its mean absolute error at the other training points (the dip fitted about as well as the rest)."""
    runs = {run: arrays for run, arrays in context.run_arrays().items() if run_method(run) == method}
    require(bool(runs), f"evaluated {method} run")
    arrays = runs[min(runs)]
    x, y = arrays["x_train"][:, 0], arrays["y_train"][:, 0]
    median = np.interp(x, arrays["x_grid"][:, 0], np.median(arrays["posterior_predictive"], axis=0))
    error = np.abs(median - y)
    dip = (x >= DIP[0]) & (x <= DIP[1])
    return Outcome(
        bool(error[dip].mean() <= 2 * error[~dip].mean()),
        f"mean |median - y| at the {int(dip.sum())} points with x in [{DIP[0]}, {DIP[1]}]: {error[dip].mean():.3f}; "
        f"at the other {int((~dip).sum())}: {error[~dip].mean():.3f}",
    )


@claim("sdebnn/fig2", "The posterior predictive fits the non-monotonic toy data.")
def sdebnn_posterior_fits_the_data(context: ArtifactContext) -> Outcome:
    """See `_fits_the_dip`."""
    return _fits_the_dip(context, "sdebnn")


@claim("sdebnn_ws/fig4", "Continuous-depth Bayesian neural networks can have expressive approximate posteriors.")
def workshop_posterior_fits_the_data(context: ArtifactContext) -> Outcome:
    """The posterior follows the data where they turn (the published one follows their dip)."""
    return _fits_the_dip(context, "ws_sdebnn")

"""The caption claims of the SDE-BNN 1-D toy (SDE-BNN Fig. 2; workshop Fig. 4):
the checks of the paper's words on our results."""

from __future__ import annotations

import numpy as np

from bnnrepro.artifacts.claims import Outcome, claim, require
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.layout import run_method

DIP = (-0.7, -0.5)  # where the non-monotonic toy data dip (x), the feature a too-smooth posterior misses


def _fits_the_dip(context: ArtifactContext, method: str) -> Outcome:
    """For every evaluated run of `method`: the posterior predictive median's mean absolute error at the training
    points must be at most half a constant predictor's (the training targets' mean: the model learned the data), and
    so must its error at the points in the dip (it follows the dip, not only the rest). Holds when every run fits,
    contradicted when one does not (each run's errors are exact, not estimates)."""
    runs = {run: arrays for run, arrays in context.run_arrays().items() if run_method(run) == method}
    require(bool(runs), f"evaluated {method} run")
    fits, listed = [], []
    for run in sorted(runs):
        arrays = runs[run]
        x, y = arrays["x_train"][:, 0], arrays["y_train"][:, 0]
        median = np.interp(x, arrays["x_grid"][:, 0], np.median(arrays["posterior_predictive"], axis=0))
        error, constant = np.abs(median - y), np.abs(y.mean() - y)
        dip = (x >= DIP[0]) & (x <= DIP[1])
        fits.append(bool(error.mean() <= constant.mean() / 2 and error[dip].mean() <= constant[dip].mean() / 2))
        listed.append(f"mean |median - y| {error.mean():.3f} (a constant predictor's {constant.mean():.3f}); at the "
                      f"{int(dip.sum())} points with x in [{DIP[0]}, {DIP[1]}]: {error[dip].mean():.3f} (constant's "
                      f"{constant[dip].mean():.3f})")  # fmt: skip
    return Outcome(all(fits), "; ".join(listed))


@claim("sdebnn/fig2", "The posterior predictive fits the non-monotonic toy data.")
def sdebnn_posterior_fits_the_data(context: ArtifactContext) -> Outcome:
    """See `_fits_the_dip`."""
    return _fits_the_dip(context, "sdebnn")


@claim("sdebnn_ws/fig4", "Continuous-depth Bayesian neural networks can have expressive approximate posteriors.")
def workshop_posterior_fits_the_data(context: ArtifactContext) -> Outcome:
    """The posterior follows the data where they turn (the published one follows their dip)."""
    return _fits_the_dip(context, "ws_sdebnn")

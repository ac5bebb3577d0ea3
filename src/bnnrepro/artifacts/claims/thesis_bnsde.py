"""The claims the thesis makes of its chapter-6 forecast figures (Fig. 6.3, §6.4.1; Figs. 6.5, 6.7, 6.8, §6.4.2 and
§6.6.4), each checked on the forecasts the figure draws (the first seed's run of each model)."""

from __future__ import annotations

from bnnrepro.artifacts.claims import NotCheckable, Outcome, claim
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.thesis_bnsde import (
    ALL_STATES,
    FIG65_STATE,
    LONG_STEPS,
    LORENZ_GRID,
    LORENZ_MODELS,
    LORENZ_SPREAD,
    LV_GRID,
    LV_MODELS,
    MEDIUM_STEPS,
    Forecast,
    grid_forecasts,
)

LV_BLACK_BOX, LV_WHITE_BOX, LV_HYBRID = LV_MODELS
LORENZ_HYBRID, LORENZ_BASELINE = LORENZ_MODELS
SIGNIFICANT = 2.0
"""Fig. 6.3's "significant improvement": the hybrid's error at most half the black box's."""
NEARLY_ALWAYS = 0.9
"""Fig. 6.8's band that "nearly always includes the true trajectory": at 90% of the steps and states or more."""


def _forecasts(context: ArtifactContext, grid: str, labels: dict[str, str], steps: int | None) -> dict[str, Forecast]:
    """The figure's forecasts over its first `steps` steps (all where None); NotCheckable where a model has none."""
    try:
        forecasts = grid_forecasts(context, grid, labels)
    except ValueError as missing:
        raise NotCheckable(f"not checked: {missing}") from missing
    return {m: f if steps is None else f.first_steps(steps) for m, f in forecasts.items()}


def _listed(values: dict[str, float], labels: dict[str, str], unit: str = "") -> str:
    return ", ".join(f"{labels[model]} {value:.3g}{unit}" for model, value in values.items())


@claim(
    "thesis/fig6.3",
    "While the plain black-box model delivers a poor fit to data, our hybrid BNSDE brings significant improvement "
    "from relevant but inaccurate prior knowledge.",
)
def hybrid_improves_lotka_volterra(context: ArtifactContext) -> Outcome:
    """Holds when the hybrid's forecast mean has at most half the black box's mean squared error to the observed
    x_t and y_t (`SIGNIFICANT`), and less than the white-box prior SDE's (the knowledge alone)."""
    forecasts = _forecasts(context, LV_GRID, LV_MODELS, None)
    errors = {model: forecast.squared_error((0, 1)) for model, forecast in forecasts.items()}
    holds = errors[LV_HYBRID] * SIGNIFICANT <= errors[LV_BLACK_BOX] and errors[LV_HYBRID] < errors[LV_WHITE_BOX]
    return Outcome(bool(holds), f"forecast MSE of x_t and y_t: {_listed(errors, LV_MODELS)}")


@claim(
    "thesis/fig6.5",
    "Even with weak prior knowledge, the proposed model is stable longer than the baseline as well as showing a "
    "proper increase in the variance as the predicted trajectory increases.",
)
def hybrid_band_holds_the_data_longer(context: ArtifactContext) -> Outcome:
    """Holds when the hybrid's ± 2 std band holds the observed x at more of Fig. 6.5's 200 steps than the
    baseline's: a forecast that stays stable, or widens its band as it drifts, keeps the data inside."""
    forecasts = _forecasts(context, LORENZ_GRID, LORENZ_MODELS, MEDIUM_STEPS)
    covered = {model: forecast.coverage((FIG65_STATE,), LORENZ_SPREAD) for model, forecast in forecasts.items()}
    return Outcome(
        bool(covered[LORENZ_HYBRID] > covered[LORENZ_BASELINE]),
        f"fraction of the {MEDIUM_STEPS} steps of x inside the ± {LORENZ_SPREAD} std band: "
        f"{_listed(covered, LORENZ_MODELS)}",
    )


@claim(
    "thesis/fig6.7",
    "The baseline starts to diverge from the true test sequence, while our proposed model still tracks it closely.",
)
def hybrid_tracks_200_steps(context: ArtifactContext) -> Outcome:
    """Holds when the hybrid's mean path has a lower mean squared error to the observed x, y and z over Fig. 6.7's
    200 steps than the baseline's."""
    forecasts = _forecasts(context, LORENZ_GRID, LORENZ_MODELS, MEDIUM_STEPS)
    errors = {model: forecast.squared_error(ALL_STATES) for model, forecast in forecasts.items()}
    return Outcome(
        bool(errors[LORENZ_HYBRID] < errors[LORENZ_BASELINE]),
        f"MSE of the mean path over {MEDIUM_STEPS} steps: {_listed(errors, LORENZ_MODELS)}",
    )


@claim(
    "thesis/fig6.8",
    "While the proposed model also shows an unreliable average, the large variance nearly always includes the true "
    "trajectory.",
)
def hybrid_band_covers_1000_steps(context: ArtifactContext) -> Outcome:
    """Holds when the hybrid's ± 2 std band holds the observed series at `NEARLY_ALWAYS` of Fig. 6.8's steps and
    states or more (a band whose paths diverged holds nothing from there on)."""
    forecasts = _forecasts(context, LORENZ_GRID, LORENZ_MODELS, LONG_STEPS)
    covered = {model: forecast.coverage(ALL_STATES, LORENZ_SPREAD) for model, forecast in forecasts.items()}
    diverged = {model: forecast.diverged() for model, forecast in forecasts.items()}
    paths = len(forecasts[LORENZ_HYBRID].paths)
    return Outcome(
        bool(covered[LORENZ_HYBRID] >= NEARLY_ALWAYS),
        f"fraction of the {LONG_STEPS} steps of x, y, z inside the ± {LORENZ_SPREAD} std band: "
        f"{_listed(covered, LORENZ_MODELS)}; paths diverged: {_listed(diverged, LORENZ_MODELS, f' of {paths}')}",
    )

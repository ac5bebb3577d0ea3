"""Regression calibration metrics against closed forms, the CRPS's integral definition and known limits; controls:
a predictive too narrow, too wide or constant fails the checks a calibrated one passes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import integrate, stats

from bnnrepro.metrics import (
    continuous_ranked_probability_score,
    interval_coverage,
    probability_integral_transform,
    quantile_calibration_error,
    regression_metrics,
)


def calibrated(n: int, seed: int, spread: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Mean-function samples [8, n, 1], noise variance 0.25, and targets drawn from `spread` times the predictive's
    own deviation around its mean (1: calibrated)."""
    generator = torch.Generator().manual_seed(seed)
    samples = torch.randn(8, n, 1, generator=generator, dtype=torch.float64) * 0.3 + torch.linspace(-2, 2, n)[:, None]
    std = (samples.var(0, unbiased=False) + 0.25).sqrt()
    targets = samples.mean(0) + spread * std * torch.randn(n, 1, generator=generator, dtype=torch.float64)
    return samples, targets, 0.25


def test_crps_of_one_gaussian_is_the_closed_form() -> None:
    """CRPS(N(mu, s^2), y) = s (z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)), z = (y - mu)/s (Gneiting et al. 2005)."""
    mean = torch.tensor([[[0.3], [-1.0], [2.0]]], dtype=torch.float64)
    targets, variance = torch.tensor([[0.0], [1.5], [2.0]], dtype=torch.float64), 0.64
    z = (targets.numpy()[:, 0] - mean.numpy()[0, :, 0]) / 0.8
    closed = 0.8 * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / math.sqrt(math.pi))
    assert continuous_ranked_probability_score(mean, targets, variance) == pytest.approx(closed.mean(), rel=1e-9)


def test_crps_is_the_integral_of_its_definition() -> None:
    """CRPS(F, y) = integral of (F(x) - 1{x >= y})^2 dx, by quadrature, on several samples of the mean function."""
    samples, targets, noise = calibrated(5, seed=1)
    mean, std = samples.mean(0)[:, 0].numpy(), (samples.var(0, unbiased=False)[:, 0] + noise).sqrt().numpy()
    by_quadrature = []
    for m, s, y in zip(mean, std, targets[:, 0].numpy(), strict=True):
        below, _ = integrate.quad(lambda x, m=m, s=s: stats.norm.cdf(x, m, s) ** 2, -np.inf, y)
        above, _ = integrate.quad(lambda x, m=m, s=s: stats.norm.sf(x, m, s) ** 2, y, np.inf)
        by_quadrature.append(below + above)
    assert continuous_ranked_probability_score(samples, targets, noise) == pytest.approx(np.mean(by_quadrature), 1e-7)


def test_crps_of_a_sharp_predictive_is_the_absolute_error() -> None:
    """The limit of a point forecast: CRPS -> |y - mu|."""
    samples, targets = torch.full((1, 4, 1), 1.0), torch.tensor([[0.0], [1.0], [3.0], [-2.0]])
    assert continuous_ranked_probability_score(samples, targets, 1e-12) == pytest.approx(1.5, abs=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_calibrated_predictive_covers_its_levels(seed: int) -> None:
    samples, targets, noise = calibrated(20_000, seed)
    pit = probability_integral_transform(samples, targets, noise)
    for level in (0.5, 0.9, 0.95):
        coverage = interval_coverage(pit, level)
        assert stats.binomtest(round(coverage * 20_000), 20_000, level).pvalue > 1e-3, (level, coverage)
    assert quantile_calibration_error(pit) < 0.01


@pytest.mark.parametrize(("spread", "coverage_90"), [(3.0, (0.0, 0.5)), (0.3, (0.99, 1.0))])
def test_control_a_predictive_too_narrow_or_too_wide_is_told_apart(spread: float, coverage_90: tuple) -> None:
    """Targets 3x as spread as the predictive says (overconfident), or 0.3x (underconfident)."""
    samples, targets, noise = calibrated(20_000, 3, spread)
    pit = probability_integral_transform(samples, targets, noise)
    assert coverage_90[0] <= interval_coverage(pit, 0.9) <= coverage_90[1]
    assert quantile_calibration_error(pit) > 0.1


def test_control_a_constant_predictor_covers_nothing() -> None:
    samples, targets, _ = calibrated(1000, 4)
    pit = probability_integral_transform(torch.zeros_like(samples), targets, 1e-6)
    # targets on both sides of it: half below every quantile, half above, an error of about 0.25
    assert interval_coverage(pit, 0.95) < 0.01 and quantile_calibration_error(pit) > 0.2


def test_quantile_calibration_error_by_hand() -> None:
    """Every target below every quantile (pit 0): the mean of 1 - p over 0.01..0.99, 0.5; above every one: 0.5."""
    assert quantile_calibration_error(torch.zeros(10, 1)) == pytest.approx(0.5)
    assert quantile_calibration_error(torch.ones(10, 1)) == pytest.approx(0.5)
    halves = torch.tensor([[0.25], [0.75]])  # observed 0 below 0.25, 1/2 to 0.75, 1 above
    levels = np.arange(1, 100) / 100
    observed = (levels >= 0.25) / 2 + (levels >= 0.75) / 2
    assert quantile_calibration_error(halves) == pytest.approx(np.abs(observed - levels).mean())


def test_original_units_scale_the_crps_and_leave_coverage_alone() -> None:
    samples, targets, noise = calibrated(200, 5)
    values = regression_metrics(samples, targets, noise, (10.0, 3.0))
    assert values["crps_original"] == pytest.approx(3.0 * values["crps"], rel=1e-9)
    heteroscedastic = regression_metrics(samples, targets, torch.full_like(targets, noise), (10.0, 3.0))
    assert heteroscedastic == pytest.approx(values)  # a per-target noise variance, here constant
    assert {"coverage_50", "coverage_90", "coverage_95", "quantile_calibration_error"} <= set(values)


def test_the_benchmark_document_shows_each_method_s_calibration_per_dataset() -> None:
    from bnnrepro.report.benchmark_results import CALIBRATION_METRICS, calibration_section

    rows = [{"method": method, "dataset": "uci_boston", "metric": f"test_{metric}", "value": value + split}
            for method, value in (("gp", 0.5), ("mfvi", 0.25)) for split in (0, 1)
            for metric in CALIBRATION_METRICS]  # fmt: skip
    lines = calibration_section(pd.DataFrame(rows))
    assert (
        "| uci_boston | gp | 1 | 1 | 1 | 1 | 1 |" in lines
        and "| uci_boston | mfvi | 0.75 | 0.75 | 0.75 | 0.75 | 0.75 |" in lines
    )
    older = pd.DataFrame([{"method": "gp", "dataset": "uci_boston", "metric": "test_rmse_original", "value": 1.0}])
    assert "made before the runs recorded interval coverage" in calibration_section(older)[0]


def test_the_report_draws_a_calibration_panel_per_dataset_where_runs_record_coverage() -> None:
    from bnnrepro.report.own_study import metrics_figure

    rows = [{"method": method, "hparams": f"split={k}", "seed": k, "dataset": dataset, "metric": f"test_{metric}",
             "value": value}
            for method in ("gp", "mfvi") for dataset in ("mine", "yours") for k in range(3)
            for metric, value in (("rmse_original", 1.0 + k), ("nll_original", 2.0), ("coverage_50", 0.4),
                                  ("coverage_90", 0.8), ("coverage_95", 0.9))]  # fmt: skip
    metrics = pd.DataFrame(rows)
    figure = metrics_figure(metrics, "regression")
    titles = [ax.get_title() for ax in figure.axes]
    assert titles.count("mine\ntest coverage") == 1 and len(figure.axes) == 6
    panel = figure.axes[titles.index("yours\ntest coverage")]
    assert sorted(line.get_xdata()[0] for line in panel.lines if line.get_linestyle() == "--") == [0.5, 0.9, 0.95]
    older = metrics[~metrics["metric"].str.startswith("test_coverage")]  # runs made before coverage was recorded
    assert len(metrics_figure(older, "regression").axes) == 4


def test_the_report_names_the_coverage_metrics_the_runs_record() -> None:
    from bnnrepro.metrics import INTERVAL_LEVELS, SPLIT_METRICS
    from bnnrepro.report.own_study import COVERAGE_LEVELS

    assert tuple(COVERAGE_LEVELS.values()) == INTERVAL_LEVELS
    assert set(COVERAGE_LEVELS) <= set(SPLIT_METRICS["regression"])

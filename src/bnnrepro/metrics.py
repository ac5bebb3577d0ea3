"""Evaluation metrics on predictive probabilities, and on the predictive mean-function samples of regression.

Shapes: `probs` [N, C] is one predictive distribution per input (for an ensemble or several posterior samples,
the mean of the members' probabilities); `member_probs` [M, N, C] holds the M members' probabilities; `labels` [N].
Regression: `samples` [S, N, D] are S draws of the predictive mean function at N inputs, `targets` [N, D].
Regression's calibration metrics (interval coverage, quantile calibration error, CRPS) score the moment-matched
Gaussian predictive whose NLL the UCI benchmarks report. Definitions follow the SDE-BNN paper (Xu et al. 2022; ECE
§5.2.1, CIFAR-10-C errors §5.2.2, gradient variance §4) and the repulsive-ensembles paper (D'Angelo & Fortuin
2021, §4 and Table 1: entropy, model disagreement and OOD AUROC); the entropy ECDF-AUC is the Haußmann (2021) thesis'
(Table 5.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

SDE_BNN_ECE_BINS = 10
"""SDE-BNN paper §5.2.1: the bin count is not stated in the paper; the authors' code (`xwinxu/bayeSDE`,
`torchbnn/_impl/utils.py`) uses 10 equal-width bins."""

REPULSIVE_ECE_BINS = 30
"""Repulsive-ensembles paper Table 1: the bin count is not stated in the paper; the authors' code
(`ratschlab/repulsive_ensembles`, `training/training_mnist_hyper.py`, `training/training_mnist_corruption.py`) uses 30
equal-width bins."""


def accuracy(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of inputs whose most probable class is the label."""
    return float((probs.argmax(-1) == labels).float().mean())


def negative_log_likelihood(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean of -log p(y | x) under the predictive distribution."""
    picked = probs.gather(-1, labels[:, None]).squeeze(-1)
    return float(-torch.log(picked.clamp_min(torch.finfo(probs.dtype).tiny)).mean())


def root_mean_squared_error(samples: torch.Tensor, targets: torch.Tensor) -> float:
    """Regression: the RMSE of the sample-mean prediction, over data points and outputs."""
    return float((samples.mean(0) - targets).pow(2).mean().sqrt())


def gaussian_predictive(
    samples: torch.Tensor, noise_variance: float | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance [N, D] of the moment-matched Gaussian predictive of mean-function samples [S, N, D] (their
    population variance plus the noise's), in float64: the one distribution that the NLL, the interval coverage and
    the CRPS of a regression run all score."""
    samples = samples.double()
    return samples.mean(0), samples.var(0, unbiased=False) + noise_variance


def gaussian_predictive_nll(
    samples: torch.Tensor, targets: torch.Tensor, noise_variance: float | torch.Tensor
) -> float:
    """Regression: the negative log-likelihood per datum of `targets` under the Gaussian predictive
    N(mean_s f_s, var_s f_s + noise_variance) of each output (`noise_variance` a constant or one per target [N, D]),
    moment-matched to the samples f_s (population variance), summed over outputs and averaged over data points; in
    float64. The negated Gaussian predictive test log-likelihood of the UCI benchmarks (Hernandez-Lobato & Adams
    2015, §5), which thesis Tables 3.1 and 5.1 report. It is inf where the noise variance is infinite (a Cauchy
    likelihood's), inf or nan where the predictive variance is 0 (a single sample and no noise)."""
    mean, variance = gaussian_predictive(samples, noise_variance)
    log_density = -0.5 * (math.log(2 * math.pi) + variance.log() + (targets.double() - mean).square() / variance)
    return float(-log_density.sum(-1).mean())


def probability_integral_transform(
    samples: torch.Tensor, targets: torch.Tensor, noise_variance: float | torch.Tensor
) -> torch.Tensor:
    """The predictive CDF at each target [N, D] (`gaussian_predictive`): uniform on [0, 1] for a calibrated
    predictive (Dawid 1984; Gneiting et al. 2007, §2)."""
    mean, variance = gaussian_predictive(samples, noise_variance)
    return torch.special.ndtr((targets.double() - mean) / variance.sqrt())


INTERVAL_LEVELS = (0.5, 0.9, 0.95)
"""The central predictive intervals whose coverage a regression run records (`interval_coverage`)."""

CALIBRATION_LEVELS = tuple(round(0.01 * k, 2) for k in range(1, 100))
"""The quantile levels of `quantile_calibration_error`: 0.01, 0.02, ..., 0.99."""


def interval_coverage(pit: torch.Tensor, level: float) -> float:
    """Fraction of targets inside the central `level` interval of their predictive, from their probability integral
    transforms `pit`: those within level/2 of the median. A calibrated predictive covers `level` of them."""
    return float(((pit - 0.5).abs() <= level / 2).double().mean())


def quantile_calibration_error(pit: torch.Tensor) -> float:
    """Mean over the `CALIBRATION_LEVELS` p of |p - the fraction of targets at or below their predictive p-quantile|
    (Kuleshov et al. 2018, eq. 9, with absolute rather than squared differences and equal weights): 0 for a calibrated
    predictive, at most 0.5 (every target above, or below, every quantile)."""
    levels = torch.tensor(CALIBRATION_LEVELS, dtype=torch.float64)
    observed = (pit.flatten()[:, None] <= levels).double().mean(0)
    return float((observed - levels).abs().mean())


def continuous_ranked_probability_score(
    samples: torch.Tensor, targets: torch.Tensor, noise_variance: float | torch.Tensor
) -> float:
    """Mean CRPS (Gneiting & Raftery 2007, eq. 20) of `targets` under the `gaussian_predictive`, summed over outputs as
    the NLL is: the closed form for a Gaussian of the maintained `scoringrules` library, on its numpy backend (its
    torch backend holds pi in float32). Lower is better; in the targets' units."""
    import scoringrules  # numpy, scipy: loaded only by the jobs that score a regression

    mean, variance = gaussian_predictive(samples, noise_variance)
    arrays = (targets.double().numpy(), mean.numpy(), variance.sqrt().expand_as(mean).numpy())
    return float(scoringrules.crps_normal(*arrays, backend="numpy").sum(-1).mean())


def _check_predictions(probs: torch.Tensor, labels: torch.Tensor) -> None:
    if probs.ndim != 2 or labels.shape != probs.shape[:1] or probs.shape[0] == 0:
        shapes = f"{tuple(probs.shape)} and {tuple(labels.shape)}"
        raise ValueError(f"need probs [N, C] and labels [N] with N > 0, got {shapes}")


def _check_members(member_probs: torch.Tensor, min_members: int = 1) -> None:
    if member_probs.ndim != 3 or member_probs.shape[0] < min_members:
        raise ValueError(
            f"need member probabilities [M, N, C] with M >= {min_members}, got {tuple(member_probs.shape)}"
        )


class CalibrationBins(NamedTuple):
    """Per-bin statistics of top-label confidence; accuracy and confidence are NaN in empty bins."""

    edges: torch.Tensor  # [B + 1], k / B (left-closed bins: [B + 2], the last bin [1, 1])
    counts: torch.Tensor  # [B] (left-closed: [B + 1])
    accuracy: torch.Tensor  # [B], fraction of correct top-label predictions
    confidence: torch.Tensor  # [B], mean of max_c p_c


BIN_CONVENTIONS = ("right_closed", "left_closed")
"""How confidences on bin edges are binned: "right_closed", bins (k/B, (k+1)/B] with 0 in the first (ours, and SDE-BNN's
with confidence 1 kept); "left_closed", bins [k/B, (k+1)/B) and a bin of its own for confidence exactly 1, as the ECE of
`uncertainty_metrics` (`numpy.ece`: `np.digitize` on the upper edges) that the repulsive-ensembles code calls."""


def calibration_bins(
    probs: torch.Tensor, labels: torch.Tensor, num_bins: int = SDE_BNN_ECE_BINS, convention: str = "right_closed"
) -> CalibrationBins:
    """Equal-width confidence bins of the reliability diagram (SDE-BNN paper Fig. 6b).

    Confidence is max_c p_c and the prediction argmax_c p_c. The papers do not state how a confidence on a bin edge
    is binned; their codes differ (`BIN_CONVENTIONS`). "right_closed" (the default): bin k in 0..B-1 holds
    confidences in (k/B, (k+1)/B], the first also 0; the SDE-BNN code's `get_calibration` (`xwinxu/bayeSDE`,
    `torchbnn/_impl/utils.py`) uses [k/B, (k+1)/B) bins that lose confidence 1, which is not followed. "left_closed":
    bin k holds [k/B, (k+1)/B) and an extra bin B holds confidence exactly 1, as `uncertainty_metrics`' ECE, which
    the repulsive-ensembles code (`ratschlab/repulsive_ensembles`) calls. The two differ only for confidences on an
    edge, saturated ones (1.0) among them. Edges are k / B in the dtype of `probs`: a confidence written as the same
    literal (0.3 for B = 10) lies on the edge.
    """
    _check_predictions(probs, labels)
    if num_bins < 1:
        raise ValueError(f"num_bins must be at least 1, got {num_bins}")
    if convention not in BIN_CONVENTIONS:
        raise ValueError(f"unknown bin convention {convention!r}; use one of {', '.join(BIN_CONVENTIONS)}")
    confidence, prediction = probs.max(-1)
    correct = (prediction == labels).to(probs.dtype)
    edges = torch.arange(num_bins + 1, dtype=probs.dtype, device=probs.device) / num_bins
    if convention == "right_closed":
        bin_index = (torch.bucketize(confidence, edges, right=False) - 1).clamp(0, num_bins - 1)
    else:  # np.digitize(confidence, upper edges) on np.histogram_bin_edges' float64 edges k * (1 / B), 1 at the end
        upper = torch.arange(1, num_bins + 1, dtype=torch.float64, device=probs.device) * (1.0 / num_bins)
        upper[-1] = 1.0
        bin_index = torch.bucketize(confidence.double(), upper, right=True)
        edges, num_bins = torch.cat([edges, edges[-1:]]), num_bins + 1
    counts = torch.bincount(bin_index, minlength=num_bins).to(probs.dtype)
    correct_per_bin = torch.zeros_like(counts).index_add_(0, bin_index, correct)
    confidence_per_bin = torch.zeros_like(counts).index_add_(0, bin_index, confidence)
    return CalibrationBins(edges, counts, correct_per_bin / counts, confidence_per_bin / counts)


def expected_calibration_error(
    probs: torch.Tensor, labels: torch.Tensor, num_bins: int = SDE_BNN_ECE_BINS, convention: str = "right_closed"
) -> float:
    """ECE = sum_b (|B_b| / N) |acc(B_b) - conf(B_b)| over equal-width confidence bins (Guo et al. 2017).

    SDE-BNN paper §5.2.1 and repulsive-ensembles paper Table 1; bins as in `calibration_bins` with `convention`.
    The default of 10 bins is the SDE-BNN authors' code's (`xwinxu/bayeSDE`, `torchbnn/_impl/utils.py`; not stated
    in the paper); pass `REPULSIVE_ECE_BINS` (30) and "left_closed" for the repulsive-ensembles Table 1, in that
    code's convention. A fraction: multiply by 100 for SDE-BNN's "ECE (x10^-2)" columns.
    """
    bins = calibration_bins(probs, labels, num_bins, convention)
    filled = bins.counts > 0
    gaps = (bins.accuracy[filled] - bins.confidence[filled]).abs()
    return float((bins.counts[filled] * gaps).sum() / bins.counts.sum())


@dataclass(frozen=True)
class CorruptionErrors:
    """CIFAR-10-C summaries of a table of top-1 errors E[c, s] (SDE-BNN paper §5.2.2), in the table's units."""

    mean_per_severity: torch.Tensor
    """mCE_s = (1/K) sum_c E[c, s], one per severity (paper: "average error for each intensity level")."""
    sum_per_severity: torch.Tensor
    """sum_c E[c, s], one per severity (the other reading of "summed across all 19 perturbations")."""
    relative_mean_per_severity: torch.Tensor
    """mCE_s - E_clean, the error "relative to uncorrupted data" of Fig. 7."""
    overall: float
    """CE = mean over all (c, s) of E[c, s]."""
    relative_overall: float
    """CE - E_clean."""


def corruption_errors(errors: torch.Tensor, clean_error: float) -> CorruptionErrors:
    """Summaries of the errors E[c, s] of corruption c (rows) at severity s (columns) against the clean error.

    SDE-BNN paper §5.2.2: its mCE wording ("an average error for each intensity level summed across all 19
    perturbations") is ambiguous (mean or sum, absolute or relative to clean), so every reading is
    returned. No AlexNet (or other baseline) normalisation: the paper mentions none. `clean_error` must be in the
    units of `errors` (fractions or percent).
    """
    if errors.ndim != 2 or errors.numel() == 0:
        raise ValueError(f"need errors [corruptions, severities], got shape {tuple(errors.shape)}")
    if not torch.isfinite(errors).all():
        raise ValueError("the error table has missing (non-finite) entries")
    mean_per_severity = errors.mean(0)
    overall = float(errors.mean())
    return CorruptionErrors(
        mean_per_severity=mean_per_severity,
        sum_per_severity=errors.sum(0),
        relative_mean_per_severity=mean_per_severity - clean_error,
        overall=overall,
        relative_overall=overall - clean_error,
    )


def predictive_entropy(member_probs: torch.Tensor) -> torch.Tensor:
    """H(x) = -sum_c pbar_c log pbar_c (nats) of the ensemble mean pbar = (1/M) sum_i p_i, one per input [N].

    Repulsive-ensembles paper §4. The authors' code (`ratschlab/repulsive_ensembles`,
    `training/training_mnist_hyper.py`, `training/training_mnist_corruption.py`) divides by log C for the image tasks;
    that scale cancels in H_o/H_t and in the AUROC, so it is left out. Pass probs[None] for a single predictive
    distribution.
    """
    _check_members(member_probs)
    mean_probs = member_probs.mean(0)
    return -torch.special.xlogy(mean_probs, mean_probs).sum(-1)


def entropy_ecdf_auc(probs: torch.Tensor) -> float:
    """Area under the empirical CDF of the predictive entropies H(x) over [0, log C]: the ECDF-AUC of OOD inputs
    (Haußmann 2021 thesis, §5.6.2 and Table 5.2; smaller is better, as high entropy on every input is wanted).

    The area under F(h) = #{H_i <= h} / N on [0, log C] is log C - mean_i H_i, with the entropies (of
    `predictive_entropy`, nats) clipped to [0, log C]. The thesis does not state the integration range; [0, log C]
    is the range of the entropy, and every value Table 5.2 reports lies below its log C (2.303 for 10 classes, 1.609
    for 5). `probs` [N, C]: one predictive distribution per input (for BEDL, the mean of the sampled softmaxes).
    """
    if probs.ndim != 2 or probs.shape[0] == 0:
        raise ValueError(f"need probs [N, C] with N > 0, got {tuple(probs.shape)}")
    max_entropy = math.log(probs.shape[-1])
    entropies = predictive_entropy(probs[None]).double().clamp(0, max_entropy)
    return max_entropy - float(entropies.mean())


def model_disagreement(member_probs: torch.Tensor) -> torch.Tensor:
    """MD(x) = (1/C) sum_c std_i p_i,c(x): the members' standard deviation (n - 1) of each class probability,
    averaged over classes, one per input [N].

    Repulsive-ensembles paper §4 defers the definition to its App. B; this is the authors' code
    (`ratschlab/repulsive_ensembles`, `training/training_mnist_hyper.py`, `training/training_mnist_corruption.py`:
    `test_pred.std(0).mean(1)`), kept for comparability with their Table 1.
    """
    _check_members(member_probs, min_members=2)
    return member_probs.std(0, correction=1).mean(-1)


def _check_scores(in_scores: torch.Tensor, out_scores: torch.Tensor) -> None:
    if in_scores.ndim != 1 or out_scores.ndim != 1 or not len(in_scores) or not len(out_scores):
        shapes = f"{tuple(in_scores.shape)} and {tuple(out_scores.shape)}"
        raise ValueError(f"need two non-empty 1-D score tensors, got {shapes}")
    if torch.isnan(in_scores).any() or torch.isnan(out_scores).any():
        raise ValueError("scores contain NaN")


def _average_ranks(values: torch.Tensor) -> torch.Tensor:
    """Ranks 1..n of `values`, tied values sharing the mean of their ranks."""
    sorted_values, order = torch.sort(values)
    _, tie_counts = torch.unique_consecutive(sorted_values, return_counts=True)
    group_ends = tie_counts.cumsum(0).to(torch.float64)
    sorted_ranks = (group_ends - (tie_counts - 1) / 2).repeat_interleave(tie_counts)
    ranks = torch.empty_like(sorted_ranks)
    ranks[order] = sorted_ranks
    return ranks


def ood_auroc(in_scores: torch.Tensor, out_scores: torch.Tensor) -> float:
    """Area under the ROC curve of detecting out-of-distribution inputs by a score, higher meaning more OOD.

    Repulsive-ensembles paper Table 1, AUROC(H) and AUROC(MD): OOD is the positive class (label 1), as in the authors'
    `roc_auc_score` call. Computed as the Mann-Whitney statistic P(s_out > s_in) + P(s_out = s_in) / 2.
    """
    _check_scores(in_scores, out_scores)
    scores = torch.cat([in_scores, out_scores]).to(torch.float64)
    num_in, num_out = len(in_scores), len(out_scores)
    out_rank_sum = _average_ranks(scores)[num_in:].sum()
    return float((out_rank_sum - num_out * (num_out + 1) / 2) / (num_in * num_out))


def _check_gradient_samples(gradients: torch.Tensor) -> None:
    if gradients.ndim != 2 or gradients.shape[0] < 2:
        raise ValueError(f"need gradients [K, P] with K >= 2 samples, got {tuple(gradients.shape)}")


def gradient_variance(gradients: torch.Tensor) -> float:
    """Variance (n - 1) over K gradient samples of each of P parameters, averaged over parameters ([K, P]).

    SDE-BNN paper §4, Fig. 4: "variance ... averaged across the parameters theta". The authors' code (`xwinxu/bayeSDE`,
    `examples/grad_check/stl.py`) records the standard deviation instead; see `gradient_standard_deviation`.
    """
    _check_gradient_samples(gradients)
    return float(gradients.var(0, correction=1).mean())


def gradient_standard_deviation(gradients: torch.Tensor) -> float:
    """Standard deviation (n - 1) over K gradient samples of each parameter, averaged over parameters ([K, P]).

    What the authors' code (`xwinxu/bayeSDE`, `examples/grad_check/stl.py`) records for Fig. 4 (`std(0).mean()`).
    """
    _check_gradient_samples(gradients)
    return float(gradients.std(0, correction=1).mean())


SPLIT_METRICS = {
    "classification": ("accuracy", "nll", "ece"),
    "regression": (
        "rmse",
        "nll",
        "rmse_original",
        "nll_original",
        "crps",
        "crps_original",
        *(f"coverage_{round(100 * level)}" for level in INTERVAL_LEVELS),
        "quantile_calibration_error",
    ),
    "forecasting": ("mse", "nll"),
}
"""{task: the metrics `bnnrepro.train.evaluate` records on each split of its data, as {split}_{metric}}; a sampling
task has none."""


def has_targets(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether a split is evaluated: it has inputs and targets (a toy's empty validation split has neither, a
    sampling target's test inputs are exact samples with no targets)."""
    return len(x) > 0 and y.numel() > 0


def classification_metrics(probs: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Accuracy, NLL and ECE of predictive probabilities [N, C]."""
    values = (accuracy(probs, y), negative_log_likelihood(probs, y), expected_calibration_error(probs, y))
    return dict(zip(SPLIT_METRICS["classification"], values, strict=True))


def forecasting_metrics(samples: torch.Tensor, y: torch.Tensor, noise_variance: float) -> dict[str, float]:
    """Forecasts [S, B, L, D] of sequences y [B, L, D]: the MSE of the mean forecast over sequences, steps and
    dimensions (thesis Table 6.1, as the authors' code, `manuelhaussmann/bnsde` `exp_lorenz.py`), and the Gaussian
    predictive NLL of each sequence, summed over its steps and dimensions and averaged over sequences
    (`gaussian_predictive_nll` of the flattened sequences; the thesis does not say how Table 6.2's NLL aggregates)."""
    mse = float((samples.mean(0) - y).square().mean())
    return {"mse": mse, "nll": gaussian_predictive_nll(samples.flatten(2), y.flatten(1), noise_variance)}


def regression_metrics(
    samples: torch.Tensor,
    y: torch.Tensor,
    noise_variance: float | torch.Tensor,
    target_standardisation: tuple[float, float],
) -> dict[str, float]:
    """RMSE of the sample-mean prediction, the Gaussian predictive NLL per datum (`gaussian_predictive_nll`) and CRPS
    of mean-function samples [S, N, D] with observation noise of `noise_variance`, in the data's units and, undoing
    the standardisation (mean, std) of the targets, in their original units (there RMSE * std, NLL + D log std and
    CRPS * std); and, the same in both units, the coverage of the central 50/90/95% predictive intervals and the
    quantile calibration error of that predictive."""
    mean, std = target_standardisation
    original_samples, original_y = samples * std + mean, y * std + mean
    original_noise = noise_variance * std**2
    pit = probability_integral_transform(samples, y, noise_variance)
    values = (
        root_mean_squared_error(samples, y),
        gaussian_predictive_nll(samples, y, noise_variance),
        root_mean_squared_error(original_samples, original_y),
        gaussian_predictive_nll(original_samples, original_y, original_noise),
        continuous_ranked_probability_score(samples, y, noise_variance),
        continuous_ranked_probability_score(original_samples, original_y, original_noise),
        *(interval_coverage(pit, level) for level in INTERVAL_LEVELS),
        quantile_calibration_error(pit),
    )
    return dict(zip(SPLIT_METRICS["regression"], values, strict=True))

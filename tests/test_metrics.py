"""Evaluation metrics (SDE-BNN paper §4, §5.2; repulsive-ensembles paper Table 1) against hand-computed values,
closed forms, numpy and sklearn."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from bnnrepro.metrics import (
    REPULSIVE_ECE_BINS,
    SDE_BNN_ECE_BINS,
    accuracy,
    calibration_bins,
    corruption_errors,
    expected_calibration_error,
    gradient_standard_deviation,
    gradient_variance,
    model_disagreement,
    negative_log_likelihood,
    ood_auroc,
    predictive_entropy,
)


def numpy_ece(probs: np.ndarray, labels: np.ndarray, num_bins: int) -> float:
    """ECE written out bin by bin: bin k holds confidences in (k/B, (k+1)/B], the first bin also 0."""
    confidence = probs.max(1)
    correct = probs.argmax(1) == labels
    total = 0.0
    for k in range(num_bins):
        in_bin = (confidence > k / num_bins) & (confidence <= (k + 1) / num_bins)
        if k == 0:
            in_bin |= confidence == 0
        if in_bin.any():
            total += in_bin.sum() * abs(correct[in_bin].mean() - confidence[in_bin].mean())
    return total / len(labels)


def random_predictions(seed: int, num_inputs: int = 500, num_classes: int = 10):
    """Softmax probabilities with a wide spread of confidences, and labels drawn from them (roughly calibrated)."""
    generator = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(num_inputs, num_classes, generator=generator, dtype=torch.float64)
    probs = logits.softmax(-1)
    labels = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return probs, labels


# --- accuracy and NLL ----------------------------------------------------------------------------------------


def test_accuracy_and_nll_by_hand():
    probs = torch.tensor([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5], [1.0, 0.0]])
    labels = torch.tensor([0, 0, 1, 1])
    assert accuracy(probs, labels) == pytest.approx(0.25)  # argmax of a tie is the first class
    nll = negative_log_likelihood(probs, labels)
    assert math.isfinite(nll)  # p = 0 is clamped, not -log 0
    finite_part = -(math.log(0.9) + math.log(0.4) + math.log(0.5)) / 4
    assert nll == pytest.approx(finite_part - math.log(torch.finfo(torch.float32).tiny) / 4, rel=1e-6)


# --- ECE -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("num_bins", [1, SDE_BNN_ECE_BINS, 15, REPULSIVE_ECE_BINS])
def test_ece_matches_numpy(seed, num_bins):
    probs, labels = random_predictions(seed)
    shuffled_labels = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))]
    for targets in (labels, shuffled_labels):
        expected = numpy_ece(probs.numpy(), targets.numpy(), num_bins)
        assert expected_calibration_error(probs, targets, num_bins) == pytest.approx(expected, abs=1e-12)


def test_ece_matches_numpy_with_confidences_on_bin_edges():
    confidence = torch.tensor([k / 10 for k in range(5, 11)] * 4, dtype=torch.float64)
    probs = torch.stack([confidence, 1 - confidence], -1)
    labels = torch.arange(len(confidence)) % 3 % 2
    expected = numpy_ece(probs.numpy(), labels.numpy(), 10)
    assert expected_calibration_error(probs, labels, 10) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("probs", "labels"),
    [
        # confidence 0.8 with 8 of 10 correct
        ([[0.8, 0.2]] * 10, [0] * 8 + [1] * 2),
        # confidence 0.6 with 3 of 5 correct, and confidence 1 always correct
        ([[0.4, 0.6]] * 5 + [[1.0, 0.0]] * 5, [1, 1, 1, 0, 0] + [0] * 5),
    ],
)
def test_ece_of_perfectly_calibrated_predictions_is_zero(probs, labels):
    assert expected_calibration_error(torch.tensor(probs), torch.tensor(labels)) == pytest.approx(0, abs=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ece_confidence_on_a_bin_edge_goes_to_the_lower_bin(dtype):
    # Confidence 0.3 (correct) lies on the edge of (0.2, 0.3] and (0.3, 0.4]; confidence 0.35 (wrong) in the latter.
    probs = torch.tensor([[0.3, 0.25, 0.25, 0.2], [0.35, 0.3, 0.2, 0.15]], dtype=dtype)
    labels = torch.tensor([0, 1])
    # Separate bins: (|1 - 0.3| + |0 - 0.35|) / 2. Had 0.3 joined the upper bin: |0.5 - 0.325| = 0.175.
    assert expected_calibration_error(probs, labels, 10) == pytest.approx(0.525, abs=1e-6)
    bins = calibration_bins(probs, labels, 10)
    assert bins.counts.tolist() == [0, 0, 1, 1, 0, 0, 0, 0, 0, 0]


def test_ece_counts_confidence_one_in_the_last_bin():
    # A wrong prediction with confidence 1 (dropped by the SDE-BNN code's [lo, hi) bins) and a right one at 0.75.
    probs = torch.tensor([[1.0, 0.0], [0.75, 0.25]])
    labels = torch.tensor([1, 0])
    assert expected_calibration_error(probs, labels, 10) == pytest.approx((1 + 0.25) / 2)


def test_ece_with_one_bin_is_the_gap_between_accuracy_and_mean_confidence():
    probs, labels = random_predictions(seed=3)
    confidence, prediction = probs.max(-1)
    gap = abs(float((prediction == labels).double().mean() - confidence.mean()))
    assert expected_calibration_error(probs, labels, 1) == pytest.approx(gap, abs=1e-12)


def test_calibration_bins_by_hand():
    probs = torch.tensor([[0.55, 0.45], [0.65, 0.35], [0.35, 0.65], [0.95, 0.05]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 1, 0])
    bins = calibration_bins(probs, labels, 5)
    assert bins.edges.tolist() == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1])
    assert bins.counts.tolist() == [0, 0, 1, 2, 1]
    assert bins.accuracy[2:].tolist() == pytest.approx([1, 0.5, 1])
    assert bins.confidence[2:].tolist() == pytest.approx([0.55, 0.65, 0.95])
    assert torch.isnan(bins.accuracy[:2]).all() and torch.isnan(bins.confidence[:2]).all()


def test_ece_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="labels"):
        expected_calibration_error(torch.full((3, 2), 0.5), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="num_bins"):
        expected_calibration_error(torch.full((3, 2), 0.5), torch.zeros(3, dtype=torch.long), 0)


# --- CIFAR-10-C ----------------------------------------------------------------------------------------------


def test_corruption_errors_on_a_hand_made_table():
    errors = torch.tensor([[0.1, 0.3], [0.2, 0.4], [0.3, 0.8]], dtype=torch.float64)  # 3 corruptions x 2 severities
    summary = corruption_errors(errors, clean_error=0.05)
    assert summary.mean_per_severity.tolist() == pytest.approx([0.2, 0.5])
    assert summary.sum_per_severity.tolist() == pytest.approx([0.6, 1.5])
    assert summary.relative_mean_per_severity.tolist() == pytest.approx([0.15, 0.45])
    assert summary.overall == pytest.approx(2.1 / 6)
    assert summary.relative_overall == pytest.approx(2.1 / 6 - 0.05)


def test_corruption_errors_reject_missing_cells():
    with pytest.raises(ValueError, match="missing"):
        corruption_errors(torch.tensor([[0.1, float("nan")]]), clean_error=0.05)
    with pytest.raises(ValueError, match="corruptions, severities"):
        corruption_errors(torch.tensor([0.1, 0.2]), clean_error=0.05)


# --- entropy, model disagreement, OOD ------------------------------------------------------------------------


def test_predictive_entropy_closed_forms():
    uniform = torch.full((3, 2, 4), 0.25)
    assert predictive_entropy(uniform).tolist() == pytest.approx([math.log(4)] * 2)
    agreeing = torch.eye(3)[None].expand(5, 3, 3)
    assert predictive_entropy(agreeing).tolist() == [0, 0, 0]
    disagreeing = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    assert predictive_entropy(disagreeing).tolist() == pytest.approx([math.log(2)])
    members = torch.tensor([[[0.5, 0.5, 0.0]], [[0.1, 0.7, 0.2]]], dtype=torch.float64)  # mean (0.3, 0.6, 0.1)
    expected = -(0.3 * math.log(0.3) + 0.6 * math.log(0.6) + 0.1 * math.log(0.1))
    assert predictive_entropy(members).tolist() == pytest.approx([expected])


def test_model_disagreement_closed_forms():
    identical = torch.tensor([[0.2, 0.8], [0.6, 0.4]]).expand(4, 2, 2)
    assert model_disagreement(identical).tolist() == pytest.approx([0, 0], abs=1e-7)
    one_hot_pair = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    assert model_disagreement(one_hot_pair).tolist() == pytest.approx([1 / math.sqrt(2)])
    # Two members: the (n - 1) std of {a, b} is |a - b| / sqrt(2).
    pair = torch.rand(2, 6, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64).softmax(-1)
    expected = (pair[0] - pair[1]).abs().mean(-1) / math.sqrt(2)
    torch.testing.assert_close(model_disagreement(pair), expected)
    # Three members with class-0 probabilities {0.1, 0.2, 0.6}: mean 0.3, squared deviations 0.04 + 0.01 + 0.09.
    trio = torch.tensor([[[0.1, 0.9]], [[0.2, 0.8]], [[0.6, 0.4]]], dtype=torch.float64)
    assert model_disagreement(trio).tolist() == pytest.approx([math.sqrt(0.14 / 2)])


def test_model_disagreement_needs_two_members():
    with pytest.raises(ValueError, match="M >= 2"):
        model_disagreement(torch.full((1, 3, 2), 0.5))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ood_auroc_matches_sklearn_with_ties(seed):
    generator = torch.Generator().manual_seed(seed)
    in_scores = torch.randint(0, 6, (300,), generator=generator).float()
    out_scores = torch.randint(2, 8, (200,), generator=generator).float()
    labels = np.r_[np.zeros(300), np.ones(200)]
    expected = roc_auc_score(labels, np.r_[in_scores.numpy(), out_scores.numpy()])
    assert ood_auroc(in_scores, out_scores) == pytest.approx(expected, abs=1e-12)


def test_ood_auroc_matches_sklearn_on_continuous_scores():
    generator = torch.Generator().manual_seed(4)
    in_scores, out_scores = torch.randn(400, generator=generator), 0.5 + torch.randn(100, generator=generator)
    expected = roc_auc_score(np.r_[np.zeros(400), np.ones(100)], np.r_[in_scores.numpy(), out_scores.numpy()])
    assert ood_auroc(in_scores, out_scores) == pytest.approx(expected, abs=1e-12)


def test_ood_auroc_by_hand():
    low, high = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.5, 0.9])
    assert ood_auroc(low, high) == 1.0
    assert ood_auroc(high, low) == 0.0
    assert ood_auroc(torch.ones(4), torch.ones(3)) == 0.5
    # Out 0.2 beats in 0.1 and ties 0.2 (1.5 of 3); out 0.9 beats all three: 4.5 / 6.
    assert ood_auroc(torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.2, 0.9])) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="NaN"):
        ood_auroc(torch.tensor([0.1, float("nan")]), high)


# --- gradient variance ---------------------------------------------------------------------------------------


def test_gradient_variance_and_standard_deviation_by_hand():
    # Parameter 0 samples {1, 3, 5}: variance 4. Parameter 1 samples {0, 0, 6}: variance (4 + 4 + 16) / 2 = 12.
    gradients = torch.tensor([[1.0, 0.0], [3.0, 0.0], [5.0, 6.0]], dtype=torch.float64)
    assert gradient_variance(gradients) == pytest.approx(8)
    assert gradient_standard_deviation(gradients) == pytest.approx((2 + math.sqrt(12)) / 2)
    with pytest.raises(ValueError, match="K >= 2"):
        gradient_variance(gradients[:1])


def uncertainty_metrics_ece(probs: np.ndarray, labels: np.ndarray, num_bins: int) -> float:
    """ECE as `uncertainty_metrics.numpy.ece` computes it (the repulsive-ensembles code's): top-label confidences
    placed by `np.digitize` on the upper edges of `np.histogram_bin_edges(range=(0, 1))`, so bins [k/B, (k+1)/B) and
    confidence 1 in a bin of its own; sum over bins of |accuracy - confidence| x count / N."""
    confidence, correct = probs.max(1), (probs.argmax(1) == labels).astype(float)
    upper = np.histogram_bin_edges([], bins=num_bins, range=(0.0, 1.0))[1:]
    index = np.digitize(confidence, upper)
    counts = np.bincount(index, minlength=num_bins + 1)
    filled = counts > 0
    accuracy = np.bincount(index, weights=correct, minlength=num_bins + 1)[filled] / counts[filled]
    mean_confidence = np.bincount(index, weights=confidence, minlength=num_bins + 1)[filled] / counts[filled]
    return float(np.sum(np.abs(accuracy - mean_confidence) * counts[filled]) / len(probs))


EDGE_AND_SATURATED = (
    np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.7, 0.3], [0.6, 0.4], [0.5, 0.5], [0.9, 0.1]]),
    np.array([1, 0, 1, 0, 1, 0, 0]),
)
"""Confidences on the edges of 10 bins (0.5, 0.6, 0.7, 0.9) and saturated ones (1.0, right and wrong)."""


@pytest.mark.parametrize("num_bins", [10, 30])
def test_left_closed_ece_is_the_repulsive_ensembles_codes_on_edge_and_saturated_confidences(num_bins):
    probs, labels = EDGE_AND_SATURATED
    ours = expected_calibration_error(torch.as_tensor(probs), torch.as_tensor(labels), num_bins, "left_closed")
    assert ours == pytest.approx(uncertainty_metrics_ece(probs, labels, num_bins), abs=1e-12)


def test_the_two_conventions_bin_edges_and_saturated_confidences_apart():
    """Right-closed bins put 0.5 with 0.41-0.5 and 1.0 with 0.91-1.0; left-closed ones (on numpy's edges, where the
    sixth is 0.6000000000000001, so 0.6 falls below it) put 0.5 and 0.6 together and 1.0 alone: the bin counts differ,
    and so does the ECE, on these inputs; on confidences off every edge the two agree."""
    probs, labels = (torch.as_tensor(a) for a in EDGE_AND_SATURATED)
    right = calibration_bins(probs, labels, 10)
    left = calibration_bins(probs, labels, 10, "left_closed")
    assert right.counts.tolist() == [0, 0, 0, 0, 1, 1, 1, 0, 1, 3]
    assert left.counts.tolist() == [0, 0, 0, 0, 0, 2, 1, 0, 0, 1, 3]
    assert expected_calibration_error(probs, labels, 10) != pytest.approx(
        expected_calibration_error(probs, labels, 10, "left_closed")
    )
    off_edges, random_labels = random_predictions(seed=5)
    assert expected_calibration_error(off_edges, random_labels, 10) == pytest.approx(
        expected_calibration_error(off_edges, random_labels, 10, "left_closed")
    )
    with pytest.raises(ValueError, match="bin convention"):
        calibration_bins(probs, labels, 10, "closed")

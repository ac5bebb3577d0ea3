"""The out-of-distribution evaluation of repulsive ensembles' Table 1 (D'Angelo & Fortuin 2021, §4).

A trained ensemble's members predict on the run's test split and on the first `ood_examples` test images of the
OOD set paired with the run's dataset (settings `ood_sets`: FashionMNIST -> MNIST, CIFAR-10 -> SVHN), the OOD
images preprocessed as the run's own (pixels / 255, and the run's normalisation if any). Per input, the arrays keep
what Table 1's seven columns need (bnnrepro.artifacts.repulsive_images): the predictive distribution (the mean of the
members' probabilities, eq. 1) and labels on the test split, and the predictive entropy and the members' model
disagreement on both sets.
"""

from __future__ import annotations

import numpy as np
import torch

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods.weight_samples import WeightSamples
from bnnrepro.metrics import model_disagreement, predictive_entropy

EVALUATION = "ood_detection"


def ood_images(inputs: EvaluationInputs) -> np.ndarray:
    """The first `ood_examples` (all when null) test images of the OOD set of the run's dataset."""
    run_dataset, ood_sets = inputs.run_dataset["name"], inputs.settings["ood_sets"]
    if run_dataset not in ood_sets:
        raise ValueError(
            f"evaluation {EVALUATION!r}: no OOD set for dataset {run_dataset!r}; config/evaluations.yaml pairs "
            f"{dict(ood_sets)} (add the pair there, and the OOD dataset to the evaluation's `data`)"
        )
    preprocessing = {key: inputs.run_dataset.get(key) for key in ("mean", "std")}
    return inputs.dataset(ood_sets[run_dataset], **preprocessing).x("test")[: inputs.settings["ood_examples"]]


def evaluation_arrays(
    method: WeightSamples, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}")
    test = method.member_probabilities(torch.as_tensor(splits.x("test")))
    ood = method.member_probabilities(torch.as_tensor(ood_images(inputs)))
    return {
        "test_probabilities": test.mean(0).numpy(),
        "test_labels": splits.y("test"),
        "test_entropy": predictive_entropy(test).numpy(),
        "ood_entropy": predictive_entropy(ood).numpy(),
        "test_disagreement": model_disagreement(test).numpy(),
        "ood_disagreement": model_disagreement(ood).numpy(),
    }

"""Out-of-distribution evaluations: a trained classifier on the run's test split and on the first `ood_examples`
images of the OOD set paired with the run's dataset (settings `ood_sets`), the OOD images preprocessed as the run's
own (pixels / 255, and the run's normalisation if any).

* "ood_detection", repulsive ensembles' Table 1 (D'Angelo & Fortuin 2021, §4; FashionMNIST -> MNIST, CIFAR-10 ->
  SVHN test images): the ensemble's members predict; per input, the arrays keep what Table 1's seven columns need
  (bnnrepro.artifacts.repulsive_images): the predictive distribution (the mean of the members' probabilities, eq. 1)
  and labels on the test split, and the predictive entropy and the members' model disagreement on both sets.
* "ood_entropy", thesis Table 5.2 (Haußmann 2021, §5.6.2, §5.8.2.2; MNIST -> Fashion-MNIST, CIFAR-10 classes 0-4
  -> classes 5-9): the method's own predictive (`predict`: BEDL's mean softmax over its draws of f^L, MC dropout's
  over its masks, EDL's Dirichlet mean), its predictive entropies on both sets and their ECDF-AUC
  (bnnrepro.metrics.entropy_ecdf_auc).

An `ood_sets` entry is a dataset name (its test split) or a mapping with the dataset, the `split` to read and
options of its loader (e.g. `classes`).
"""

from __future__ import annotations

import numpy as np
import torch

from bnnrepro.data.spec import Splits
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.methods.evaluation_hooks import TargetSamples, require
from bnnrepro.methods.protocol import Method
from bnnrepro.metrics import entropy_ecdf_auc, model_disagreement, predictive_entropy

EVALUATION = "ood_detection"
ENTROPY_EVALUATION = "ood_entropy"


def ood_images(inputs: EvaluationInputs) -> np.ndarray:
    """The first `ood_examples` (all when null) images of the OOD set of the run's dataset: its test split, or the
    `split` its `ood_sets` entry names, read with the entry's loader options."""
    run_dataset, ood_sets = inputs.run_dataset["name"], inputs.settings["ood_sets"]
    if run_dataset not in ood_sets:
        raise ValueError(
            f"OOD evaluation: no OOD set for dataset {run_dataset!r}; config/evaluations/{EVALUATION}.yaml pairs "
            f"{dict(ood_sets)} (add the pair there, and the OOD dataset to the evaluation's `data`)"
        )
    entry = ood_sets[run_dataset]
    options = {"dataset": entry} if isinstance(entry, str) else dict(entry)
    name, split = options.pop("dataset"), options.pop("split", "test")
    preprocessing = {key: inputs.run_dataset.get(key) for key in ("mean", "std")}
    return inputs.dataset(name, **preprocessing, **options).x(split)[: inputs.settings["ood_examples"]]


def entropy_arrays(method: Method, splits: Splits, inputs: EvaluationInputs) -> dict[str, np.ndarray]:
    """Thesis Table 5.2: the predictive [N, C] and labels on the test split, the predictive entropies (nats) on both
    sets and their ECDF-AUCs over [0, log C] (smaller: higher entropies)."""
    test = method.predict(torch.as_tensor(splits.x("test")))
    ood = method.predict(torch.as_tensor(ood_images(inputs)))
    return {
        "test_probabilities": test.numpy(),
        "test_labels": splits.y("test"),
        "test_entropy": predictive_entropy(test[None]).numpy(),
        "ood_entropy": predictive_entropy(ood[None]).numpy(),
        "test_ecdf_auc": np.asarray(entropy_ecdf_auc(test)),
        "ood_ecdf_auc": np.asarray(entropy_ecdf_auc(ood)),
    }


def evaluation_arrays(
    method: TargetSamples | Method, name: str, splits: Splits, inputs: EvaluationInputs
) -> dict[str, np.ndarray]:
    if name == ENTROPY_EVALUATION:
        return entropy_arrays(method, splits, inputs)
    if name != EVALUATION:
        raise KeyError(f"unknown evaluation {name!r} for {__name__}; known: {EVALUATION}, {ENTROPY_EVALUATION}")
    require(method, TargetSamples, EVALUATION)
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

"""config/evaluations/ (bnnrepro.evaluations.declarations): every evaluation is declared the same way, with a
module that computes it, settings at every scale and a known device; an unknown name is a clear error."""

from __future__ import annotations

import importlib
import inspect

import pytest

from bnnrepro.evaluations.declarations import DEVICES, declared_evaluation, declared_evaluations, extra_data_files
from bnnrepro.pipeline.studies import SCALES

EVALUATIONS_OF_FIGURES = ("toy_paths", "latent_paths", "gradient_variance", "posterior_arrays", "calibration",
                          "solver_sweep", "cifar10c", "ood_detection")  # fmt: skip


def test_every_figure_evaluation_is_declared() -> None:
    assert set(EVALUATIONS_OF_FIGURES) <= set(declared_evaluations())


@pytest.mark.parametrize("name", EVALUATIONS_OF_FIGURES)
def test_a_declaration_names_its_code_settings_and_device(name: str) -> None:
    declared = declared_evaluation(name)
    module = importlib.import_module(declared.code)
    assert module.__name__.startswith("bnnrepro.evaluations.")
    assert list(inspect.signature(module.evaluation_arrays).parameters) == ["method", "name", "splits", "inputs"]
    assert set(SCALES) <= set(declared.settings)
    assert declared.device in DEVICES


def test_only_the_image_evaluations_ask_for_the_runs_device() -> None:
    on_run_device = {name for name, declared in declared_evaluations().items() if declared.device == "run"}
    assert on_run_device == {"calibration", "solver_sweep", "cifar10c"}


def test_an_unknown_evaluation_names_the_declared_ones() -> None:
    with pytest.raises(KeyError, match="unknown evaluation 'hidden_paths'.*toy_paths"):
        declared_evaluation("hidden_paths")


def test_an_ood_evaluation_reads_only_the_ood_set_paired_with_its_runs_dataset() -> None:
    """A FashionMNIST run's OOD evaluation needs MNIST, not SVHN: with SVHN unreachable (as on a machine that reaches
    the package registries only) the FashionMNIST rows of the repulsive ensembles' Table 1 still run. Before, every
    run's evaluation declared both (`data: [mnist, svhn]`) and the batch stopped at SVHN's download."""
    fashion = extra_data_files("ood_detection", "paper", run_dataset="fashion_mnist")
    assert fashion == {"mnist": "results/data/mnist.npz"}
    assert extra_data_files("ood_detection", "paper", run_dataset="cifar10") == {"svhn": "results/data/svhn.npz"}
    assert set(extra_data_files("ood_detection", "paper")) == {"mnist", "svhn"}  # every run's: the report's inputs
    settings = declared_evaluation("ood_detection").settings["paper"]["ood_sets"]
    assert {run: (ood,) for run, ood in settings.items()} == dict(declared_evaluation("ood_detection").data)

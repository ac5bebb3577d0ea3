"""Repulsive ensembles' Table 1 (D'Angelo & Fortuin 2021): image networks as particles (an MLP on flattened images,
the CIFAR ResNet without normalisation), each member's PyTorch initialisation, the hyper-deep ensemble's
per-member priors, the OOD evaluation (bnnrepro.evaluations.ood_detection) and the table's statistics
(bnnrepro.artifacts.repulsive_images)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from omegaconf import OmegaConf
from torch.func import functional_call

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import catalog_entry
from bnnrepro.artifacts.repulsive_images import image_classification, ratio_of_means
from bnnrepro.data.registry import load_splits
from bnnrepro.data.standins import cifar_like, mnist_like, svhn_like
from bnnrepro.evaluations.declarations import declared_evaluations
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.evaluations.ood_detection import EVALUATION, evaluation_arrays, ood_images
from bnnrepro.inference import posterior_targets
from bnnrepro.inference.posterior_targets import categorical_log_likelihood, member_prior_variances
from bnnrepro.inference.repulsive import (
    ensemble_forward,
    functional_prior_score,
    log_posterior_grads,
    unflatten_parameters,
)
from bnnrepro.methods import build_method
from bnnrepro.metrics import model_disagreement, predictive_entropy
from bnnrepro.models.image_layout import channels_first
from bnnrepro.models.posterior_networks import relu_mlp
from bnnrepro.paths import project_root
from bnnrepro.train import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CIFAR_MEAN = [0.4914, 0.4822, 0.4465]


@pytest.fixture(scope="module")
def image_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small prepared files in the image loaders' format (x_train, y_train, x_test, y_test)."""
    root = tmp_path_factory.mktemp("images")
    arrays = {
        "fashion_mnist": mnist_like(64, 32, seed=0),
        "mnist": mnist_like(0, 40, seed=1),
        "cifar10": cifar_like(64, 32, 10, seed=0),
        "svhn": svhn_like(40, seed=0),
    }
    arrays["svhn"] = {
        "x_train": arrays["svhn"]["x_test"][:0],
        "y_train": arrays["svhn"]["y_test"][:0],
        **arrays["svhn"],
    }
    files = {}
    for name, data in arrays.items():
        files[name] = root / f"{name}.npz"
        np.savez(files[name], **data)
    return files


def build(method: str, dataset: str, files: dict[str, Path], *overrides: str, seed: int = 0):
    cfg = compose_config(
        [f"method={method}", f"dataset={dataset}", f"dataset.path='{files[dataset]}'", "run_dir=unused",
         "scale=smoke", "method.initialisation=pytorch", *overrides]
    )  # fmt: skip
    torch.manual_seed(seed)
    return cfg, build_method(cfg, load_splits(cfg.dataset).spec(cfg.dataset.task))


# --- networks and initialisation -------------------------------------------------------------------------------


def test_per_member_prior_variances_give_each_member_its_own_posterior() -> None:
    torch.manual_seed(0)
    network = relu_mlp(3, [4], 2)
    particles = torch.randn(4, sum(p.numel() for p in network.parameters()))
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    variances = torch.tensor([0.1, 0.1, 2.0, 2.0])
    likelihood = categorical_log_likelihood(False)
    together, _ = log_posterior_grads(network, particles, x, y, likelihood, 100, variances)
    for i, variance in enumerate(variances.tolist()):
        alone, _ = log_posterior_grads(network, particles[i : i + 1], x, y, likelihood, 100, variance)
        torch.testing.assert_close(together[i], alone[0])


def test_hyper_deep_ensemble_shares_the_prior_variances_in_blocks(image_files) -> None:
    torch.testing.assert_close(member_prior_variances([0.1, 0.5], 4), torch.tensor([0.1, 0.1, 0.5, 0.5]))
    with pytest.raises(ValueError, match="multiple of 2"):
        member_prior_variances([0.1, 0.5], 5)
    _, method = build("hyper_deep_ensemble", "fashion_mnist", image_files, "method.num_particles=10")
    torch.testing.assert_close(
        method.target.prior_variance, torch.tensor([0.01, 0.04, 0.09, 0.16, 0.25]).repeat_interleave(2)
    )
    with pytest.raises(ValueError, match="rule 'de'"):
        build("kde_fwgd", "fashion_mnist", image_files, "method.member_prior_variances=[0.1]", "method.num_particles=2")


def test_pytorch_initialisation_draws_each_member_from_kaiming_uniform(image_files) -> None:
    """Each member its own draw of the network's default initialisation: first-layer weights within
    +-1/sqrt(784), unlike the prior draws N(0, 1) the toys start from."""
    _, method = build(
        "map_ensemble", "fashion_mnist", image_files, "method.num_particles=3", "method.hidden_widths=[16]"
    )
    first_layer = method.particles.detach()[:, : 784 * 16]
    assert first_layer.abs().max() <= 1 / math.sqrt(784)
    assert first_layer.std() > 0.5 / math.sqrt(3 * 784)  # uniform on the bound: std = bound / sqrt(3)
    assert not torch.allclose(first_layer[0], first_layer[1])
    _, prior_start = build("map_ensemble", "fashion_mnist", image_files, "method.initialisation=prior")
    assert prior_start.particles.detach().std() == pytest.approx(1.0, abs=0.05)


def test_resnet_particles_predict_as_separate_networks(image_files) -> None:
    """The vmapped ensemble forward of ResNet8 particles on [B, H, W, C] images equals each member's own network."""
    _, method = build("map_ensemble", "cifar10", image_files, "method.architecture=resnet",
                      "method.resnet_blocks_per_stage=1", "method.num_particles=2")  # fmt: skip
    network, particles = method.target.network, method.particles.detach()
    images = torch.as_tensor(load_splits({"name": "cifar10", "path": str(image_files["cifar10"])}).x("test")[:5])
    together = ensemble_forward(network, particles, images)
    resnet = network[1]
    for i in range(2):
        weights = {name.removeprefix("1."): w for name, w in unflatten_parameters(network)(particles[i]).items()}
        torch.testing.assert_close(together[i], functional_call(resnet, weights, (channels_first(images),)))
    assert sum(p.numel() for p in network.parameters()) == particles.shape[1]


def test_the_predictive_in_input_chunks_is_the_whole_batchs(image_files, monkeypatch) -> None:
    """The classifier's predictive and members' probabilities are taken over chunks of inputs (for the CPU's caches):
    chunks of one image give what one forward of all of them gives."""
    _, method = build("map_ensemble", "cifar10", image_files, "method.architecture=resnet",
                      "method.resnet_blocks_per_stage=1", "method.num_particles=3")  # fmt: skip
    images = torch.as_tensor(load_splits({"name": "cifar10", "path": str(image_files["cifar10"])}).x("test")[:6])
    with torch.no_grad():
        together = method.predict(images), method.member_probabilities(images)
        monkeypatch.setattr(posterior_targets, "FORWARD_ELEMENTS", 1)
        assert len(posterior_targets.input_chunks(images, 3)) == 6
        one_by_one = method.predict(images), method.member_probabilities(images)
    for whole, chunked in zip(together, one_by_one, strict=True):
        torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-7)


# --- the OOD evaluation ----------------------------------------------------------------------------------------


def inputs_for(cfg, files: dict[str, Path], scale: str = "smoke") -> EvaluationInputs:
    settings = declared_evaluations()[EVALUATION].settings[scale]
    data = {name: files[name] for name in declared_evaluations()[EVALUATION].data_of()}
    return EvaluationInputs(settings, data, 0, "cpu", OmegaConf.to_container(cfg.dataset, resolve=True))


def test_ood_evaluation_scores_the_members_on_test_and_ood_inputs(image_files) -> None:
    cfg, method = build("map_ensemble", "fashion_mnist", image_files, "method.num_particles=3")
    splits = load_splits(cfg.dataset)
    arrays = evaluation_arrays(method, EVALUATION, splits, inputs_for(cfg, image_files))
    test = method.member_probabilities(torch.as_tensor(splits.x("test")))
    ood = method.member_probabilities(torch.as_tensor(ood_images(inputs_for(cfg, image_files))))
    assert len(ood) == 3 and ood.shape[1] == 40  # all 40 MNIST test images (smoke keeps the first 100)
    np.testing.assert_allclose(arrays["test_probabilities"], test.mean(0).numpy(), rtol=1e-6)
    np.testing.assert_allclose(arrays["test_entropy"], predictive_entropy(test).numpy(), rtol=1e-6)
    np.testing.assert_allclose(arrays["ood_entropy"], predictive_entropy(ood).numpy(), rtol=1e-6)
    np.testing.assert_allclose(arrays["ood_disagreement"], model_disagreement(ood).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(arrays["test_labels"], splits.y("test"))


def test_ood_images_take_the_runs_preprocessing_and_the_paired_set(image_files) -> None:
    cfg, _ = build("map_ensemble", "cifar10", image_files, "method.architecture=resnet", "method.num_particles=2",
                   "method.resnet_blocks_per_stage=1")  # fmt: skip
    images = ood_images(inputs_for(cfg, image_files))
    raw = np.load(image_files["svhn"])["x_test"].astype(np.float32) / 255
    np.testing.assert_allclose(images, (raw - CIFAR_MEAN) / cfg.dataset.std, atol=1e-6)
    unpaired = inputs_for(cfg, image_files)
    unpaired = EvaluationInputs(unpaired.settings, unpaired.data_files, 0, "cpu", {"name": "mnist"})
    with pytest.raises(ValueError, match="no OOD set for dataset 'mnist'.*config/evaluations/ood_detection.yaml"):
        ood_images(unpaired)


# --- the table ---------------------------------------------------------------------------------------------------


def test_ratio_of_means_and_its_delta_method_error() -> None:
    a, b = pd.Series([2.0, 2.4, 1.9, 2.2]), pd.Series([0.5, 0.55, 0.45, 0.52])
    value, error = ratio_of_means(a, b)
    assert value == pytest.approx(a.mean() / b.mean())
    gradient = np.array([1 / b.mean(), -a.mean() / b.mean() ** 2])  # of a / b at the means
    variance = gradient @ np.cov(np.stack([a, b])) @ gradient / len(a)
    assert error == pytest.approx(math.sqrt(variance))
    assert math.isnan(ratio_of_means(a[:1], b[:1])[1])


def write_run(root: Path, method: str, seed: int, arrays: dict[str, np.ndarray]) -> Path:
    path = root / "runs" / method / "fashion_mnist" / "num_particles=5" / f"seed={seed}" / "eval" / f"{EVALUATION}.npz"
    path.parent.mkdir(parents=True)
    np.savez(path, **arrays)
    return path


def test_table1_has_the_papers_cells_with_standard_errors_and_the_mean_nll(tmp_path: Path) -> None:
    """Rows and columns are the catalog's; NLL is the mean of -log p(y | x), not the authors' -log of the mean
    (the paper does not define its NLL); ± is std / sqrt(seeds)."""
    files = []
    true_class_probability = {0: [0.9, 0.5, 0.2, 0.8], 1: [0.6, 0.6, 0.6, 0.6]}
    for seed, picked in true_class_probability.items():
        picked = np.asarray(picked)
        probabilities = np.stack([picked, 1 - picked], axis=1)
        arrays = {
            "test_probabilities": probabilities, "test_labels": np.zeros(4, dtype=np.int64),
            "test_entropy": np.array([0.1, 0.2, 0.3, 0.4]), "ood_entropy": np.array([0.5, 0.6, 0.15, 0.7]) + seed,
            "test_disagreement": np.array([0.01, 0.02, 0.03, 0.04]),
            "ood_disagreement": np.array([0.05, 0.06, 0.07, 0.08]),
        }  # fmt: skip
        files.append(write_run(tmp_path, "de", seed, arrays))
    table = image_classification(ArtifactContext("repulsive_images", "smoke", run_files=files)).set_index("column")
    published = {(v["row"], v["column"]) for v in catalog_entry("repulsive/table1")["published"]["values"]}
    assert {("Deep ensemble", column) for column in table.index} <= published
    nll = [-np.log(p).mean() for p in true_class_probability.values()]
    assert table.loc["FashionMNIST NLL", "ours"] == pytest.approx(np.mean(nll))
    assert table.loc["FashionMNIST NLL", "ours"] != pytest.approx(-np.log(np.mean(true_class_probability[0])))
    assert table.loc["FashionMNIST NLL", "ours_error"] == pytest.approx(np.std(nll, ddof=1) / math.sqrt(2))
    assert table.loc["FashionMNIST AUROC(H)", "ours"] == pytest.approx((13 / 16 + 1) / 2)  # seed 0: 13 of 16 pairs
    assert table.loc["FashionMNIST AUROC(MD)", "ours"] == 1.0
    assert table.loc["FashionMNIST accuracy", "ours"] == pytest.approx((75 + 100) / 2)
    assert table.loc["FashionMNIST H_o/H_t", "ours"] == pytest.approx((0.4875 + 1.4875) / 2 / 0.25)
    assert table.loc["FashionMNIST MD_o/MD_t", "n_runs"] == 2


def test_an_overflowing_functional_prior_is_a_clear_error() -> None:
    outputs, prior_outputs = torch.zeros(3, 4, 2), torch.full((3, 4, 2), 1e30)
    with pytest.raises(ValueError, match="overflow.*lower method.prior_variance"):
        functional_prior_score(outputs, prior_outputs)


def test_the_studys_resnet32_prior_gives_finite_function_space_scores(image_files) -> None:
    """Table 1's function-space methods on ResNet32 under the study's weight prior (under N(0, 1) the push-forward
    prior overflows: the test fails with method.prior_variance=1)."""
    variant = yaml.safe_load((project_root() / "config/studies/repulsive_images.yaml").read_text())["method_variants"]
    overrides = [f"{key}={value}" for key, value in variant["kde_fwgd@resnet32"].items() if key != "method"]
    _, method = build("kde_fwgd", "cifar10", image_files, *overrides, "method.num_particles=3")
    with np.load(image_files["cifar10"]) as data:
        x, y = torch.as_tensor(data["x_train"][:4]).float() / 255, torch.as_tensor(data["y_train"][:4])
    direction, _ = method.direction(x, y, num_train=45_000)
    assert torch.isfinite(direction).all()

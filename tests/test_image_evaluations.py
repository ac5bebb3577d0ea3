"""The CIFAR-10 evaluations of the SDE-BNN paper's Figs. 6, 7, 9, 11, 12 (bnnrepro.evaluations.image_classification) and
their wiring (bnnrepro.evaluations, config/evaluations/), on tiny untrained models and a few generated images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.artifacts.sdebnn_image_evaluations import pooled_bins
from bnnrepro.data import images
from bnnrepro.data.formats import CIFAR10C_CORRUPTIONS, CIFAR10C_SEVERITIES
from bnnrepro.evaluations.declarations import extra_data_files
from bnnrepro.evaluations.image_classification import (
    calibration,
    corruption_robustness,
    predictive,
    solved_with,
    solver_sweep,
    summary,
    sweep_settings,
    weight_sdes,
)
from bnnrepro.evaluations.inputs import EvaluationInputs, evaluation_inputs
from bnnrepro.methods import build_method
from bnnrepro.metrics import calibration_bins
from bnnrepro.models.weight_sde_solver import SolverSettings
from bnnrepro.train import compose_config, evaluate

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NUM_IMAGES, SEED = 12, 3
TINY = ["method.fx_width=4", "method.blocks=[1,1]", "method.drift_widths=[2,4,2]", "method.solver.num_steps=2"]


def cifar_like(path: Path, count: int = NUM_IMAGES) -> np.ndarray:
    """A CIFAR-10-shaped file of random uint8 images (labels 0-9) at `path`; returns the test images."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (count, 32, 32, 3), dtype=np.uint8)
    y = np.arange(count, dtype=np.int64) % 10
    np.savez(path, x_train=x, y_train=y, x_test=x, y_test=y)
    return x


def image_method(config: str, path: Path, extra: tuple[str, ...] = ()):
    """A tiny, untrained method of the SDE-BNN image study on the CIFAR-10-shaped file at `path`, and its splits."""
    cfg = compose_config([f"method={config}", "dataset=cifar10", "run_dir=unused", f"dataset.path={path}", *extra])
    splits = images.load(path, cfg.dataset)
    torch.manual_seed(0)
    return build_method(cfg, splits.spec("classification")).eval(), splits, cfg


@pytest.fixture(scope="module")
def sdebnn(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("data") / "cifar10.npz"
    cifar_like(path)
    return image_method("sdebnn_cifar10", path, tuple(TINY))


def test_the_sweep_at_the_training_setting_reproduces_the_models_own_test_metrics(sdebnn) -> None:
    """With 2 training steps the dyadic tree of the paired paths splits where the training tree does (t = 1/2), so
    the sweep's training row is exactly the test evaluation of the training job under the same seed."""
    method, splits, _ = sdebnn
    settings = {"step_factors": [0.5, 1, 2], "tolerances": [0.1]}
    with torch.no_grad():
        arrays = solver_sweep(method, splits, EvaluationInputs(settings, seed=SEED))
        data = {"test": (torch.as_tensor(splits.x("test")), torch.as_tensor(splits.y("test")))}
        torch.manual_seed(SEED)
        own = evaluate(method, data, "classification", ("test",))
    assert arrays["num_steps"].tolist() == [1, 2, 4, 2] and arrays["adaptive"].tolist() == [False] * 3 + [True]
    row = arrays["num_steps"].tolist().index(2)
    for metric in ("accuracy", "nll", "ece"):
        assert arrays[metric][row] == pytest.approx(own[f"test_{metric}"], abs=1e-6)
    assert arrays["nfe"][:3].tolist() == [2, 3, 5]  # n Euler steps + torchsde's shape check, per block
    assert np.isfinite(arrays["seconds"]).all() and (arrays["bin_counts"].sum(1) == NUM_IMAGES).all()
    assert all(block.solver.num_steps == 2 and not block.solver.paired_paths for block in weight_sdes(method))


def test_paired_brownian_paths_make_finer_steps_converge(sdebnn) -> None:
    """Every setting sees the same Brownian path, so the Euler-Maruyama solutions converge as the step shrinks
    (strongly: the weights' noise is additive); without pairing, each grid would draw another path."""
    method, splits, _ = sdebnn
    blocks, trained = weight_sdes(method), weight_sdes(method)[0].solver

    def probs(num_steps: int, paired: bool) -> torch.Tensor:
        settings = SolverSettings(num_steps=num_steps, paired_paths=paired)
        with torch.no_grad(), solved_with(blocks, settings):
            return predictive(method, splits.x("test"), SEED)

    def gap(coarse: int, paired: bool) -> float:
        return float((probs(coarse, paired) - probs(2 * coarse, paired)).abs().max())

    assert gap(16, paired=True) < 0.4 * gap(4, paired=True)
    assert gap(16, paired=False) > 3 * gap(16, paired=True)
    assert blocks[0].solver == trained and "f" not in vars(blocks[0].sde)  # restored after each solve


def test_sweep_settings_scale_the_training_step_count() -> None:
    settings = sweep_settings(SolverSettings(num_steps=4), [0.25, 0.5, 1, 2, 4], [0.1, 0.01])
    assert [s.num_steps for s in settings] == [1, 2, 4, 8, 16, 4, 4]
    assert [s.rtol for s in settings if s.adaptive] == [0.1, 0.01] == [s.atol for s in settings if s.adaptive]
    assert all(s.paired_paths for s in settings)


def test_reliability_bins_hold_every_test_point_and_give_the_ece(sdebnn) -> None:
    method, splits, _ = sdebnn
    with torch.no_grad():
        arrays = calibration(method, splits, EvaluationInputs(seed=SEED))
    counts, filled = arrays["bin_counts"], arrays["bin_counts"] > 0
    assert counts.sum() == NUM_IMAGES and len(counts) == 10
    gaps = np.abs(arrays["bin_accuracy"][filled] - arrays["bin_confidence"][filled])
    assert (counts[filled] * gaps).sum() / NUM_IMAGES == pytest.approx(float(arrays["ece"]), abs=1e-6)


def test_pooled_bins_equal_the_bins_of_all_seeds_predictions() -> None:
    probs = torch.softmax(torch.randn(2, 50, 10, generator=torch.Generator().manual_seed(0)), -1)
    labels = torch.randint(10, (2, 50), generator=torch.Generator().manual_seed(1))
    pooled = pooled_bins([summary(p, y) for p, y in zip(probs, labels, strict=True)])
    together = calibration_bins(probs.flatten(0, 1), labels.flatten())
    assert np.array_equal(pooled["counts"], together.counts.numpy())
    np.testing.assert_allclose(pooled["accuracy"], together.accuracy.numpy(), rtol=1e-6)
    np.testing.assert_allclose(pooled["confidence"], together.confidence.numpy(), rtol=1e-6)


def write_corruptions(path: Path, clean: np.ndarray, identity: str) -> None:
    """A CIFAR-10-C-shaped file: corruption `identity` leaves the images as they are at every severity, the
    others invert them."""
    labels = np.tile(np.arange(len(clean), dtype=np.int64) % 10, CIFAR10C_SEVERITIES)
    arrays = {c: np.tile(clean if c == identity else 255 - clean, (CIFAR10C_SEVERITIES, 1, 1, 1))
              for c in CIFAR10C_CORRUPTIONS}  # fmt: skip
    np.savez(path, labels=labels, **arrays)


@pytest.mark.parametrize("config", ["sdebnn_cifar10", "mfvi_resnet32"])
def test_an_identity_corruption_gives_the_clean_metrics(config: str, tmp_path: Path) -> None:
    """Each CIFAR-10-C set is evaluated with the same weight draw as the clean images: a corruption that changes
    nothing gives the clean metrics at every severity (as a "severity 0"), one that does gives others."""
    clean = cifar_like(tmp_path / "cifar10.npz")
    write_corruptions(tmp_path / "cifar10c.npz", clean, identity="fog")
    tiny = TINY if config.startswith("sdebnn") else ["method.blocks_per_stage=1", "method.width_multiplier=0.25"]
    method, splits, _ = image_method(config, tmp_path / "cifar10.npz", tuple(tiny))
    inputs = EvaluationInputs({"images_per_severity": 8}, {"cifar10c": tmp_path / "cifar10c.npz"}, SEED)
    with torch.no_grad():
        arrays = corruption_robustness(method, splits, inputs)
    assert (
        arrays["accuracy"].shape == (len(CIFAR10C_CORRUPTIONS), CIFAR10C_SEVERITIES)
        and arrays["images_per_severity"] == 8
    )
    fog = list(CIFAR10C_CORRUPTIONS).index("fog")
    for metric in ("accuracy", "nll", "ece"):
        np.testing.assert_allclose(arrays[metric][fog], float(arrays[f"clean_{metric}"]), rtol=1e-6)
    assert not np.allclose(arrays["nll"][fog - 1], float(arrays["clean_nll"]))


def test_the_extra_dataset_is_the_standin_below_paper_and_the_real_file_at_paper() -> None:
    assert extra_data_files("cifar10c", "smoke") == {"cifar10c": "results/data/cifar10c-standin.npz"}
    assert extra_data_files("cifar10c", "default") == {"cifar10c": "results/data/cifar10c-standin.npz"}
    assert extra_data_files("cifar10c", "paper") == {"cifar10c": "results/data/cifar10c.npz"}
    assert extra_data_files("solver_sweep", "paper") == {} == extra_data_files("toy_paths", "default")


def run_config(scale: str = "default"):
    return OmegaConf.create({"scale": {"name": scale}, "seed": 0, "device": "cpu"})


def test_a_missing_cifar10c_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "cifar10c-standin.npz"
    with pytest.raises(FileNotFoundError, match=r"dataset 'cifar10c'.*does not exist.*snakemake"):
        evaluation_inputs("cifar10c", run_config(), {"cifar10c": missing})
    with pytest.raises(ValueError, match=r"reads datasets \['cifar10c'\].*--data"):
        evaluation_inputs("cifar10c", run_config(), {})


def test_a_corrupt_cifar10c_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "cifar10c-standin.npz"
    broken.write_bytes(b"PK\x03\x04 half a download")
    inputs = evaluation_inputs("cifar10c", run_config("smoke"), {"cifar10c": broken})
    assert inputs.settings == {"images_per_severity": 20}
    with pytest.raises(ValueError, match=r"dataset 'cifar10c': cannot read .*corrupt.*snakemake"):
        inputs.dataset("cifar10c", corruption="fog", severity=1)

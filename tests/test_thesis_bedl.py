"""Thesis chapter 5 (BEDL, Haußmann 2021): the study `thesis_bedl`, the OOD-entropy evaluation of Table 5.2
(bnnrepro.evaluations.ood_detection), the tables (bnnrepro.artifacts.thesis_bedl) on constructed results, the FLOP
counts of Table 5.4, and two of the authors' code's slips that we do not copy (BEDL-PAC without its regulariser's
constant, `manuelhaussmann/bedl` `exp_classification_archs.py`; a convolution's fan-in, `manuelhaussmann/vbp`
`VBPLayer.py`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.operation_counter import count_matmul_flops
from bnnrepro.artifacts.registry import catalog_entry, implementation
from bnnrepro.artifacts.thesis_bedl import STUDY, classification_and_ood, gp_comparison, uci_log_likelihood
from bnnrepro.artifacts.thesis_bedl_costs import (
    BUILDERS,
    FLOP_NETWORK,
    build_model,
    flops_per_data_point,
    measured_flops,
    method_config,
    step_and_prediction_flops,
    with_samples,
)
from bnnrepro.data.registry import load_splits
from bnnrepro.data.standins import cifar_like, mnist_like
from bnnrepro.evaluations.declarations import declared_evaluations
from bnnrepro.evaluations.inputs import EvaluationInputs
from bnnrepro.evaluations.ood_detection import ENTROPY_EVALUATION, evaluation_arrays, ood_images
from bnnrepro.inference.gaussian_moments import Moments
from bnnrepro.layout import evaluation_file, run_file, run_folder_name
from bnnrepro.methods import build_method
from bnnrepro.metrics import predictive_entropy
from bnnrepro.models.moment_layers import GaussianAffine, LayerShape
from bnnrepro.optim import Adam
from bnnrepro.pipeline.studies import SCALES, load_study
from bnnrepro.train import compose_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def published_cells(artifact_id: str) -> set[tuple[str, str]]:
    return {(v["row"], v["column"]) for v in catalog_entry(artifact_id)["published"]["values"]}


def cells(table: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(row.row, row.column): row for row in table.itertuples(index=False)}


# --- the study -------------------------------------------------------------------------------------------------------


def test_the_study_has_a_grid_per_scale_and_draws_its_four_tables() -> None:
    study = load_study(STUDY)  # its runs compose at every scale: test_workflow_config
    counts = {scale: len(study.runs(scale)) for scale in SCALES}
    assert counts["smoke"] < counts["default"] < counts["paper"]
    paper = study.runs("paper")
    table = study.runs("paper", sensitivity=False)
    uci = [run for run in table if run.dataset.startswith("uci_")]
    names = ("boston", "concrete", "energy", "kin8nm", "naval", "power", "protein", "wine")
    assert {run.dataset for run in uci} == {f"uci_{name}" for name in names}
    assert len(uci) == 4 * (7 * 20 + 5)  # four methods; 20 standard splits, protein's 5
    assert {dict(run.hparams)["train.epochs"] for run in uci} == {100}
    sensitivity = [run for run in paper if run not in table]
    longer = [run for run in sensitivity if dict(run.hparams).get("train.epochs") != 100]
    assert len(longer) == 2 * 2 * 5 * 2  # sensitivity_epochs: BEDL(-PAC), boston/energy, splits 0-4, 300/1000 epochs
    hyperprior = [run for run in sensitivity if "method.hyperprior.b_0" in dict(run.hparams)]
    assert len(hyperprior) == 5 and {run.method for run in hyperprior} == {"bedl_hyper@protein"}
    assert len(sensitivity) == len(longer) + len(hyperprior)
    assert all(run not in study.runs(scale) for run in sensitivity for scale in ("smoke", "default"))
    assert study.artifacts == ("thesis/table5.1", "thesis/table5.2", "thesis/table5.3", "thesis/table5.4")
    table52 = implementation("thesis/table5.2")
    ood_runs = [run for run in paper if "@lenet5" in run.method]
    assert len(ood_runs) == 12 and all(run.method in table52.methods for run in ood_runs)
    for artifact_id in study.artifacts:
        assert implementation(artifact_id).note("smoke")


def test_the_cifar5_variants_train_on_classes_0_to_4_and_table_5_3_on_all_ten() -> None:
    study = load_study(STUDY)
    overrides = {run.method: study.overrides(run) for run in study.runs("paper") if run.dataset == "cifar10"}
    cfg = compose_config([*overrides["bedl_pac@lenet5_cifar5"], "run_dir=unused", "scale=paper"])
    assert list(cfg.dataset.classes) == [0, 1, 2, 3, 4]
    assert [list(c) for c in cfg.method.convolutions] == [[192, 5, 2], [192, 5, 2]] and cfg.method.objective == "pac"
    cfg = compose_config([*overrides["bedl@cnn96"], "run_dir=unused", "scale=paper"])
    assert cfg.dataset.classes is None and list(cfg.method.hidden_widths) == [] and cfg.train.epochs == 50


# --- the OOD evaluation ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def image_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("images")
    arrays = {"mnist": mnist_like(200, 40, seed=1), "fashion_mnist": mnist_like(0, 30, seed=2),
              "cifar10": cifar_like(100, 60, 10, seed=0)}  # fmt: skip
    files = {}
    for name, data in arrays.items():
        files[name] = root / f"{name}.npz"
        np.savez(files[name], **data)
    return files


def inputs_for(cfg, files: dict[str, Path], scale: str = "smoke") -> EvaluationInputs:
    declared = declared_evaluations()[ENTROPY_EVALUATION]
    data = {name: files[name] for name in declared.data}
    return EvaluationInputs(declared.settings[scale], data, 0, "cpu", OmegaConf.to_container(cfg.dataset, resolve=True))


def tiny(method: str, dataset: str, files: dict[str, Path], *overrides: str):
    cfg = compose_config([f"method={method}", f"dataset={dataset}", f"dataset.path='{files[dataset]}'",
                          "run_dir=unused", "scale=smoke", "method.convolutions=[[4,5,2]]",
                          "method.hidden_widths=[16]", *overrides])  # fmt: skip
    torch.manual_seed(0)
    return cfg, build_method(cfg, load_splits(cfg.dataset).spec(cfg.dataset.task))


@pytest.mark.parametrize("method", ["bedl_pac", "edl", "mc_dropout"])
def test_the_ood_evaluation_gives_the_entropies_and_an_ecdf_auc_within_0_and_log_c(image_files, method) -> None:
    cfg, model = tiny(method, "mnist", image_files)
    splits = load_splits(cfg.dataset)
    x, y = torch.as_tensor(splits.x("train")), torch.as_tensor(splits.y("train"))
    optimizer = Adam(model.parameter_groups(1e-2, 0.1))
    for _ in range(5):
        model.training_step(x, y, len(y), optimizer)
    model.eval()
    inputs = inputs_for(cfg, image_files)
    with torch.no_grad():
        arrays = evaluation_arrays(model, ENTROPY_EVALUATION, splits, inputs)
    ood = ood_images(inputs)
    assert len(ood) == 30 and len(arrays["ood_entropy"]) == 30  # Fashion-MNIST's 30 test images
    log_c = math.log(10)
    for split in ("test", "ood"):
        auc = float(arrays[f"{split}_ecdf_auc"])
        assert 0 <= auc <= log_c
        assert auc == pytest.approx(log_c - arrays[f"{split}_entropy"].mean(), abs=1e-5)
    probs = arrays["test_probabilities"]
    assert probs.shape == (40, 10) and np.allclose(probs.sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(arrays["test_entropy"], predictive_entropy(torch.as_tensor(probs)[None]), rtol=1e-5)
    np.testing.assert_array_equal(arrays["test_labels"], splits.y("test"))


def test_the_cifar5_run_is_scored_on_the_test_images_of_classes_5_to_9(image_files) -> None:
    cfg, _ = tiny("bedl", "cifar10", image_files, "dataset.classes=[0,1,2,3,4]")
    assert load_splits(cfg.dataset).spec("classification").num_classes == 5
    images = ood_images(inputs_for(cfg, image_files))
    raw = np.load(image_files["cifar10"])
    others = raw["x_test"][np.isin(raw["y_test"], [5, 6, 7, 8, 9])].astype(np.float32) / 255
    assert len(images) == len(others) == 30
    np.testing.assert_allclose(images, (others - np.asarray(cfg.dataset.mean)) / np.asarray(cfg.dataset.std), atol=1e-5)


def test_an_unpaired_dataset_is_an_error_naming_the_pairs(image_files) -> None:
    cfg, _ = tiny("bedl", "mnist", image_files)
    inputs = inputs_for(cfg, image_files)
    unpaired = EvaluationInputs(inputs.settings, inputs.data_files, 0, "cpu", {"name": "fashion_mnist"})
    with pytest.raises(ValueError, match="no OOD set for dataset 'fashion_mnist'.*mnist"):
        ood_images(unpaired)


# --- the tables on constructed results -------------------------------------------------------------------------------


def metrics_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "metrics.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_table_5_1_is_the_mean_and_standard_error_of_the_log_likelihood_over_splits(tmp_path: Path) -> None:
    nll = {"bedl": [1.0, 1.2, 1.7], "varout": [2.0, 2.5, 3.0], "bedl_pac@protein": [0.5, 0.7, 0.6]}
    rows = [
        {"run": f"{method}/{split}", "method": method,
         "dataset": "uci_protein" if "protein" in method else "uci_boston", "split": split, "seed": 0,
         "metric": metric, "value": value if metric == "test_nll_original" else 9.0}
        for method, values in nll.items() for split, value in enumerate(values)
        for metric in ("test_nll_original", "test_nll")
    ]  # fmt: skip
    image_run = {"run": "bedl@lenet5/0", "method": "bedl@lenet5", "dataset": "mnist", "split": 0, "seed": 0}
    rows.append({**image_run, "metric": "test_nll_original", "value": 0.1})  # not a UCI cell
    table = uci_log_likelihood(ArtifactContext(STUDY, "smoke", metrics_file(tmp_path, rows)))
    got = cells(table)
    assert set(got) == {("BEDL", "boston"), ("VarOut", "boston"), ("BEDL-PAC", "protein")}
    assert set(got) <= published_cells("thesis/table5.1")
    bedl = got["BEDL", "boston"]
    assert bedl.ours == pytest.approx(-np.mean(nll["bedl"]))
    assert bedl.ours_error == pytest.approx(np.std(nll["bedl"], ddof=1) / math.sqrt(3))
    assert bedl.n_runs == 3
    assert got["BEDL-PAC", "protein"].ours == pytest.approx(-0.6)
    assert not {"Sparse GP", "MC Dropout", "PBP", "DVI"} & set(table["row"])  # cited rows: published only


def test_table_5_1_leaves_out_the_training_lengths_of_the_sensitivity_grid(tmp_path: Path) -> None:
    runs = [run for run in load_study(STUDY).runs("paper") if run.method == "bedl" and run.dataset == "uci_energy"]
    nll = {100: 1.5, 300: 1.2, 1000: 0.9}
    rows = [{"run": run.id, "method": run.method, "dataset": run.dataset, "split": dict(run.hparams)["dataset.split"],
             "seed": 0, "metric": "test_nll_original", "value": nll[dict(run.hparams)["train.epochs"]]}
            for run in runs]  # fmt: skip
    assert {row["value"] for row in rows} == set(nll.values())
    table = uci_log_likelihood(ArtifactContext(STUDY, "paper", metrics_file(tmp_path, rows)))
    bedl = cells(table)["BEDL", "energy"]
    assert bedl.ours == pytest.approx(-1.5) and bedl.n_runs == 20  # the thesis' 100 epochs, all 20 splits
    assert "100 epochs" in implementation("thesis/table5.1").note("paper")


def eval_files(tmp_path: Path, values: dict[tuple[str, str, int], tuple[float, float]]) -> list[Path]:
    """An ood_entropy file per (method, dataset, seed) with the given test error (%) and OOD ECDF-AUC."""
    paths = []
    for (method, dataset, seed), (error, auc) in values.items():
        labels = np.zeros(100, dtype=np.int64)
        probs = np.tile([0.9, 0.1], (100, 1))
        probs[: int(round(error)), :] = [0.1, 0.9]  # error% of the inputs predicted as class 1
        folder_name = run_folder_name(f"{method}/{dataset}/h/seed={seed}", "0123abcd")
        path = tmp_path / run_file(evaluation_file(ENTROPY_EVALUATION), "smoke", folder_name)
        path.parent.mkdir(parents=True)
        np.savez(path, test_probabilities=probs, test_labels=labels, ood_ecdf_auc=np.asarray(auc))
        paths.append(path)
    return paths


def test_table_5_2_puts_each_runs_error_and_ecdf_auc_in_its_dataset_pairs_columns(tmp_path: Path) -> None:
    files = eval_files(tmp_path, {
        ("bedl_pac@lenet5", "mnist", 0): (2.0, 0.05), ("bedl_pac@lenet5", "mnist", 1): (4.0, 0.07),
        ("edl@lenet5_cifar5", "cifar10", 0): (20.0, 0.4),
    })  # fmt: skip
    table = classification_and_ood(ArtifactContext(STUDY, "smoke", run_files=files))
    got = cells(table)
    assert set(got) <= published_cells("thesis/table5.2")
    assert got["BEDL-PAC", "MNIST test error"].ours == pytest.approx(3.0)
    assert got["BEDL-PAC", "MNIST test error"].ours_error == pytest.approx(1.0)  # std sqrt(2) / sqrt(2 seeds)
    assert got["BEDL-PAC", "Fashion-MNIST OOD ECDF-AUC"].ours == pytest.approx(0.06)
    assert got["EDL", "CIFAR 1–5 test error"].ours == pytest.approx(20.0)
    assert got["EDL", "CIFAR 6–10 OOD ECDF-AUC"].ours == pytest.approx(0.4)
    assert math.isnan(got["EDL", "CIFAR 6–10 OOD ECDF-AUC"].ours_error)  # one seed
    assert len(got) == 4


def test_table_5_3_gives_the_cnn96_runs_test_error_and_no_gp_rows(tmp_path: Path) -> None:
    rows = [
        {"method": "bedl@cnn96", "dataset": "mnist", "seed": 0, "metric": "test_accuracy", "value": 0.99},
        {"method": "bedl_pac@cnn96", "dataset": "cifar10", "seed": 0, "metric": "test_accuracy", "value": 0.6},
        {"method": "bedl_pac@cnn96", "dataset": "cifar10", "seed": 1, "metric": "test_accuracy", "value": 0.7},
        {"method": "bedl@lenet5", "dataset": "mnist", "seed": 0, "metric": "test_accuracy", "value": 0.5},
    ]
    got = cells(gp_comparison(ArtifactContext(STUDY, "smoke", metrics_file(tmp_path, rows))))
    assert set(got) == {("BEDL", "MNIST test error"), ("BEDL-PAC", "CIFAR10 test error")}
    assert set(got) <= published_cells("thesis/table5.3")
    assert got["BEDL", "MNIST test error"].ours == pytest.approx(1.0)
    assert got["BEDL-PAC", "CIFAR10 test error"].ours == pytest.approx(35.0)
    assert got["BEDL-PAC", "CIFAR10 test error"].ours_error == pytest.approx(5.0)


# --- Table 5.4: FLOPs ------------------------------------------------------------------------------------------------


def test_the_clt_layer_costs_three_products_of_the_deterministic_layer() -> None:
    """E[f] = mu E[h]; var[f] = (mu^2 + sigma^2) var[h] + sigma^2 E[h]^2: three products per layer (§5.1.1), two for
    a deterministic input (its variance is 0)."""
    for shape, inputs in ((LayerShape(64, 32), (8, 64)), (LayerShape(6, 16, 5, 2), (8, 6, 20, 20))):
        layer = GaussianAffine(shape)
        x = torch.randn(inputs)
        deterministic = count_matmul_flops(layer.mean_forward, x)
        assert count_matmul_flops(layer.moments, Moments(x, x.square())) == 3 * deterministic
        assert count_matmul_flops(layer.moments, x) == 2 * deterministic


def test_bedl_costs_about_three_edl_passes_and_mc_dropout_prediction_grows_linearly_in_s() -> None:
    flops = measured_flops(methods=("edl", "bedl", "bedl_pac", "mc_dropout"), sample_counts=(1, 5, 10))
    flops = flops.set_index(["method", "S"])
    for method in ("bedl", "bedl_pac"):
        for kind in ("training", "prediction"):
            ratio = flops.loc[(method, 5), kind] / flops.loc[("edl", 5), kind]
            assert 2.7 < ratio <= 3.0  # 3F but for the first layer's two products (its input is deterministic)
        assert flops.loc[(method, 1), "prediction"] == flops.loc[(method, 10), "prediction"]  # sampling is elementwise
    dropout = flops.loc["mc_dropout", "prediction"]
    assert dropout[5] == 5 * dropout[1] and dropout[10] == 10 * dropout[1]
    assert dropout[1] == flops.loc[("edl", 1), "prediction"]  # one mask: one deterministic pass, F


def test_table_5_4_shows_the_measured_counts_beside_the_thesis_big_o() -> None:
    got = cells(flops_per_data_point(ArtifactContext(STUDY, "smoke")))
    assert got["BEDL", "thesis: prediction"].ours == "O(3F + SL)"
    assert got["VarOut", "prediction / F, S=5"].ours == pytest.approx(10.0)  # 2F per draw, 5 draws
    assert got["EDL", "prediction / F, S=5"].ours == pytest.approx(1.0)
    assert 2.7 < got["BEDL-PAC", "training / EDL's, S=5"].ours <= 3.0
    rows = {row for row, _ in got}
    assert rows == {"MC Dropout", "VarOut", "DVI", "EDL", "BEDL", "BEDL-PAC"}


# --- the authors' code's slips that we do not copy -------------------------------------------------------------------
# (`manuelhaussmann/bedl`, `exp_classification_archs.py`; `manuelhaussmann/vbp`, `VBPLayer.py`)


def seeded_loss(method: str, x: torch.Tensor, y: torch.Tensor, *overrides: str, spec=None) -> float:
    cfg = with_samples(method_config(f"{method}{FLOP_NETWORK}"), 5)
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
    torch.manual_seed(0)
    model = build_model(cfg)
    torch.manual_seed(1)
    return float(model.loss(x, y, 60_000).detach())


def test_bedl_pac_adds_the_pac_regulariser_which_depends_on_delta() -> None:
    """Eq. (5.10): -1/N sum log p + sqrt((KL - log delta + log B) / N). The authors' BEDL class has no regulariser;
    ours: BEDL-PAC's loss exceeds BEDL's (same weights, same draws) by the square root, which grows as delta
    shrinks."""
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn((16, 28, 28), generator=generator), torch.randint(10, (16,), generator=generator)
    bedl = seeded_loss("bedl", x, y)
    pac = seeded_loss("bedl_pac", x, y, "method.delta=0.05")
    assert pac > bedl + 1.0  # log B / N = 1 for classification (§5.3): the root is at least 1
    assert seeded_loss("bedl_pac", x, y, "method.delta=1e-6") > pac > seeded_loss("bedl_pac", x, y, "method.delta=1.0")


def test_a_convolutions_initial_means_use_its_true_fan_in() -> None:
    """He-normal means, std sqrt(2 / (in_channels k k)) (§3.5.4, §5.8.2.1). The authors' VBP code
    (`manuelhaussmann/vbp`, `VBPLayer.py`) takes in_channels (k-1)! as the fan-in: for k = 3 that is a std 2.1 times
    too large, for k = 5 2% too small."""
    for kernel in (3, 5):
        means = GaussianAffine(LayerShape(64, 256, kernel, 1)).weight_mean.detach()
        expected = math.sqrt(2 / (64 * kernel * kernel))
        assert float(means.std()) == pytest.approx(expected, rel=0.01)
        assert float(means.mean()) == pytest.approx(0, abs=0.01 * expected)


def test_every_table_5_4_model_has_its_builder() -> None:
    assert {"mc_dropout", "varout", "dvi", "edl", "bedl"} <= set(BUILDERS)
    model = build_model(with_samples(method_config(f"dvi{FLOP_NETWORK}"), 3))
    assert model.num_samples == 3 and model.softmax_expectation == "sampled"
    training, prediction = step_and_prediction_flops(model)
    assert training > prediction > 0

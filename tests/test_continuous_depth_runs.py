"""SDE-BNN and ODEnet as training jobs on the toy 1D regression, and the evaluation job that reloads them.

The runs go through `python -m bnnrepro.train` and `python -m bnnrepro.evaluations` as the workflow runs them;
Table 2 is rendered from the resolved configs the runs wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.sdebnn_toy import hyperparameters, toy_note
from bnnrepro.data.registry import generate_instance
from bnnrepro.pipeline.studies import load_study
from tests.conftest import ROOT, environment


@pytest.fixture(scope="session")  # not "module": an xdist worker may run other modules' tests between these
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/<scale>/runs/<method>/sdebnn_toy/default/seed=0 of an SDE-BNN and an ODEnet, trained
    for a few epochs and evaluated."""
    root = tmp_path_factory.mktemp("toy")
    data = root / "seed=0.npz"
    generate_instance("sdebnn_toy", "seed=0", data)
    for method in ("sdebnn", "odenet"):
        run_dir = root / f"results/smoke/runs/{method}/sdebnn_toy/default/seed=0"
        train = [sys.executable, "-m", "bnnrepro.train", f"method={method}", "dataset=sdebnn_toy", "scale=smoke",
                 f"dataset.path='{data}'", f"run_dir='{run_dir}'"]  # fmt: skip
        evaluate = [sys.executable, "-m", "bnnrepro.evaluations", str(run_dir), "toy_paths", str(run_dir / "eval.npz")]
        for command in (train, evaluate):
            subprocess.run(command, env=environment(ROOT), check=True, capture_output=True)
    return root / "results/smoke/runs"


def test_regression_runs_report_the_rmse_of_the_predictive_mean(runs: Path) -> None:
    for method in ("sdebnn", "odenet"):
        metrics = json.loads((runs / f"{method}/sdebnn_toy/default/seed=0/metrics.json").read_text())
        assert metrics["metrics"]["selected_epoch"] == 10  # select_by: epoch (the toy has no validation split)
        assert 0 < metrics["metrics"]["test_rmse"] < 5
        assert "val_rmse" not in metrics["metrics"]  # the empty validation split has no metrics


def test_evaluation_reloads_the_run_and_draws_paths_and_predictives(runs: Path) -> None:
    sde = np.load(runs / "sdebnn/sdebnn_toy/default/seed=0/eval.npz")
    ode = np.load(runs / "odenet/sdebnn_toy/default/seed=0/eval.npz")
    assert sde["posterior_predictive"].shape == (100, 200) and sde["prior_predictive"].shape == (100, 200)
    assert sde["hidden_paths"].shape == (51, 50, 7, 3)  # [times, weight samples, inputs, 1 + 2 augmented dims]
    assert sde["hidden_paths"][-1].std(axis=0).min() > 0  # weight uncertainty spreads the paths
    assert np.allclose(sde["hidden_paths"][0, :, :, 0], sde["trajectory_inputs"])  # h(0) = the input
    assert np.allclose(sde["hidden_paths"][0, :, :, 1:], 0)  # the augmented dimensions start at zero
    assert ode["hidden_paths"].shape == (51, 1, 7, 3)  # one deterministic path per input
    assert sde["weights_at_t1"].shape[0] == 1000 and "weights_at_t1" not in ode.files


def test_table2_is_rendered_from_the_configs_the_runs_used(runs: Path) -> None:
    configs = sorted(runs.glob("*/sdebnn_toy/default/seed=0/config.yaml"))
    table = hyperparameters(ArtifactContext("study", "smoke", run_files=configs)).set_index("row")["ours"]
    assert table["SDE BNN: Diffusion σ"] == "0.2" and table["ODEnet: Diffusion σ"] == "0.0"
    assert table["SDE BNN: Epochs"] == "10"  # the smoke protocol's, not the paper's 800
    assert table["SDE BNN: # Posterior Samples"] == "20" and "ODEnet: # Posterior Samples" not in table


def test_an_evaluation_of_the_same_run_draws_the_same_paths(runs: Path, tmp_path: Path) -> None:
    """The run's seed fixes the Brownian motion of the hidden-state and weight paths (torchsde draws it from NumPy's
    unseeded generator unless it is given one), so evaluating the same checkpoint again gives the same arrays."""
    run_dir = runs / "sdebnn/sdebnn_toy/default/seed=0"
    again = tmp_path / "again.npz"
    command = [sys.executable, "-m", "bnnrepro.evaluations", str(run_dir), "toy_paths", str(again)]
    subprocess.run(command, env=environment(ROOT), check=True, capture_output=True)
    first, second = np.load(run_dir / "eval.npz"), np.load(again)
    for key in ("hidden_paths", "weights_at_t1", "posterior_predictive"):
        assert np.array_equal(first[key], second[key]), key


@pytest.mark.parametrize("scale", ["smoke", "default"])
def test_the_toy_note_states_the_workshop_models_solver_and_paths_of_the_grid(scale: str) -> None:
    """The note once said 20 steps and 20 paths at every scale below paper, whatever the study's grid ran."""
    (run,) = [run for run in load_study("sdebnn_toy").runs(scale) if run.method == "ws_sdebnn"]
    settings = dict(run.hparams)
    steps, paths = settings["method.solver.num_steps"], settings["method.num_samples"]
    assert f"{steps} Euler steps (dt {1 / steps:g}, paper 0.01) and {paths} weight paths" in toy_note(scale)

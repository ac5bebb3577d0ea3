"""A run's network size (bnnrepro.methods.architecture), what a benchmark's leaderboard shows beside its ranks: the
parameter count against the closed form of the layers, the depth by the rule its docstring states, and a trained
run's metrics.json carrying both into the tidy table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from bnnrepro.aggregate import RUN_FACTS
from bnnrepro.data.registry import generate_instance
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import build_method
from bnnrepro.methods.architecture import architecture, hidden_layers, trainable_parameters
from bnnrepro.report.benchmark import method_costs
from bnnrepro.train import compose_config
from tests.conftest import ROOT, environment

INPUTS = 6
REGRESSION = DataSpec("regression", INPUTS, 0, (INPUTS,))


def mlp_parameters(inputs: int, widths: list[int], outputs: int) -> int:
    """Weights and biases of a fully connected network: sum over its layers of (fan-in + 1) x fan-out."""
    sizes = [inputs, *widths, outputs]
    return sum((fan_in + 1) * fan_out for fan_in, fan_out in zip(sizes, sizes[1:], strict=False))


def built(method: str, *overrides: str) -> tuple[nn.Module, dict]:
    cfg = compose_config([f"method={method}", "dataset=uci_yacht", "run_dir=unused", *overrides])
    return build_method(cfg, REGRESSION), cfg.method


def test_fixed_buffers_are_not_trained_parameters() -> None:
    layer = nn.Linear(3, 2)
    layer.register_buffer("prior_precision", torch.ones(5))
    layer.bias.requires_grad_(False)
    assert trainable_parameters(layer) == 3 * 2


def test_an_ensemble_counts_every_member_and_its_variance_heads() -> None:
    """Five networks of one hidden layer of 50 units, each with a mean and a variance output."""
    method, method_cfg = built("deep_ensemble", "method.hidden_widths=[50]", "method.num_members=5",
                               "method.variance_heads=true")  # fmt: skip
    assert architecture(method, method_cfg) == {"parameters": 5 * mlp_parameters(INPUTS, [50], 2), "hidden_layers": 1}


def test_a_mean_field_posterior_counts_a_mean_and_a_scale_per_weight() -> None:
    method, method_cfg = built("mfvi", "method.hidden_widths=[50,50]")
    noise = sum(p.numel() for name, p in method.named_parameters() if "likelihood" in name and p.requires_grad)
    assert trainable_parameters(method) - noise == 2 * mlp_parameters(INPUTS, [50, 50], 1)
    assert hidden_layers(method_cfg, method.diagnostics()) == 2


def test_a_learned_depth_is_the_depth_posteriors_mean_and_a_set_depth_is_the_setting() -> None:
    udn, udn_cfg = built("udn", "method.generator.width=50")
    assert hidden_layers(udn_cfg, udn.diagnostics()) == pytest.approx(udn.diagnostics()["expected_depth"])
    assert hidden_layers(udn_cfg, {}) is None  # no depth of its own without the posterior's
    finite, finite_cfg = built("finite", "method.depth=4")
    assert hidden_layers(finite_cfg, finite.diagnostics()) == 4
    gp, gp_cfg = built("gp")
    assert "hidden_layers" not in architecture(gp, gp_cfg)  # no layers: no depth to show


def test_a_trained_run_records_its_size_and_the_leaderboard_shows_it(tmp_path: Path) -> None:
    """The training job writes `architecture` into metrics.json; the tidy rows of those values are run facts, not
    measurements (a run with nothing else finite carries no data), and `method_costs` averages them per method."""
    data = tmp_path / "toy.npz"
    generate_instance("sdebnn_toy", "seed=0", data)  # one input
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "bnnrepro.train", "method=mc_dropout", "dataset=sdebnn_toy",
               f"dataset.path='{data}'", f"run_dir='{run_dir}'", "scale=smoke", "train.epochs=1"]  # fmt: skip
    subprocess.run(command, cwd=ROOT, env=environment(ROOT), check=True, capture_output=True)
    result = json.loads((run_dir / "metrics.json").read_text())
    assert result["architecture"] == {"parameters": mlp_parameters(1, [50], 1) + 1, "hidden_layers": 1}  # + the noise
    assert set(result["architecture"]) <= set(RUN_FACTS)
    tidy = pd.DataFrame([
        {"method": "mc_dropout", "dataset": "d", "hparams": "split=0", "seed": 0, "metric": metric, "value": value,
         "run": "r"}
        for metric, value in [*result["architecture"].items(), ("train_seconds", result["train_seconds"])]
    ])  # fmt: skip
    costs = method_costs(tidy).loc["mc_dropout"]
    assert costs["parameters"] == result["architecture"]["parameters"] and costs["hidden_layers"] == 1

"""The SDE-BNN solver study (SDE-BNN paper Figs. 5, 13-15, config/studies/sdebnn_solvers.yaml): each solver variant
composes, trains a step and reaches t = 1 at the drift-evaluation cost its notes claim; one seed gives every variant
the same Brownian path (the runs are paired); a training job records monotone timing and drift counts; the four
figures draw from a small set of metrics.json files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from bnnrepro.artifacts import sdebnn_solvers as artifacts
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import implementations
from bnnrepro.data.spec import DataSpec
from bnnrepro.methods import build_method
from bnnrepro.models.weight_sde_solver import integrate
from bnnrepro.pipeline.studies import SCALES, load_study
from bnnrepro.runs import RunFolder
from bnnrepro.train import compose_config, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STUDY = load_study(artifacts.STUDY)
SMOKE = {run.method: run for run in reversed(STUDY.runs("smoke"))}  # one run per method variant (the first)
FIGURES = ("sdebnn/fig5", "sdebnn/fig13", "sdebnn/fig14", "sdebnn/fig15")
MNIST = DataSpec("classification", 28, 10)


def study_config(method: str, *extra: str):
    return compose_config([*STUDY.overrides(SMOKE[method]), "scale=smoke", "run_dir=unused", *extra])


def tiny_batch(size: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.rand(size, 28, 28, generator=generator), torch.randint(10, (size,), generator=generator)


def first_block(method):
    """The single SDE-BNN block of the MNIST network (Table 2: one block)."""
    (block,) = method.network.network.stages[0]
    return block


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_each_solver_variant_trains_a_step_and_reaches_t_1_at_its_drift_cost(name: str) -> None:
    cfg = study_config(name)
    torch.manual_seed(0)
    method = build_method(cfg, MNIST)
    solver = first_block(method).solver
    assert (solver.method, solver.adjoint, solver.adaptive) == (
        cfg.method.solver.method, cfg.method.solver.adjoint, cfg.method.solver.adaptive
    )  # fmt: skip
    x, y = tiny_batch()
    method.train()
    loss = method.loss(x, y, num_train=100)
    forward = method.diagnostics()["train_nfe"]
    loss.backward()
    backward = method.diagnostics()["train_nfe"] - forward
    assert torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in method.parameters())

    # drift evaluations: one per step (ten for SRK's diagonal-noise scheme) plus torchsde's shape check per solve;
    # step doubling costs at least three per accepted step, in the adjoint's reverse solve too (SDE-BNN paper Fig. 14:
    # adaptive "in both forward and reverse modes"); backprop evaluates no drift backwards
    steps = solver.num_steps
    if solver.adaptive:
        assert forward >= 3 * steps + 1 and backward >= 3 * steps
    else:
        assert forward == {"srk": 10}.get(solver.method, 1) * steps + 1
        assert backward == (steps if solver.adjoint else 0)

    method.eval()
    method.predict(x)
    assert method.diagnostics()["train_nfe"] == forward + backward  # evaluation is not training cost
    block = first_block(method)
    with torch.no_grad():
        y0 = block.sde.initial_state(block.initial_weights(1)[0], torch.zeros(1, 3, 28, 28))
        clock = block.sde.split(integrate(block.sde, y0, solver)).clock
    assert torch.allclose(clock, torch.ones_like(clock), atol=1e-6)


def loss_and_gradient(name: str, seed: int) -> tuple[float, torch.Tensor]:
    torch.manual_seed(0)
    method = build_method(study_config(name), MNIST)
    torch.manual_seed(seed)  # the Brownian entropy comes from torch's generator
    loss = method.loss(*tiny_batch(), num_train=100)
    loss.backward()
    return loss.item(), torch.cat([p.grad.flatten() for p in method.parameters()])


def test_one_seed_gives_every_solver_variant_the_same_brownian_path() -> None:
    """The runs are paired: same seed, same w_0 and Brownian path. Euler and Milstein then agree exactly (the OU
    prior's constant sigma makes Milstein's correction 0), and the adjoint's loss is backprop's with a gradient
    pointing the same way."""
    euler, euler_gradient = loss_and_gradient("sdebnn_backprop@mnist_tiny", 0)
    milstein, milstein_gradient = loss_and_gradient("sdebnn_milstein@mnist_tiny", 0)
    adjoint, adjoint_gradient = loss_and_gradient("sdebnn_adjoint@mnist_tiny", 0)
    other_seed, _ = loss_and_gradient("sdebnn_backprop@mnist_tiny", 1)
    assert euler == milstein and torch.equal(euler_gradient, milstein_gradient)
    assert math.isclose(adjoint, euler, rel_tol=1e-6)
    assert torch.nn.functional.cosine_similarity(adjoint_gradient, euler_gradient, dim=0) > 0.99
    assert not math.isclose(other_seed, euler, rel_tol=1e-6)


def test_a_training_job_records_monotone_time_positive_memory_and_growing_drift_counts(tmp_path: Path) -> None:
    data = tmp_path / "mnist.npz"
    rng = np.random.default_rng(0)
    images = {f"x_{s}": rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in (("train", 40), ("test", 8))}
    np.savez(data, **images, y_train=rng.integers(0, 10, 40), y_test=rng.integers(0, 10, 8))
    cfg = study_config(
        "sdebnn_adjoint@mnist_tiny", f"dataset.path='{data}'", f"run_dir='{tmp_path / 'run'}'", "train.epochs=3",
        "train.batch_size=16", "dataset.max_examples={train: 32, val: 8, test: 8}",
    )  # fmt: skip
    result = train(cfg, RunFolder(Path(cfg.run_dir)))

    timing = result["timing"]
    assert [record["epoch"] for record in timing] == [1, 2, 3]
    seconds = [record["train_seconds"] for record in timing]
    memory = [record["peak_memory_mib"] for record in timing]
    assert all(0 < a < b for a, b in zip(seconds, seconds[1:], strict=False))
    assert memory[0] > 0 and memory == sorted(memory)
    nfe = [record["train_nfe"] for record in result["history"]]
    assert all(0 < a < b for a, b in zip(nfe, nfe[1:], strict=False))
    assert json.loads((tmp_path / "run/metrics.json").read_text())["timing"] == timing


# --- the figures --------------------------------------------------------------------------------------------------

SECONDS_PER_EPOCH = {"backprop": 3.0, "adjoint": 2.0, "milstein": 3.5, "srk": 20.0, "adaptive": 9.0}


def fake_result(run, epochs: int = 3) -> dict:
    """A metrics.json whose seconds per epoch are the solver's (SECONDS_PER_EPOCH) and whose drift evaluations per
    epoch are 10 x the step count."""
    solver = artifacts.SOLVERS[run.method.partition("@")[0]]
    steps = int(dict(run.hparams)["method.solver.num_steps"])
    return {
        "history": [
            {"epoch": e, "train_loss": 2.3 / e, "test_accuracy": 0.1 * e, "train_nfe": 10.0 * steps * e}
            for e in range(1, epochs + 1)
        ],
        "timing": [
            {"epoch": e, "train_seconds": SECONDS_PER_EPOCH[solver] * e, "peak_memory_mib": 400.0 + steps}
            for e in range(1, epochs + 1)
        ],
        "ran_on": {"device": "cpu"},
    }


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> ArtifactContext:
    root = tmp_path_factory.mktemp("solvers")
    files = []
    for run in STUDY.runs("default"):
        path = root / run.folder / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(fake_result(run)))
        files.append(path)
    return ArtifactContext(artifacts.STUDY, "default", run_files=files)


def bar_values(fig) -> dict[str, float]:
    """The bar panel's value per run label (bars in legend order)."""
    names = [text.get_text() for text in fig.legends[0].get_texts()]
    values = [value for container in fig.axes[-1].containers for value in container.datavalues]
    return dict(zip(names, values, strict=True))


def test_the_figures_pair_their_runs_and_show_measured_costs(context: ArtifactContext) -> None:
    drawn = {artifact_id: implementations()[artifact_id].draw(context) for artifact_id in FIGURES}

    memory = bar_values(drawn["sdebnn/fig5"])
    assert memory == {"Euler-Maruyama, backprop, 4 steps": 404.0, "Euler-Maruyama, adjoint, 4 steps": 404.0}
    fig13 = drawn["sdebnn/fig13"]
    assert "ours 1.50; paper 1.20" in fig13._suptitle.get_text()  # 3.0 / 2.0 s; 162.58 / 135.90 s
    assert set(bar_values(fig13).values()) == {3.0, 2.0}
    fig14 = bar_values(drawn["sdebnn/fig14"])  # every step count of Fig. 14 and the adaptive run
    assert fig14 == {
        "Euler-Maruyama, backprop, 2 steps": 20.0,
        "Euler-Maruyama, backprop, 4 steps": 40.0,
        "Euler-Maruyama, backprop, 8 steps": 80.0,
        "adaptive, adjoint (rtol = 0.01, atol = 0.01, dt0 = 1/2)": 20.0,
    }
    fig15 = bar_values(drawn["sdebnn/fig15"])  # the backprop run at the others' step count only
    assert list(fig15) == [
        "Euler-Maruyama, backprop, 2 steps",
        "Milstein, backprop, 2 steps",
        "SRK (order 1.5), backprop, 2 steps",
        "adaptive, adjoint (rtol = 0.01, atol = 0.01, dt0 = 1/2)",
    ]
    for fig in drawn.values():
        curves = [line for ax in fig.axes[:-1] for line in ax.get_lines() if len(line.get_xdata())]
        assert curves and all(len(line.get_xdata()) == 3 for line in curves)  # one point per evaluated epoch


def test_a_figure_without_the_runs_it_pairs_is_an_error(context: ArtifactContext) -> None:
    adjoint_only = [f for f in context.run_files if "sdebnn_adjoint" in str(f)]
    with pytest.raises(ValueError, match="paired runs"):
        artifacts.backprop_vs_adjoint(ArtifactContext(artifacts.STUDY, "default", run_files=adjoint_only))


@pytest.mark.parametrize("scale", SCALES)
def test_each_figure_note_names_its_scale_and_the_paper_setting(scale: str) -> None:
    epochs = OmegaConf.load(Path(__file__).parents[1] / f"config/train/protocol/mnist_{scale}.yaml").train.epochs
    for artifact_id in FIGURES:
        note = implementations()[artifact_id].note(scale)
        assert note.startswith(f"{scale} scale: {epochs} epoch(s) (paper 100)")
        assert ("stand-in" in note) == (scale != "paper")
    assert "162.58 vs adjoint 135.90" in implementations()["sdebnn/fig13"].note(scale)

"""Tables 6.1 and 6.2 of thesis chapter 6 (Haußmann 2021, "Bayesian Neural Networks for Probabilistic Machine
Learning"; Haußmann, Gerwinn, Look, Rakitsch & Kandemir 2021): partially known stochastic dynamics (BNSDE), from
study `thesis_bnsde`.

- Table 6.1: the Lorenz ablation (§6.4.2), test MSE of the black boxes (i) E-Bayes and (ii) E-PAC-Bayes, the hybrids
  (iii) E-Bayes-Hybrid and (iv) E-PAC-Bayes-Hybrid with one noisy equation revealed, and (v) the full noisy dynamics,
  mean ± standard error over the repetitions (grid `lorenz_ablation`).
- Table 6.2: CMU walking (§6.4.3), test MSE and NLL of D-BNN (SGLD), D-BNN (VI) and (i)-(iv), mean ± standard
  deviation over the repetitions (grids `mocap`, `mocap_sgld`). DTSBN-S, npODE, Neural-ODE, ODE²VAE and ODE²VAE-KL
  are cited in the thesis and only published here.
A repetition is a seed. Each run records `test_mse` and `test_nll` (bnnrepro.metrics.forecasting_metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache

import pandas as pd
from omegaconf import DictConfig

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import table
from bnnrepro.artifacts.render import standard_deviation, standard_error
from bnnrepro.artifacts.thesis_bedl import epochs_text, in_thesis_order, method_base, standin_note, summarised_cells
from bnnrepro.data.mocap import SHAPES as MOCAP_SHAPES
from bnnrepro.pipeline.studies import Run, load_study
from bnnrepro.train_configs import compose_config

STUDY = "thesis_bnsde"
MODELS = {
    "dbnn_sgld": "D-BNN (SGLD)", "dbnn_vi": "D-BNN (VI)", "e_bayes": "(i) E-Bayes", "e_pac_bayes": "(ii) E-PAC-Bayes",
    "e_bayes_hybrid": "(iii) E-Bayes-Hybrid", "e_pac_bayes_hybrid": "(iv) E-PAC-Bayes-Hybrid",
    "full_dynamics": "(v) full (noisy) dynamics",
}  # fmt: skip
"""Study method names (before "@") -> the model part of the thesis' row names."""
KNOWLEDGE = {"x": "γ=[1,0,0], ζ~N(10,1)", "y": "γ=[0,1,0], κ~N(28,1)", "z": "γ=[0,0,1], ρ~N(2.67,1)"}
"""The Lorenz variants' suffix ("@x": dx revealed) -> Table 6.1's prior knowledge (γ mask, the noisy parameter)."""
BLACK_BOX = ("e_bayes", "e_pac_bayes")
HYBRIDS = ("e_bayes_hybrid", "e_pac_bayes_hybrid")
"""(i), (ii) and (iii), (iv): each hybrid is its black box's objective with prior knowledge (§6.4)."""
LORENZ_METHODS = (*BLACK_BOX, *(f"{hybrid}@{axis}" for axis in KNOWLEDGE for hybrid in HYBRIDS), "full_dynamics")
CMU_METHODS = ("dbnn_sgld@cmu", "dbnn_vi@cmu", *(f"{method}@cmu" for method in (*BLACK_BOX, *HYBRIDS)))
"""The study methods of Tables 6.1 and 6.2, in the thesis' row order."""
LORENZ_GRIDS, CMU_GRIDS = ("lorenz_ablation",), ("mocap", "mocap_sgld")
METRIC_COLUMNS = {"test_mse": "test MSE", "test_nll": "test NLL"}
"""Run metrics -> the tables' column names."""
CITED_CMU = "DTSBN-S, npODE, Neural-ODE, ODE²VAE and ODE²VAE-KL are cited in the thesis, not run."
OBJECTIVES = {"e_bayes": "E-Bayes", "e_pac_bayes": "E-PAC-Bayes"}


def row_label(method: str) -> str:
    """The thesis' row name of a study method: 'e_pac_bayes_hybrid@z' -> '(iv) E-PAC-Bayes-Hybrid, γ=[0,0,1],
    ρ~N(2.67,1)' (Table 6.1), 'e_bayes@cmu' -> '(i) E-Bayes' (Table 6.2)."""
    suffix = method.partition("@")[2]
    model = MODELS[method_base(method)]
    return f"{model}, {KNOWLEDGE[suffix]}" if suffix in KNOWLEDGE else model


LORENZ_ROWS = {method: row_label(method) for method in LORENZ_METHODS}
CMU_ROWS = {method: row_label(method) for method in CMU_METHODS}


def grid_runs(scale: str, grids: tuple[str, ...]) -> list[Run]:
    """The study's runs at `scale` of the named grids only (the Lorenz forecast figures' runs of the same methods
    are not Table 6.1's)."""
    study = load_study(STUDY)
    return replace(study, grids={name: study.grids[name] for name in grids}).runs(scale)


def table_runs(
    context: ArtifactContext, grids: tuple[str, ...], rows: dict[str, str], metrics: tuple[str, ...]
) -> pd.DataFrame:
    """The rows of `metrics` of the runs of `grids`, with the thesis' `row` (their methods -> `rows`) and `column`
    (METRIC_COLUMNS); a run's repetition is its `seed`."""
    ids = {run.id for run in grid_runs(context.scale, grids)}
    runs = context.metrics[context.metrics["run"].isin(ids) & context.metrics["metric"].isin(metrics)].copy()
    runs["row"] = runs["method"].map(rows)
    runs["column"] = runs["metric"].map(METRIC_COLUMNS)
    return runs[runs["row"].notna()]


def table_cells(
    context: ArtifactContext,
    grids: tuple[str, ...],
    rows: dict[str, str],
    metrics: tuple[str, ...],
    spread: Callable[[pd.Series], float],
) -> pd.DataFrame:
    """Cells of `metrics` (METRIC_COLUMNS) of the runs of `grids` (their methods -> `rows`), mean ± `spread` over the
    repetitions, in the thesis' order."""
    cells = summarised_cells(table_runs(context, grids, rows, metrics), spread)
    return in_thesis_order(cells, list(rows.values()), [METRIC_COLUMNS[metric] for metric in metrics])


# --- notes -----------------------------------------------------------------------------------------------------------


@cache
def run_config(run: Run) -> DictConfig:
    """The config a run composes (the study's overrides at the run's scale): what the notes describe."""
    return compose_config([*load_study(STUDY).overrides(run), f"scale={run.scale}", "run_dir=unused"])


def distinct_configs(runs: list[Run]) -> list[DictConfig]:
    """The configs of `runs`, one per method and hyperparameters (runs that differ only in the seed compose alike)."""
    first: dict[tuple, Run] = {}
    for run in runs:
        first.setdefault((run.method, run.hparams), run)
    return [run_config(run) for run in first.values()]


def repetitions_text(runs: list[Run]) -> str:
    """'3 repetitions (seeds 0-2)'."""
    seeds = sorted({run.seed for run in runs})
    if len(seeds) == 1:
        return f"1 repetition (seed {seeds[0]})"
    listed = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else str(seeds)
    return f"{len(seeds)} repetitions (seeds {listed})"


def series_text(series_seed: int | None) -> str:
    """What a Table 6.1 repetition varies (config/train/dataset/lorenz.yaml `series_seed`)."""
    if series_seed is None:
        return "a repetition: its own series, initialisation and noisy prior parameters"
    return (
        f"one series, of seed {series_seed}, for every repetition, as the thesis' single series (Fig. 6.4); a "
        "repetition: its own initialisation, training noise and noisy prior parameters"
    )


def rows_text(runs: list[Run], rows: dict[str, str]) -> str:
    """'all 9 rows' or '3 of the 9 rows ((i) E-Bayes; ...)': the rows the runs at a scale fill."""
    methods = {run.method for run in runs}
    if methods >= set(rows):
        return f"all {len(rows)} rows"
    ran = "; ".join(label for method, label in rows.items() if method in methods)
    return f"{len(methods & set(rows))} of the {len(rows)} rows ({ran})"


def layers_text(widths: Sequence[int]) -> str:
    """'2 x 100' (layers x units, as the thesis writes them) or '50/30'."""
    return f"{len(widths)} x {widths[0]}" if len(set(widths)) == 1 else "/".join(map(str, widths))


def common_text(runs: list[Run], cfg: DictConfig, optimiser: str = "Adam") -> str:
    """Repetitions, epochs, batch, step size and drift of a group of runs (`cfg`: one of their configs)."""
    epochs = epochs_text(dict(run.hparams).get("train.epochs", cfg.train.epochs) for run in runs)
    return (
        f"{repetitions_text(runs)}, {epochs} of minibatches of {cfg.train.batch_size}, {optimiser} lr "
        f"{cfg.optim.lr:g}, a {layers_text(cfg.method.drift.widths)} {cfg.method.drift.activation} drift"
    )


def table61_note(scale: str) -> str:
    """Rows, repetitions, epochs, windows and the MSE of Table 6.1's runs against the thesis' plan (§6.4.2, §6.6.3)."""
    runs = grid_runs(scale, LORENZ_GRIDS)
    cfg = run_config(runs[0])
    data = cfg.dataset
    full = OBJECTIVES[load_study(STUDY).method_variants["full_dynamics"]["method.objective"]]
    return (
        f"{scale} scale: {rows_text(runs, LORENZ_ROWS)} on the stochastic Lorenz attractor, simulated at every scale "
        f"({series_text(data.series_seed)}), {common_text(runs, cfg)} (thesis: fifty "
        "repetitions, 100 epochs, minibatches of 2, Adam lr 1e-3, 2 x 100 softplus). Windows: the main text's "
        f"{data.n_train} training windows of {data.train_len} and {data.n_test} test windows of {data.test_len} "
        "observations from the start of each half (§6.4.2, Table 6.1's '24-step ahead' error); the details' 20 x 50 "
        "training and 10 x 100 test windows (§6.6.3) are those of Figs. 6.5-6.9. Test MSE: the mean of "
        f"{cfg.method.eval_samples} forecasts of each test window from its first observation against the window, "
        "averaged over its steps, the three dimensions and the windows (as the authors' code, `manuelhaussmann/bnsde` "
        "`exp_lorenz.py`; the thesis does not say); ± is the standard error over the repetitions, as in the thesis. "
        "Row (v): all three equations revealed "
        f"with noisy parameters, trained by the {full} objective (not stated). Not stated and chosen: likelihood "
        f"variance {data.dynamics.likelihood_variance:g}, delta {cfg.method.delta:g}, "
        f"{cfg.method.num_samples} trajectory per sequence and step."
    )


def curriculum_text(cfg: DictConfig) -> str:
    """'snippets of 30 / 50 / 100 frames up to 0.333 / 0.833 / 1 of the epochs' of a run with a curriculum."""
    curriculum = cfg.method.curriculum
    until = [*(f"{fraction:.3g}" for fraction in curriculum.until_fraction), "1"][: len(curriculum.lengths)]
    return f"snippets of {' / '.join(map(str, curriculum.lengths))} frames up to {' / '.join(until)} of the epochs"


def table62_note(scale: str) -> str:
    """Data, repetitions, epochs, the hybrids' prior knowledge and the metrics of Table 6.2's runs against the thesis'
    plan (§6.4.3, §6.6.3)."""
    runs = grid_runs(scale, CMU_GRIDS)
    sgld = [run for run in runs if method_base(run.method) == "dbnn_sgld"]
    adam = [run for run in runs if run not in sgld]
    cfg = run_config(adam[0])
    pretrained = [config for config in distinct_configs(adam) if config.method.knowledge.pretrained]
    (train, frames, angles), (val, _, _), (test, _, _) = (MOCAP_SHAPES[split] for split in ("train", "val", "test"))
    latent, variance = cfg.dataset.dynamics.latent, cfg.dataset.dynamics.likelihood_variance
    knowledge = (
        "The hybrids' prior knowledge: the thesis pretrains an E-PAC-Bayes model on MOCAP-1 (43 subjects' walks), "
        "which is not available; ours is the frozen drift of an E-PAC-Bayes model pretrained for "
        f"{epochs_text(config.method.knowledge.pretrain_epochs for config in pretrained)} on subject 35's "
        f"{val} validation walks (its encoder and decoder start the run's) on every latent dimension (γ is not "
        "stated), knowledge closer to the target than the thesis' 'weak and broad' one. "
        if pretrained
        else ""
    )
    sgld_text = (
        f" D-BNN (SGLD): {common_text(sgld, run_config(sgld[0]), 'preconditioned Langevin steps (pSGLD)')} (thesis: "
        "SGLD at lr 1e-5 for 5000 epochs), the snippets at the same fractions of its epochs."
        if sgld
        else ""
    )
    return (
        f"{scale} scale: {rows_text(runs, CMU_ROWS)}; CMU walking of subject 35 (ODE²VAE's split: {train} training, "
        f"{val} validation and {test} test walks of {frames} frames of {angles} joint angles), a {latent.size}-D "
        f"latent from a {latent.context}-frame encoder ({layers_text(latent.widths)} softplus) and its "
        f"mirrored decoder. {common_text(adam, cfg)}, {curriculum_text(cfg)} (thesis: ten repetitions, 3000 epochs "
        f"of 7 snippets of 30 / 50 / 100 frames up to epochs 1000 / 2500 / 3000, a 1 x 30 softplus drift).{sgld_text} "
        f"{knowledge}Test: {cfg.method.eval_samples} forecasts of each test walk over all {frames} frames from the "
        f"encoding of its first {latent.context}; MSE of the mean forecast over frames, angles and walks; NLL of the "
        f"Gaussian predictive (the forecasts' mean and variance plus the likelihood variance {variance:g}) summed over "
        "a walk's frames and angles and averaged over the walks. The thesis does not say how its NLL aggregates, and "
        "its NLLs (415-748) cannot be reconciled with its stated likelihood variance 0.5e-6 + 0.5e-6 = 1e-6: at its "
        "MSEs of about 8 that variance alone gives about 4e6 per value (0.5 x 8 / 1e-6). ± is the standard deviation "
        f"over the repetitions, as in the thesis. {CITED_CMU}" + standin_note(scale, "the CMU walks")
    )


# --- tables ----------------------------------------------------------------------------------------------------------


@table("thesis/table6.1", note=table61_note)
def lorenz_ablation(context: ArtifactContext) -> pd.DataFrame:
    """Lorenz test MSE of the nine rows, mean ± standard error over the repetitions (Table 6.1)."""
    return table_cells(context, LORENZ_GRIDS, LORENZ_ROWS, ("test_mse",), standard_error)


@table("thesis/table6.2", note=table62_note)
def mocap_benchmark(context: ArtifactContext) -> pd.DataFrame:
    """CMU walking test MSE and NLL of D-BNN (SGLD), D-BNN (VI) and (i)-(iv), mean ± standard deviation over the
    repetitions (Table 6.2)."""
    return table_cells(context, CMU_GRIDS, CMU_ROWS, ("test_mse", "test_nll"), standard_deviation)

"""The workflow's configuration: validated on every run, with errors that name the problem and the fix;
and the workflow's code passes `snakemake --lint`, snakefmt and ruff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bnnrepro import layout
from bnnrepro.pipeline import studies
from bnnrepro.pipeline.studies import load_study
from tests.conftest import ROOT, copy_project, run


def dry_run_error(project: Path, *config: str) -> str:
    result = run(["snakemake", "-n", "--config", *config], project, check=False)
    assert result.returncode != 0, result.stdout
    return result.stdout + result.stderr


def edit_yaml(project: Path, file: str, edit) -> None:
    """Apply `edit` to the parsed YAML file `file` of the project and write it back."""
    path = project / file
    content = yaml.safe_load(path.read_text())
    edit(content)
    path.write_text(yaml.safe_dump(content))


def edit_study(project: Path, edit) -> None:
    edit_yaml(project, "config/studies/udn_spirals.yaml", edit)


def test_an_unknown_scale_lists_the_valid_scales(project: Path) -> None:
    assert "'huge' is not one of ['smoke', 'default', 'paper']" in dry_run_error(project, "scale=huge")


def test_a_mistyped_key_is_named(project: Path) -> None:
    assert "'scael' was unexpected" in dry_run_error(project, "scael=smoke")


def test_an_unknown_study_lists_the_available_studies(project: Path) -> None:
    message = dry_run_error(project, "studies=[udn_spiral]")
    assert "unknown study 'udn_spiral'; available studies: " in message
    available = "toy2d_benchmark, uci_benchmark, uci_benchmark_gap, uci_benchmark_heteroscedastic, udn_images"
    assert available in message


def test_an_unknown_method_in_a_study_lists_the_methods(project: Path) -> None:
    edit_study(project, lambda s: s["grids"]["lr_0.01"]["method"].append("udm"))
    message = dry_run_error(project, "scale=smoke")
    assert "unknown method 'udm'; add it to method_variants or use one of: " in message
    assert "finite_3" in message.split("use one of:", 1)[1]


def test_a_mistyped_hydra_key_in_a_study_is_caught_before_any_job(project: Path) -> None:
    edit_study(project, lambda s: s["grids"]["lr_0.01"].update({"dataset.omgea": [1]}))
    message = dry_run_error(project, "scale=smoke")
    assert "invalid Hydra override" in message and "omgea" in message


def test_an_unknown_artifact_in_a_study_is_named(project: Path) -> None:
    edit_study(project, lambda s: s["artifacts"].append("udn/fig99"))
    assert "unknown artifact 'udn/fig99'" in dry_run_error(project, "scale=smoke")


def test_a_mistyped_scale_section_in_a_study_is_named(project: Path) -> None:
    edit_study(project, lambda s: s["scales"].update({"defualt": {}}))
    assert "'defualt' was unexpected" in dry_run_error(project, "scale=smoke")


def test_a_misspelt_registry_field_is_named_before_any_job(project: Path) -> None:
    edit_yaml(project, "config/datasets.yaml", lambda r: r["generated"]["spirals"].update({"data_key": ["omega"]}))
    message = dry_run_error(project, "scale=smoke")
    assert "generated.spirals: unknown field(s) 'data_key'; valid fields: title, generator, data_keys" in message


def test_a_registry_function_that_does_not_resolve_fails_before_any_job(project: Path) -> None:
    edit_yaml(
        project,
        "config/datasets.yaml",
        lambda r: r["downloads"]["mnist"].update({"loader": "bnnrepro.data.images:lod"}),
    )
    message = dry_run_error(project, "scale=smoke")
    assert "mnist.loader = bnnrepro.data.images:lod: module 'bnnrepro.data.images'" in message


def test_a_dataset_without_protocol_files_is_named_with_the_files_to_add(project: Path) -> None:
    """Spirals without its own protocol file takes the defaults of classification; without those too, the dry run
    names the files to add."""
    (project / "config/train/protocol/spirals_smoke.yaml").unlink()
    (project / "config/train/protocol/classification_smoke.yaml").unlink()
    message = dry_run_error(project, "scale=smoke")
    assert "spirals have no protocol file at scale 'smoke': add config/train/protocol/spirals_smoke.yaml" in message
    assert "or their task's defaults (config/train/protocol/classification_smoke.yaml)" in message


def test_an_unknown_real_data_name_is_named(project: Path) -> None:
    assert "'mnsit' is no download" in dry_run_error(project, "scale=smoke", "real_data=[mnsit]")


def test_a_method_paired_with_data_it_cannot_take_is_named_before_any_job(project: Path) -> None:
    (project / "config/studies/edl_on_boston.yaml").write_text(
        "paper: own\ngrids:\n  main: {method: [edl], dataset: [uci_boston], seed: [0]}\n"
        "method_variants:\n  edl: {method: edl}\n"
    )
    message = dry_run_error(project, "scale=smoke", "studies=[edl_on_boston]", "datasets=[]")
    assert "config/studies/edl_on_boston.yaml: method 'edl' takes classification data only (" in message
    assert "but dataset 'uci_boston' is regression (grid main); remove the pair from the grid" in message
    assert "pick a method that takes regression: bedl, deep_ensemble, dun, dvi, finite, gp, hmc, laplace" in message


def test_a_run_the_grid_does_not_have_is_named_with_how_to_list_the_runs(project: Path) -> None:
    planned = load_study("udn_spirals").runs("smoke")[0]
    target = planned.file(layout.RUN_METRICS).replace("omega=2+", "omega=99+")
    result = run(["snakemake", "-n", target, "--config", "scale=smoke", "studies=[udn_spirals]"], project, check=False)
    message = result.stdout + result.stderr
    assert result.returncode != 0 and "KeyError" not in message
    assert f"{Path(target).parent}: not a run of this workflow" in message
    assert "no enabled study (udn_spirals) has this run in its grid at 'smoke'" in message
    assert "python -m bnnrepro.fidelity targets STUDY --scale smoke` lists a study's" in message


def test_a_second_downloads_block_is_named_with_the_fix(project: Path) -> None:
    """As one writes it following the README's "downloads:" for a CSV file: YAML would keep only the second block."""
    registry = project / "config/datasets.yaml"
    registry.write_text(registry.read_text() + "\ndownloads:\n  my_table:\n    title: a CSV of my own\n")
    message = dry_run_error(project, "scale=smoke")
    assert "config/datasets.yaml:" in message and "key 'downloads' is given a second time (first on line 13)" in message
    assert "put the entries of both under one 'downloads:'" in message


def test_a_key_given_twice_in_a_configfile_or_the_profile_stops_the_run(project: Path) -> None:
    """Snakemake reads --configfile and the profile itself, keeping a repeated key's last value; the workflow names it
    before any job (control: the same file with the key once runs)."""
    (project / "mine.yaml").write_text("scale: smoke\nthreads_per_job: 1\n")
    assert "Nothing to be done" not in run(["snakemake", "-n", "data", "--configfile", "mine.yaml"], project).stdout
    (project / "mine.yaml").write_text("scale: smoke\nthreads_per_job: 1\nscale: paper\n")
    result = run(["snakemake", "-n", "data", "--configfile", "mine.yaml"], project, check=False)
    assert result.returncode != 0
    assert "mine.yaml:3: key 'scale' is given a second time (first on line 1)" in result.stdout + result.stderr
    profile = project / "profiles/default/profile.yaml"
    profile.write_text(profile.read_text() + "cores: 1\n")
    assert "profiles/default/profile.yaml:" in dry_run_error(project, "scale=smoke")


def test_an_empty_study_list_builds_no_report_but_the_data(project: Path) -> None:
    """A report of no study would replace the last one; the data alone still builds with no study."""
    message = dry_run_error(project, "studies=[]")
    assert "config 'studies' is empty: the report would show no study" in message
    assert "snakemake data --config 'studies=[]'" in message
    run(["snakemake", "-n", "data", "--config", "studies=[]"], project)


def test_study_grids_expand_to_one_run_per_point() -> None:
    study = load_study("udn_spirals")
    paper = study.runs("paper")
    assert len(study.runs("paper", sensitivity=False)) == 10 * 17 * 5 * 2  # methods x omegas x seeds x rates
    assert len(paper) == 10 * 17 * 5 * 2 + 2 * 5  # and grid sensitivity_depth_lr: the UDN at 2 omegas x 5 seeds
    assert len({run.id for run in paper}) == len(paper)
    default = study.runs("default")
    assert len(default) == 5 * 4 * 1 + 3 * 4 * 1  # methods x omegas x one seed, at each rate
    run = default[0]
    assert run.id == "udn/spirals/omega=2+lr=0.005/seed=0"
    assert run.data_file() == "results/data/spirals/omega=2+seed=0.npz"
    assert "method.depth=3" in study.overrides(next(r for r in default if r.method == "finite_3"))


@pytest.mark.parametrize(
    "command",
    [
        ["snakemake", "--lint"],
        ["snakefmt", "--check", "Snakefile", "workflow"],
        ["ruff", "check", "src", "tests", "benchmarks", "scripts"],
        ["ruff", "format", "--check", "src", "tests", "benchmarks", "scripts"],
    ],
    ids=["snakemake-lint", "snakefmt", "ruff-check", "ruff-format"],
)
def test_code_passes_the_linters(command: list[str], tmp_path: Path) -> None:
    # `snakemake --lint` builds the DAG: in a copy of the workflow, which leaves this tree's .snakemake alone
    result = run(command, copy_project(tmp_path) if command[0] == "snakemake" else ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    if command[1] == "--lint":
        assert "Congratulations" in result.stdout + result.stderr


def test_training_jobs_ask_for_a_gpu_only_when_they_train_on_one(project: Path) -> None:
    one_study = ["scale=smoke", "studies=[udn_spirals]", "datasets=[]"]  # the DAG of every study takes 20 s to plan
    on_gpu = run(["snakemake", "-n", "--config", *one_study, "device=cuda"], project).stdout
    train_jobs = [block for block in on_gpu.split("\n\n") if "rule train:" in block]
    assert train_jobs and all("gpu=1" in block for block in train_jobs)
    on_cpu = run(["snakemake", "-n", "--config", *one_study, "device=cpu"], project).stdout
    assert all("gpu=0" in block for block in on_cpu.split("\n\n") if "rule train:" in block)


def test_a_studys_overrides_compose_once_until_a_file_they_read_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow composes every study's overrides before any job, but not again on every call: the record holds a
    digest of the study, the config/train files its compositions read and the registry, so an edit to one of them
    composes again, and an edit to a config/train file that the study does not compose does not."""
    project = copy_project(tmp_path / "project", dag_record=False)
    monkeypatch.setenv("BNNREPRO_ROOT", str(project))
    cache = project / layout.DAG_CACHE
    study = studies.load_study.__wrapped__("udn_spirals")
    composed = []
    real_compose = studies._compose_overrides
    monkeypatch.setattr(studies, "_compose_overrides", lambda *a: composed.append(a) or real_compose(*a))
    studies.check_overrides(study, ["smoke"], cache)
    studies.check_overrides(study, ["smoke"], cache)
    assert len(composed) == 1 and "study_checks/udn_spirals/smoke" in json.loads(cache.read_text())
    other_method = project / "config/train/method/sdebnn.yaml"  # no variant of udn_spirals composes it
    other_method.write_text(other_method.read_text() + "\n# an edit\n")
    studies.check_overrides(study, ["smoke"], cache)
    assert len(composed) == 1
    method = project / "config/train/method/finite.yaml"
    method.write_text(method.read_text() + "\n# an edit\n")
    studies.check_overrides(study, ["smoke"], cache)
    assert len(composed) == 2
    studies.check_overrides(study, ["default"], cache)  # another scale: its own grids, composed once too
    studies.check_overrides(study, ["default"], cache)
    assert [call[1] for call in composed] == ["smoke", "smoke", "default"]


@pytest.mark.slow
@pytest.mark.parametrize("name", studies.available_studies())
def test_every_study_composes_at_every_scale(name: str) -> None:
    """The workflow composes a study's runs at the scale it runs them; here every committed study at every scale,
    so that a mistyped key in a paper grid is found before anyone asks for `paper`."""
    studies.check_overrides(studies.load_study(name))


def test_a_grid_seeded_by_its_splits_gives_each_split_its_own_seed() -> None:
    runs = load_study("udn_uci").runs("paper")
    pairs = {(dict(run.hparams)["dataset.split"], run.seed) for run in runs}
    assert pairs == {(split, split) for split in range(10)}
    assert len(runs) == 6 * 9 * 10  # models x sets x splits, not x seeds as well


def test_a_seed_same_as_a_key_the_grid_does_not_vary_is_named(project: Path) -> None:
    edit_study(project, lambda s: s["grids"]["lr_0.01"].update({"seed": {"same_as": "dataset.split"}}))
    message = dry_run_error(project, "scale=smoke")
    assert "grids.lr_0.01.seed is the same as 'dataset.split', which the grid does not vary; name one of:" in message


@pytest.mark.parametrize(
    ("grid", "scale_grid", "message"),
    [
        ({"seed": [-1]}, None, "-1 is less than the minimum of 0 (at grids/lr_0.01/seed/0)"),
        (None, {"seed": []}, "grids.lr_0.01 with scales.smoke: seed: [] should be non-empty"),
        (None, {"dataset.omega": []}, "grids.lr_0.01 with scales.smoke: dataset.omega: [] should be non-empty"),
        ({"optim.lr": ["fast"]}, None, "'fast' is not of type 'number' (at grids/lr_0.01/optim.lr/0)"),
        (None, {"optim.lr": [-0.01]}, "scales.smoke: optim.lr: -0.01 is less than or equal to the minimum of 0"),
        ({"dataset.omega": ["two"]}, None, "dataset.omega: 'two' is not a number, as its default in config/train is"),
    ],
    ids=["negative-seed", "no-seed", "no-omega", "lr-string", "lr-negative", "omega-string"],
)
def test_a_bad_grid_value_is_named_before_any_job(project: Path, grid: dict, scale_grid: dict, message: str) -> None:
    """Grids are checked at DAG time, each scale's with its replacements: seeds non-negative integers, learning rates
    positive numbers, lists non-empty, Hydra values of their defaults' kinds. The error names the file and grid."""

    def edit(study: dict) -> None:
        study["grids"]["lr_0.01"].update(grid or {})
        study["scales"]["smoke"]["lr_0.01"].update(scale_grid or {})

    edit_study(project, edit)
    output = dry_run_error(project, "scale=smoke", "studies=[udn_spirals]")
    assert "config/studies/udn_spirals.yaml: " in output and message in output

"""A study that takes another study's method variants (`method_variants_from`, bnnrepro.pipeline.studies): the gap
benchmark runs uci_benchmark's variants without a copy of them; an edit of a variant in the study it takes them from
reaches its runs, its overrides digest and its jobs' inputs; its own variants replace the other study's; a study name
that is not a study, or a loop, is an error that names the fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from bnnrepro.paths import project_root, studies_dir
from bnnrepro.pipeline.plan import Plan
from bnnrepro.pipeline.studies import StudyError, load_study, overrides_digest
from tests.conftest import copy_project

GAP_METHODS = {"dun", "mc_dropout", "deep_ensemble", "mfvi", "finite"}


def test_the_gap_benchmark_runs_the_uci_benchmark_s_variants() -> None:
    gap, uci = load_study("uci_benchmark_gap"), load_study("uci_benchmark")
    assert {run.method for run in gap.runs("paper")} == GAP_METHODS
    assert {m: gap.method_variants[m] for m in GAP_METHODS} == {m: uci.method_variants[m] for m in GAP_METHODS}
    assert gap.files == (studies_dir() / "uci_benchmark_gap.yaml", studies_dir() / "uci_benchmark.yaml")
    assert uci.files == (studies_dir() / "uci_benchmark.yaml",)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the project that the studies are read from (load_study keeps what it read: cleared either side)."""
    project = copy_project(tmp_path / "project", dag_record=False)
    monkeypatch.setenv("BNNREPRO_ROOT", str(project))
    load_study.cache_clear()
    yield project
    load_study.cache_clear()


def edit(study: Path, old: str, new: str) -> None:
    text = study.read_text()
    assert old in text
    study.write_text(text.replace(old, new))
    load_study.cache_clear()  # each `snakemake` call is a new process


MC_DROPOUT = "mc_dropout: {method: mc_dropout_uci, method.eval_samples: 100}"


def test_an_edit_of_the_other_study_s_variant_reaches_the_runs_digest_and_inputs(project: Path) -> None:
    before = load_study("uci_benchmark_gap")
    folders = {run.id: run.folder_name for run in before.runs("paper")}
    digest = overrides_digest(before, "smoke")
    edit(project / "config/studies/uci_benchmark.yaml", MC_DROPOUT, MC_DROPOUT.replace("100", "50"))
    after = load_study("uci_benchmark_gap")
    assert after.method_variants["mc_dropout"]["method.eval_samples"] == 50
    moved = {run.method for run in after.runs("paper") if folders[run.id] != run.folder_name}
    assert moved == {"mc_dropout"}  # its runs are new runs; the other methods' are the same
    assert overrides_digest(after, "smoke") != digest
    plan = Plan.build(workflow_config(project, scale="smoke", studies=["uci_benchmark_gap"]))
    assert plan.study_bases(SimpleNamespace(study="uci_benchmark_gap")) == ["config/studies/uci_benchmark.yaml"]


def workflow_config(project: Path, **changes) -> dict:
    return yaml.safe_load((project / "config/config.yaml").read_text()) | changes


def test_the_study_s_own_variant_replaces_the_other_study_s(project: Path) -> None:
    own = "\nmethod_variants:\n  mfvi: {method: mfvi, method.hidden_widths: '[20]'}\n"
    gap = project / "config/studies/uci_benchmark_gap.yaml"
    gap.write_text(gap.read_text() + own)
    load_study.cache_clear()
    variants = load_study("uci_benchmark_gap").method_variants
    assert variants["mfvi"] == {"method": "mfvi", "method.hidden_widths": "[20]"}
    assert variants["dun"] == load_study("uci_benchmark").method_variants["dun"]  # control: the others still taken


@pytest.mark.parametrize(
    ("study", "old", "new", "message"),
    [
        ("uci_benchmark_gap", "method_variants_from: uci_benchmark", "method_variants_from: uci_benchmrk",
         r"gap.yaml: method_variants_from names 'uci_benchmrk', which is not a study; available studies:"),
        ("uci_benchmark", "\ncommon:", "\nmethod_variants_from: uci_benchmark_gap\ncommon:",
         r"loops back \(uci_benchmark_gap -> uci_benchmark -> uci_benchmark_gap\)"),
        ("uci_benchmark", "mfvi: {method: mfvi,", "mfvi: {methd: mfvi,",
         r"uci_benchmark.yaml: 'method' is a required property \(at method_variants/mfvi\)"),
    ],
)  # fmt: skip
def test_a_study_it_cannot_take_variants_from_is_named(project: Path, study: str, old: str, new: str, message: str):
    edit(project / f"config/studies/{study}.yaml", old, new)
    with pytest.raises(StudyError, match=message):
        load_study("uci_benchmark_gap")
    assert project_root() == project

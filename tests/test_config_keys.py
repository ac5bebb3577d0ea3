"""A repeated mapping key in the workflow's YAML files (a second `downloads:` block, say) is named with both lines,
instead of YAML keeping the last and dropping the first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bnnrepro.pipeline.config_keys import DuplicateKeyError, check_unique_keys, workflow_config_files
from tests.conftest import ROOT

TWO_DOWNLOAD_BLOCKS = """\
downloads:
  uci_boston:
    title: Boston
generated:
  spirals:
    title: Spirals
downloads:
  mine:
    title: Mine
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_second_downloads_block_is_named_with_both_lines_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "config/datasets.yaml", TWO_DOWNLOAD_BLOCKS)
    message = (
        "config/datasets.yaml:7: key 'downloads' is given a second time (first on line 1); YAML keeps only the last, "
        "dropping every entry of the first: put the entries of both under one 'downloads:'"
    )
    with pytest.raises(DuplicateKeyError, match=re.escape(message)):
        check_unique_keys([path])


def test_a_repeated_key_at_any_depth_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "study.yaml", "grid:\n  - method: mfvi\n    hparams:\n      lr: 0.1\n      lr: 0.01\n")
    with pytest.raises(DuplicateKeyError, match=r"study.yaml:5: key 'lr' is given a second time \(first on line 4\)"):
        check_unique_keys([path])


def test_merge_keys_and_equal_keys_of_different_mappings_pass(tmp_path: Path) -> None:
    text = "base: &base {lr: 0.1, epochs: 2}\nrun:\n  <<: *base\n  lr: 0.01\nother:\n  lr: 0.1\n"
    check_unique_keys([write(tmp_path / "ok.yaml", text)])


def test_the_workflow_config_files_include_an_evaluations_folder(tmp_path: Path) -> None:
    for name in ("config/config.yaml", "config/evaluations/images.yaml", "config/train/method/mfvi.yaml"):
        write(tmp_path / name, "a: 1\n")
    found = [str(path.relative_to(tmp_path)) for path in workflow_config_files(tmp_path)]
    assert found == ["config/config.yaml", "config/evaluations/images.yaml", "config/train/method/mfvi.yaml"]


def test_the_projects_workflow_config_files_give_each_key_once() -> None:
    files = [str(path.relative_to(ROOT)) for path in workflow_config_files(ROOT)]
    assert {"config/config.yaml", "config/datasets.yaml", "config/evaluations/toy_paths.yaml"} <= set(files)
    assert "src/bnnrepro/artifacts/catalog.yaml" in files and any(f.startswith("config/studies/") for f in files)
    assert any(f.startswith("config/train/") for f in files)
    check_unique_keys(workflow_config_files(ROOT))

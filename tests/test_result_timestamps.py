"""Recorded result timestamps: a DVC-style checkout (same bytes, shuffled times) gets its time order back;
changed or missing files are left for Snakemake to judge."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from bnnrepro.files import UnreadableFileError
from bnnrepro.pipeline.result_timestamps import load, outdate_changed_sources, record, restore

FILES = ["data.npz", "runs/a/metrics.json", "runs/b/metrics.json", "runs/b/checkpoint.pt", "metrics.csv", "report.pdf"]
MANIFEST = Path("timestamps.json")


def write_result(path: Path) -> None:
    """A small file of the result's kind (record checks archives and JSON before it records them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        np.savez(path, x=np.arange(10))
    elif path.suffix == ".pt":
        torch.save({"model": {"w": torch.ones(3)}}, path)
    elif path.suffix == ".json":
        path.write_text(json.dumps({"name": path.name}))
    else:
        path.write_text(f"content of {path.name}")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Files written in pipeline order, one second apart, then recorded."""
    for i, name in enumerate(FILES):
        write_result(tmp_path / name)
        os.utime(tmp_path / name, ns=(0, (1_000 + i) * 10**9))
    record(FILES, MANIFEST, tmp_path)
    return tmp_path


def mtimes(root: Path) -> list[int]:
    return [(root / name).stat().st_mtime_ns for name in FILES]


def checkout_in_reverse(root: Path) -> None:
    """What `dvc pull` can do: the same bytes, written newest-first, all with times after the clone."""
    for i, name in enumerate(reversed([*FILES, str(MANIFEST)])):
        os.utime(root / name, ns=(0, (5_000 + i) * 10**9))


def test_record_lists_files_oldest_first_with_their_checksums(tree: Path) -> None:
    recorded = load(tree / MANIFEST)
    assert [f.path for f in recorded] == FILES
    assert recorded[0].md5 == hashlib.md5((tree / "data.npz").read_bytes()).hexdigest()
    assert recorded[1].size == (tree / "runs/a/metrics.json").stat().st_size


@pytest.mark.parametrize("name", ["data.npz", "runs/a/metrics.json", "runs/b/checkpoint.pt"])
def test_a_truncated_result_is_named_and_not_recorded(tree: Path, name: str) -> None:
    before = (tree / MANIFEST).read_text()
    (tree / name).write_bytes((tree / name).read_bytes()[:-20])
    with pytest.raises(UnreadableFileError, match=f"{name}: not a readable .*Delete it .* and rerun snakemake"):
        record(FILES, MANIFEST, tree)
    assert (tree / MANIFEST).read_text() == before


def test_a_shuffled_checkout_gets_the_recorded_order_back(tree: Path) -> None:
    checkout_in_reverse(tree)
    assert mtimes(tree) != sorted(mtimes(tree))
    assert restore(MANIFEST, tree) == len(FILES)
    restored = mtimes(tree)
    assert restored == sorted(restored) and len(set(restored)) == len(FILES)
    assert min(restored) >= 5_000 * 10**9  # not moved back before the checkout (the code's clone time)
    assert (tree / MANIFEST).stat().st_mtime_ns > max(restored)
    assert restore(MANIFEST, tree) == 0  # in order now: nothing to do


def test_files_with_equal_recorded_times_keep_equal_times(tree: Path) -> None:
    for name in FILES[1:3]:
        os.utime(tree / name, ns=(0, 2_000 * 10**9))
    record(FILES, MANIFEST, tree)
    checkout_in_reverse(tree)
    restore(MANIFEST, tree)
    runs = [(tree / name).stat().st_mtime_ns for name in FILES[1:3]]
    assert runs[0] == runs[1]


def test_a_changed_file_is_left_for_snakemake(tree: Path) -> None:
    checkout_in_reverse(tree)
    (tree / "runs/a/metrics.json").write_text("content of runs/a/metrics.jsoX")  # same size, other bytes
    before = mtimes(tree)
    assert restore(MANIFEST, tree) == 0
    assert mtimes(tree) == before


def test_a_missing_file_is_left_for_snakemake(tree: Path) -> None:
    checkout_in_reverse(tree)
    (tree / "metrics.csv").unlink()
    assert restore(MANIFEST, tree) == 0


def test_no_manifest_means_nothing_to_restore(tmp_path: Path) -> None:
    assert restore(MANIFEST, tmp_path) == 0


def test_rerecording_reuses_checksums_of_unchanged_files(tree: Path) -> None:
    (tree / "report.pdf").write_text("a new report")
    record(FILES, MANIFEST, tree)
    recorded = {f.path: f for f in load(tree / MANIFEST)}
    assert recorded["report.pdf"].size == len("a new report")
    assert [f.path for f in load(tree / MANIFEST)][-1] == "report.pdf"


SOURCES = ["config/study.yaml", "src/method.py"]


@pytest.fixture
def tree_and_sources(tmp_path: Path) -> Path:
    """Sources written at 90,000 s, results in pipeline order from 100,000 s, then both recorded."""
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"source {name}")
        os.utime(tmp_path / name, ns=(0, 90_000 * 10**9))
    for i, name in enumerate(FILES):
        write_result(tmp_path / name)
        os.utime(tmp_path / name, ns=(0, (100_000 + i) * 10**9))
    record(FILES, MANIFEST, tmp_path, SOURCES)
    os.utime(tmp_path / MANIFEST, ns=(0, (100_000 + len(FILES)) * 10**9))  # written last, as the workflow does
    return tmp_path


def test_a_touched_source_with_its_recorded_content_leaves_the_results_current(tree_and_sources: Path) -> None:
    """`touch src/...` (or a clone's new times): the content decides, and it is the one the results were made from."""
    tree = tree_and_sources
    os.utime(tree / SOURCES[1], ns=(0, 200_000 * 10**9))
    assert restore(MANIFEST, tree, SOURCES) == len(FILES)
    assert min(mtimes(tree)) > 200_000 * 10**9 and mtimes(tree) == sorted(mtimes(tree))
    assert outdate_changed_sources(MANIFEST, SOURCES, tree) == []
    assert restore(MANIFEST, tree, SOURCES) == 0  # after it now: nothing to do


def test_control_an_edited_source_stays_newer_than_the_results(tree_and_sources: Path) -> None:
    tree = tree_and_sources
    (tree / SOURCES[1]).write_text("source edited")
    os.utime(tree / SOURCES[1], ns=(0, 200_000 * 10**9))
    assert restore(MANIFEST, tree, SOURCES) == 0
    assert max(mtimes(tree)) < (tree / SOURCES[1]).stat().st_mtime_ns  # Snakemake reruns what reads it


def test_a_result_set_a_day_back_is_put_back_after_its_sources(tree_and_sources: Path) -> None:
    tree = tree_and_sources
    os.utime(tree / FILES[3], ns=(0, (100_003 - 86_400) * 10**9))
    assert restore(MANIFEST, tree, SOURCES) == len(FILES)
    assert min(mtimes(tree)) > 90_000 * 10**9 and mtimes(tree) == sorted(mtimes(tree))

"""The DAG-time record: a value is computed again exactly when what it was computed from changed."""

from __future__ import annotations

from pathlib import Path

from bnnrepro.pipeline.dag_cache import cached_each


def test_cached_each_computes_only_the_names_whose_signature_changed(tmp_path: Path) -> None:
    record, computed = tmp_path / "record.json", []

    def compute(name: str) -> list:
        computed.append(name)
        return [name.upper(), None]

    assert cached_each(record, "k", {"a": [1], "b": [2]}, compute) == {"a": ["A", None], "b": ["B", None]}
    assert cached_each(record, "k", {"a": [1], "b": [2]}, compute) == {"a": ["A", None], "b": ["B", None]}
    assert computed == ["a", "b"]  # the second call read both back
    before = record.stat().st_mtime_ns
    cached_each(record, "k", {"a": [1], "b": [2]}, compute)
    assert record.stat().st_mtime_ns == before  # nothing new: the record is not rewritten
    cached_each(record, "k", {"a": [1], "b": [3], "c": [1]}, compute)
    assert computed == ["a", "b", "b", "c"]  # control: a changed signature and a new name are computed
    assert cached_each(None, "k", {"a": [1]}, compute) == {"a": ["A", None]} and computed[-1] == "a"  # no record

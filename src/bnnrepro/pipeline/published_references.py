"""A benchmark's `published:` entry that takes its numbers from another study file: `{study: <name>, source: <its
entry's source>, rows: {...}}` stands for that study's entry of the same `source`, with the referring entry's own keys
(its `rows`, above all) in place of the original's. So a published table lives in one study file and is judged in
another against the methods that match its rows there (the deep-ensemble rows of Lakshminarayanan et al. 2017, made
with variance heads, in the UCI benchmark's heteroscedastic track)."""

from __future__ import annotations

from pathlib import Path

from bnnrepro.files import read_yaml
from bnnrepro.paths import project_root, studies_dir
from bnnrepro.pipeline.study_error import StudyError


def with_referenced_published(raw: dict, path: Path) -> tuple[dict, tuple[Path, ...]]:
    """`raw` with each `benchmark.published` entry that names a `study` replaced by that study's entry of the same
    `source` under the entry's own keys; and the study files read for them."""
    entries = (raw.get("benchmark") or {}).get("published") or []
    if not any("study" in entry for entry in entries):
        return raw, ()
    where, read = path.relative_to(project_root()), []
    resolved = []
    for entry in entries:
        if "study" not in entry:
            resolved.append(entry)
            continue
        other = studies_dir() / f"{entry['study']}.yaml"
        if not other.is_file():
            raise StudyError(f"{where}: a published entry names study {entry['study']!r}, which is not a study")
        published = (read_yaml(other).get("benchmark") or {}).get("published") or []
        found = [candidate for candidate in published if candidate.get("source") == entry.get("source")]
        if len(found) > 1:
            raise StudyError(
                f"{where}: a published entry takes source {entry.get('source')!r} from study {entry['study']!r}, "
                f"which has {len(found)} entries of that source; give the one to take a source of its own there"
            )
        if not found or "study" in found[0]:
            sources = [candidate.get("source") for candidate in published if "study" not in candidate]
            raise StudyError(
                f"{where}: a published entry takes source {entry.get('source')!r} from study {entry['study']!r}, "
                f"whose published entries of their own are {sources or 'none'}; name one of those"
            )
        resolved.append({**found[0], **{key: value for key, value in entry.items() if key != "study"}})
        read.append(other)
    return {**raw, "benchmark": {**raw["benchmark"], "published": resolved}}, tuple(dict.fromkeys(read))

"""The inputs and parameters of the workflow's data rules (workflow/rules/data.smk): the source files of each data
job, a dataset's registry entry as the rerun decision sees it, and the download settings, as methods of the plan
(`bnnrepro.pipeline.plan.Plan` mixes this class in; it provides `config` and `record`)."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Mapping
from pathlib import Path

from bnnrepro.data.registry import dataset, downloads, packaged
from bnnrepro.paths import project_root
from bnnrepro.pipeline.sources import source_files
from bnnrepro.train_configs import composed_files


class DataJobInputs:
    """The data rules' input functions and parameters."""

    config: Mapping
    record: Path | None

    def data_code(self, wildcards) -> list[str]:
        """Source files of a generated dataset's job."""
        generator_module = dataset(wildcards.dataset).generator.split(":")[0]
        return source_files("bnnrepro.data.__main__", generator_module, record=self.record)

    def download_code(self, step: str):
        """The input function of the source files of a download's or packaged dataset's `prepare`, `standin` or
        `source` step."""

        def code(wildcards) -> list[str]:
            reference = getattr(dataset(wildcards.download), step) or "bnnrepro.data.__main__:main"  # none: no stand-in
            step_module = reference.split(":")[0]
            return source_files("bnnrepro.data.__main__", step_module, record=self.record)

        return code

    @staticmethod
    def data_configs(wildcards) -> list[str]:
        """The Hydra dataset option (and the files it extends) whose values a generated instance takes by default,
        if the dataset has one (a dataset no training run reads, e.g. Lorenz before its study, may have none)."""
        if not (project_root() / "config/train/dataset" / f"{wildcards.dataset}.yaml").is_file():
            return []
        return composed_files([f"dataset={wildcards.dataset}"], groups=("dataset",))

    @staticmethod
    def registry_entry(wildcards) -> str:
        """A dataset's registry entry as JSON (and, for a packaged dataset, the version of the package that ships
        it): a changed entry (generator, source, options) or package remakes its data."""
        entry = dataset(getattr(wildcards, "dataset", None) or wildcards.download)
        version = {"package": entry.package_version()} if hasattr(entry, "package_version") else {}
        return json.dumps({**dataclasses.asdict(entry), **version}, sort_keys=True)

    @staticmethod
    def download_source(wildcards) -> str:
        """Where a download's files come from and what they must be, as JSON (its URL, mirror path and each file's
        name, md5 and size): a changed checksum or source fetches again, and so prepares again, in the same call."""
        entry = dataset(wildcards.download)
        files = [dataclasses.asdict(file) for file in entry.files]
        return json.dumps({"url": entry.url, "mirror_path": entry.mirror_path, "files": files}, sort_keys=True)

    @staticmethod
    def standin_entry(wildcards) -> str:
        """What a download's stand-in is made from, as JSON: its standin function, shape and the table's declared
        task and classes (not its checksums or URL: a new checksum refetches the real files, not the stand-in)."""
        entry = dataset(wildcards.download)
        fields = ("standin", "standin_shape", "task", "class_labels")
        return json.dumps({name: getattr(entry, name) for name in fields}, sort_keys=True)

    @staticmethod
    def download_names() -> str:
        return "|".join(entry.name for entry in downloads())

    @staticmethod
    def packaged_names() -> str:
        return "|".join(entry.name for entry in packaged()) or "^$"

    def data_mirror(self) -> str:
        """The mirror base URL for downloads ('' for the canonical URLs), shell-quoted."""
        return shlex.quote(self.config.get("data_mirror") or "")

    def data_source(self) -> str:
        """Where downloads come from (bnnrepro.data.fetch.SOURCES), shell-quoted."""
        return shlex.quote(self.config.get("data_source") or "auto")

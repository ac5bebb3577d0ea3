"""What the workflow needs of each figure and table to build its DAG, without importing the code that draws them.

The draw functions' modules import torch, matplotlib and seaborn (seconds); the workflow needs only what their
`@figure`/`@table` decorators declare: the output kind, what the artifact reads (the study's metrics, data files,
or one file of some runs), where its code is, and the module of its caption claims if it has any
(`bnnrepro.artifacts.claims`). `declarations` imports the modules once, records those fields
(`bnnrepro.pipeline.dag_cache`) under a digest of every source file the modules run, the catalog they register against
and config/, and reads them back on later `snakemake` calls until one of those files changes.
"""

from __future__ import annotations

import inspect
import pkgutil
from dataclasses import asdict, dataclass
from pathlib import Path

from bnnrepro.artifacts.registry import CATALOG, artifact_stem, drawing_modules, implementations
from bnnrepro.paths import config_dir
from bnnrepro.pipeline.dag_cache import cached, files_digest
from bnnrepro.pipeline.sources import PACKAGE_DIR, module_closure
from bnnrepro.pipeline.studies import Run


@dataclass(frozen=True)
class ArtifactDeclaration:
    """One artifact as its decorator declares it (see `bnnrepro.artifacts.registry.Implementation`), with its data
    files at one scale and the module and file of its draw function."""

    artifact_id: str
    output: str
    uses: str
    module: str
    source_file: str  # relative to the package's folder (artifacts/udn_spirals.py): a copied project keeps its record
    data_files: tuple[str, ...] = ()
    run_file: str | None = None
    methods: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    claims_module: str | None = None  # where its caption claims are checked; None when it has none

    @property
    def stem(self) -> str:
        return artifact_stem(self.artifact_id)

    def reads(self, run: Run) -> bool:
        """Whether the artifact draws from `run` (uses='runs': a run of a method it names, on a dataset it names if
        it names any)."""
        return (
            self.run_file is not None
            and run.method in self.methods
            and (not self.datasets or run.dataset in self.datasets)
        )


def declarations(scale: str, record: Path | None = None) -> dict[str, ArtifactDeclaration]:
    """{artifact id: declaration} of every drawn artifact at `scale`, read from `record` while the files the
    drawing modules run, the catalog and config/ are unchanged."""
    modules = [*drawing_modules(), *_claims_modules()]
    code = set().union(*(module_closure(module, record) for module in modules))
    # this module's own file too: it decides what a declaration records
    digest = files_digest([Path(__file__), *sorted(code), CATALOG, *sorted(config_dir().rglob("*.yaml"))], scale)
    fields = cached(record, f"artifacts/{scale}", digest, lambda: _declare(scale))
    return {
        artifact_id: ArtifactDeclaration(**{k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()})
        for artifact_id, entry in fields.items()
    }


def package_path(function) -> str:
    """The file that defines `function`, relative to the package's folder (`PACKAGE_DIR`)."""
    return Path(inspect.getsourcefile(function)).resolve().relative_to(PACKAGE_DIR.resolve()).as_posix()


def _claims_modules() -> list[str]:
    """The modules of `bnnrepro.artifacts.claims`, found without importing them."""
    return [
        f"bnnrepro.artifacts.claims.{module.name}"
        for module in pkgutil.iter_modules([str(PACKAGE_DIR / "artifacts" / "claims")])
    ]


def _declare(scale: str) -> dict[str, dict]:
    from bnnrepro.artifacts.claims import claims_module, claims_of

    return {
        artifact_id: asdict(
            ArtifactDeclaration(
                artifact_id=artifact_id,
                output=implementation.output,
                uses=implementation.uses,
                module=implementation.draw.__module__,
                source_file=package_path(implementation.draw),
                data_files=tuple(implementation.data_files(scale)) if implementation.data_files else (),
                run_file=implementation.run_file,
                methods=implementation.methods,
                datasets=implementation.datasets,
                claims_module=claims_module(implementation.draw.__module__) if claims_of(artifact_id) else None,
            )
        )
        for artifact_id, implementation in implementations().items()
    }

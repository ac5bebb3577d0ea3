"""The drawing jobs (rule draw_<study>, workflow/rules/figures.smk) as the plan sees them: the artifacts each study
draws, the results each artifact is drawn from, and each job's inputs, outputs and arguments, as methods of the plan
(`bnnrepro.pipeline.plan.Plan` mixes this class in; it provides `studies`, `record`, `real_data`, `scale`,
`study_runs`, `listed` and `artifacts`, the checked artifacts of the enabled studies)."""

from __future__ import annotations

import shlex
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from bnnrepro import layout
from bnnrepro.artifacts.registry import CATALOG
from bnnrepro.data.registry import SCHEMA as REGISTRY_SCHEMA
from bnnrepro.data.registry import registry_file
from bnnrepro.evaluations.declarations import declaration_file
from bnnrepro.paths import project_root
from bnnrepro.pipeline import training_inputs
from bnnrepro.pipeline.sources import project_paths, source_files
from bnnrepro.pipeline.studies import STUDY_SCHEMA
from bnnrepro.report import files as report_files
from bnnrepro.train_configs import SCALES

if TYPE_CHECKING:
    from bnnrepro.artifacts.declarations import ArtifactDeclaration
    from bnnrepro.pipeline.studies import Study


class DrawingJobs:
    """The drawing jobs' input functions, outputs and arguments, and the artifact files they make."""

    studies: dict[str, Study]
    record: Path | None
    artifacts: dict[str, tuple[Study, ArtifactDeclaration]]
    real_data: object

    def study_artifacts(self, name: str) -> dict[str, ArtifactDeclaration]:
        """{stem: declaration} of the artifacts study `name` draws."""
        return {stem: impl for stem, (study, impl) in self.artifacts.items() if study.name == name}

    def drawn_studies(self) -> list[str]:
        """The enabled studies that draw at least one artifact (each gets its rule `draw_<study>`)."""
        return sorted({study.name for study, _ in self.artifacts.values()})

    def artifact_results(self, study: Study, implementation: ArtifactDeclaration) -> dict[str, list[str]]:
        """{'metrics': [CSV], 'data': [...], 'runs': [...]}: the results one artifact is drawn from."""
        results = {}
        # the caption claims of a figure drawn from runs may rest on the study's metrics too
        if implementation.uses == "metrics" or (implementation.claims_module and self.study_runs(study)):
            results["metrics"] = [layout.study_metrics_file(self.scale(study.name), study.name)]
        if implementation.uses == "data":
            results["data"] = list(implementation.data_files)
        if implementation.uses == "runs":
            results["runs"] = self.artifact_run_files(study, implementation)
        return results

    def artifact_run_files(
        self, study: Study, implementation: ArtifactDeclaration, name: str | None = None
    ) -> list[str]:
        """The file an artifact draws from each run of its study whose method it names, on the datasets it names if
        any (e.g. config.yaml, or eval/<evaluation>.npz, which rule `evaluate` makes), or the file `name` of those
        runs."""
        return [
            run.file(name or implementation.run_file) for run in self.study_runs(study) if implementation.reads(run)
        ]

    @staticmethod
    def artifact_evaluation(implementation: ArtifactDeclaration) -> str | None:
        """The evaluation whose arrays an artifact draws (config/evaluations/<name>.yaml), or None."""
        return layout.evaluation_name(implementation.run_file) if implementation.uses == "runs" else None

    def drawing_inputs(self, name: str) -> dict[str, list[str] | str]:
        """What the job drawing a study's artifacts reads: the code of each drawing module and of its caption
        claims, the catalog, the configuration it reads (`drawing_configs`) and the results each artifact is drawn
        from. An edit to one of them redraws the study's artifacts."""
        study, artifacts = self.studies[name], self.study_artifacts(name).values()
        modules = {impl.module for impl in artifacts} | {impl.claims_module for impl in artifacts if impl.claims_module}
        code = source_files("bnnrepro.artifacts.__main__", *sorted(modules), record=self.record)
        results = {f for impl in artifacts for files in self.artifact_results(study, impl).values() for f in files}
        # an artifact drawn from run files says whether they trained on stand-ins, which their metrics.json say
        results |= {
            f
            for impl in artifacts
            if impl.uses == "runs"
            for f in self.artifact_run_files(study, impl, layout.RUN_METRICS)
        }
        return {
            "code": code + project_paths([CATALOG]),
            "configs": self.drawing_configs(name),
            "results": sorted(results),
        }

    def drawing_configs(self, name: str) -> str:
        """The configuration a study's drawing job reads, as an input list: the study's file and the dataset registry
        (with their schemas), the declarations of the evaluations its artifacts draw from, and the config/train files
        its runs compose at every scale (tables and notes state their settings; some describe a method variant as it
        composes at the default scale, `Study.variant_config`)."""
        return self._drawing_configs[name]

    @cached_property
    def _drawing_configs(self) -> dict[str, str]:
        """`drawing_configs` of every drawn study, composed once (it composes every scale's runs)."""
        lists = {}
        for name in self.drawn_studies():
            study = self.studies[name]
            evaluations = {self.artifact_evaluation(impl) for impl in self.study_artifacts(name).values()}
            configs = [*study.files, registry_file()]
            configs += [declaration_file(e) for e in evaluations if e is not None]
            files = {
                *(str(path.relative_to(project_root())) for path in configs),
                *project_paths([STUDY_SCHEMA, REGISTRY_SCHEMA]),
                *(
                    f
                    for scale in SCALES
                    for run in study.runs(scale)
                    for f in training_inputs.training_configs(study, run, scale, self.real_data)
                ),
            }
            lists[name] = self.listed("draw_configs", files)
        return lists

    def drawing_outputs(self, name: str) -> list[tuple[str, str | None]]:
        """Every file of a study's artifacts, each with the category of Snakemake's report that shows it (figures'
        PDFs, tables' CSVs), or None."""
        outputs = []
        for stem, impl in self.study_artifacts(name).items():
            files = report_files.artifact_files(impl.output, stem)
            shown = files.pop("pdf" if impl.output == "figure" else "csv")
            outputs.append((shown, "Figures" if impl.output == "figure" else "Tables"))
            outputs += [(f, None) for f in [*files.values(), report_files.artifact_checks_file(stem)]]
        return outputs

    def drawing_arguments(self, name: str) -> str:
        """`python -m bnnrepro.artifacts` arguments, shell-quoted: the study and scale, then each artifact's results
        and files."""
        arguments = ["--study", name, "--scale", self.scale(name)]
        for stem, impl in self.study_artifacts(name).items():
            arguments += ["--artifact", impl.artifact_id]
            for option, files in self.artifact_results(self.studies[name], impl).items():
                arguments += [f"--{option}", *files]
            # in ARTIFACT_FORMATS order
            arguments += ["--outputs", *report_files.artifact_files(impl.output, stem).values()]
            arguments += ["--checks", report_files.artifact_checks_file(stem)]
        return " ".join(map(shlex.quote, arguments))

    def artifact_files(self, kind: str) -> list[str]:
        """Output files of every implemented figure ('figure') or table ('table')."""
        return [
            path
            for stem, (_, impl) in self.artifacts.items()
            if impl.output == kind
            for path in report_files.artifact_files(kind, stem).values()
        ]

    def artifact_checks_files(self) -> list[str]:
        """The checks (caption claims, table cells) of every implemented figure and table."""
        return [report_files.artifact_checks_file(stem) for stem in self.artifacts]

# Aggregation: one tidy CSV per study (study, run, method, dataset, hparams, seed, metric, value).


rule aggregate:
    input:
        metrics=PLAN.study_run_metrics,
        code=source_files("bnnrepro.aggregate", record=PLAN.record),
    output:
        report(
            layout.study_metrics_file(),
            caption="../report/metrics.rst",
            category="Metrics",
            labels={"study": "{study}"},
        ),
    log:
        layout.log_file("aggregate", "{scale}/{study}"),
    wildcard_constraints:
        scale=SCALE_NAMES,
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.aggregate {wildcards.study} {wildcards.scale} {output} > {log} 2>&1"


# A study of your own (`paper: own`): a table of its test metrics, mean and standard error over seeds.
rule study_summary:
    input:
        metrics=PLAN.study_metrics,
        code=source_files("bnnrepro.report.study_summary", record=PLAN.record),
    output:
        csv=report(
            layout.artifact_file("table", "csv", layout.study_summary_stem()),
            caption="../report/metrics.rst",
            category="Studies of your own",
            labels={"study": "{study}"},
        ),
        md=layout.artifact_file("table", "md", layout.study_summary_stem()),
        tex=layout.artifact_file("table", "tex", layout.study_summary_stem()),
    log:
        layout.log_file("aggregate", "{study}_summary"),
    wildcard_constraints:
        study=OWN_STUDY_NAMES,
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.report.study_summary {wildcards.study} {input.metrics} "
        "--outputs {output.csv} {output.md} {output.tex} > {log} 2>&1"

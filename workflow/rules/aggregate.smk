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


# A study of your own (`paper: own`), per task of its datasets: a table of their test metrics (mean and standard error
# over seeds and splits), the methods ranked over those datasets and replicates (Friedman and Nemenyi tests), a figure
# of each test metric per dataset and the critical-difference diagrams (bnnrepro.report.own_study); a benchmark's
# settings chosen on its validation splits and its published numbers beside ours (bnnrepro.report.benchmark).
rule own_study:
    input:
        study="config/studies/{study}.yaml",
        bases=PLAN.study_bases,
        metrics=PLAN.study_metrics,
        code=PLAN.report_code("bnnrepro.report.own_study"),
    output:
        **own_study_outputs(),
    log:
        layout.log_file("aggregate", "{study}_{task}_summary"),
    wildcard_constraints:
        study=OWN_STUDY_NAMES,
        task="|".join(KNOWN_TASKS),
    conda:
        "../../environment.yml"
    params:
        datasets=PLAN.own_study_datasets,
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.report.own_study {input.study} {input.metrics} "
        "--task {wildcards.task} --datasets {params.datasets} "
        "--table {output.table_csv} {output.table_md} {output.table_tex} "
        "--ranking {output.ranking_csv} {output.ranking_md} {output.ranking_tex} "
        "--metrics-figure {output.metrics_figure_pdf} {output.metrics_figure_png} "
        "--ranking-figure {output.ranking_figure_pdf} {output.ranking_figure_png} "
        "--selection {output.selection_csv} {output.selection_md} {output.selection_tex} "
        "--published {output.published_csv} {output.published_md} {output.published_tex} "
        "--equivalence {output.equivalence_csv} {output.equivalence_md} {output.equivalence_tex} > {log} 2>&1"

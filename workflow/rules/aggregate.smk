# Aggregation: one tidy CSV per study (study, run, method, dataset, hparams, seed, metric, value).


rule aggregate:
    input:
        metrics=study_run_metrics,
        code=source_files("bnnrepro.aggregate"),
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
        "python -m bnnrepro.aggregate {wildcards.study} {wildcards.scale} {output} > {log} 2>&1"

# Aggregation: one tidy CSV per study (study, run, method, dataset, hparams, seed, metric, value).


rule aggregate:
    input:
        metrics=study_run_metrics,
        code=source_files("bnnrepro.aggregate"),
    output:
        report(
            "results/{scale}/{study}/metrics.csv",
            caption="../report/metrics.rst",
            category="Metrics",
            labels={"study": "{study}"},
        ),
    log:
        "logs/aggregate/{scale}/{study}.log",
    wildcard_constraints:
        scale="smoke|default|paper",
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.aggregate {wildcards.study} {wildcards.scale} {output} > {log} 2>&1"

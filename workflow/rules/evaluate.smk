# Evaluation: arrays that a figure needs beyond the metrics (predictive samples, hidden-state paths, metrics under
# other solvers or on shifted data), computed from a finished run's checkpoint, one job per (run, evaluation).
# An evaluation declared in config/evaluations/<name>.yaml also reads the datasets it names there (e.g. CIFAR-10-C).


rule evaluate:
    input:
        checkpoint=rules.train.output.checkpoint,
        config=rules.train.output.config,
        data=planned(PLAN.run_data),
        extra_data=PLAN.evaluation_data,
        code=planned(PLAN.evaluation_code),
    output:
        layout.run_file(layout.evaluation_file()),
    log:
        layout.log_file("evaluate", "{scale}/{run}/{evaluation}"),
    wildcard_constraints:
        scale=SCALE_NAMES,
        evaluation="[a-z0-9_]+",
    priority: EVALUATION_PRIORITY
    conda:
        "../../environment.yml"
    threads: config["threads_per_job"]
    resources:
        gpu=evaluation_gpus,
    params:
        data=PLAN.evaluation_data_arguments,
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.evaluations 'results/{wildcards.scale}/runs/{wildcards.run}' "
        "{wildcards.evaluation} '{output}' {params.data} > '{log}' 2>&1"

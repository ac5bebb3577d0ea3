# Training: one job per (study, method, dataset, hyperparameters, seed), in its own run folder. Its inputs are the
# data, the code it runs and the config/train files it composes, so that editing any of them reruns it.


rule train:
    input:
        data=run_data,
        code=train_code,
        configs=train_configs,
    output:
        metrics=layout.run_file(layout.RUN_METRICS),
        config=layout.run_file(layout.RUN_CONFIG),
        checkpoint=layout.run_file(layout.RUN_CHECKPOINT),
        log=layout.run_file(layout.RUN_LOG),
    log:
        layout.log_file("train", "{scale}/{study}/{run}"),
    wildcard_constraints:
        scale=SCALE_NAMES,
    conda:
        "../../environment.yml"
    threads: config["threads_per_job"]
    resources:
        gpu=training_gpus,
    params:
        overrides=run_overrides,
    shell:
        "python -m bnnrepro.job_server run bnnrepro.train {params.overrides} > {log} 2>&1"

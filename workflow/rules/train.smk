# Training: one job per (study, method, dataset, hyperparameters, seed), in its own run folder. Its inputs are the
# data, the code it runs and the config/train files it composes, so that editing any of them reruns it. The device
# and the thread count are a resource and the job's threads, not params: they say where a run computes, not what,
# so changing them reruns nothing (a params change would). The run's train.log is updated in place (Snakemake deletes
# a job's other outputs and its log before a rerun): it keeps every attempt, each marked by the job.


rule train:
    input:
        data=planned(PLAN.run_data),
        code=planned(PLAN.train_code),
        configs=planned(PLAN.train_configs),
    output:
        metrics=layout.run_file(layout.RUN_METRICS),
        config=layout.run_file(layout.RUN_CONFIG),
        checkpoint=layout.run_file(layout.RUN_CHECKPOINT),
        log=update(layout.run_file(layout.RUN_LOG)),  # not deleted before a rerun: each attempt appends to it
    log:
        layout.log_file("train", "{scale}/{study}/{run}"),
    wildcard_constraints:
        scale=SCALE_NAMES,
    conda:
        "../../environment.yml"
    threads: config["threads_per_job"]
    resources:
        gpu=TRAINING_GPUS,
        device=config["device"],
    params:
        overrides=planned(PLAN.run_overrides),
        cpu_arithmetic=config["cpu_arithmetic"],  # what a run computes: a change reruns it
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.train {params.overrides} device={resources.device} threads={threads}"
        " cpu_arithmetic={params.cpu_arithmetic} > {log} 2>&1"

# Training: one job per (method variant, dataset, hyperparameters, seed), in its own run folder, which every study that
# plans the run shares (bnnrepro.layout: the folder names the variant's overrides, not the study). Its inputs are the
# data, the code it runs and the config/train files it composes, so that editing any of them reruns it. The device
# and the thread count are a resource and the job's threads, not params: they say where a run computes, not what,
# so changing them reruns nothing (a params change would). The run's train.log is no declared output, like resume.pt:
# Snakemake deletes a job's outputs before a rerun, and would put back the copy from before a failed or killed job (an
# update() output), so the job appends to it itself and it keeps every attempt, each numbered (bnnrepro.runs).


rule train:
    input:
        data=planned(PLAN.run_data),
        code=planned(PLAN.train_code),
        configs=planned(PLAN.train_configs),
    output:
        metrics=layout.run_file(layout.RUN_METRICS),
        config=layout.run_file(layout.RUN_CONFIG),
        checkpoint=layout.run_file(layout.RUN_CHECKPOINT),
    log:
        layout.log_file("train", "{scale}/{run}"),
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
        identity=planned(PLAN.run_identity),  # digests of what it is planned from, recorded in its metrics.json
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.train {params.overrides} device={resources.device} threads={threads}"
        " cpu_arithmetic={params.cpu_arithmetic} {params.identity} > {log} 2>&1"

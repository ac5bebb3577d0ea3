# Training: one job per (study, method, dataset, hyperparameters, seed), in its own run folder.


rule train:
    input:
        data=run_data,
        code=train_code,
    output:
        metrics="results/{scale}/{study}/runs/{run}/metrics.json",
        config="results/{scale}/{study}/runs/{run}/config.yaml",
        checkpoint="results/{scale}/{study}/runs/{run}/checkpoint.pt",
        log="results/{scale}/{study}/runs/{run}/train.log",
    log:
        "logs/train/{scale}/{study}/{run}.log",
    wildcard_constraints:
        scale="smoke|default|paper",
    conda:
        "../../environment.yml"
    threads: config["threads_per_job"]
    resources:
        gpu=training_gpus,
    params:
        overrides=run_overrides,
    shell:
        "python -m bnnrepro.train {params.overrides} > {log} 2>&1"

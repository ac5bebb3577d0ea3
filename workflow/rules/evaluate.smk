# Evaluation: arrays that a figure needs beyond the metrics (predictive samples, hidden-state paths),
# computed from a finished run's checkpoint, one job per (run, evaluation).


rule evaluate:
    input:
        checkpoint="results/{scale}/{study}/runs/{run}/checkpoint.pt",
        config="results/{scale}/{study}/runs/{run}/config.yaml",
        data=run_data,
        code=evaluation_code,
    output:
        "results/{scale}/{study}/runs/{run}/eval/{evaluation}.npz",
    log:
        "logs/evaluate/{scale}/{study}/{run}/{evaluation}.log",
    wildcard_constraints:
        scale="smoke|default|paper",
        evaluation="[a-z0-9_]+",
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.evaluation 'results/{wildcards.scale}/{wildcards.study}/runs/{wildcards.run}' "
        "{wildcards.evaluation} '{output}' > '{log}' 2>&1"

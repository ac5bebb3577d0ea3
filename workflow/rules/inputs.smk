# Input lists: a training or evaluation job declares the source files it runs through one list file per set of
# files (bnnrepro.pipeline.input_lists), made again whenever one of them changes, so that Snakemake's scheduler checks one
# input where it checked about forty, for every ready job at every scheduling pass.


rule input_list:
    input:
        planned(PLAN.listed_files),
    output:
        layout.input_list_file(),
    log:
        layout.log_file("inputs", "{name}"),
    wildcard_constraints:
        name=INPUT_LIST_NAME,
    localrule: True
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.pipeline.input_lists {output:q} {input:q} > {log:q} 2>&1"

# bnnrepro: data -> one training job per run -> aggregation per study -> one job per figure and table
# -> report. `snakemake --cores N` builds reports/report.pdf for config/config.yaml's scale and studies.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/inputs.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


# Cheap steps run where Snakemake runs (the login node on a cluster): downloads, data preparation,
# aggregation and the report (and each study's figures and tables: `localrule` in figures.smk). Training jobs go to
# the executor.
localrules:
    all,
    data,
    input_list,
    generate_data,
    fetch,
    prepare_download,
    standin,
    aggregate,
    report_manifest,
    report,
    record_timestamps,


# Every result file is an input of `all`, not only the report: Snakemake remakes a missing file only where a job
# needs it, and a report newer than its inputs needs nothing, so a deleted run, CSV, figure or data file would stay
# deleted while the report showed it. As a target of `all`, it is rebuilt, and whatever reads it after it.
rule all:
    default_target: True
    input:
        every_result,
        rules.record_timestamps.output.timestamps,


onstart:
    on_start()
    run_steps.interrupt_jobs_with_the_workflow()


onsuccess:
    on_end(succeeded=True)


onerror:
    on_end(succeeded=False)

# bnnrepro: data -> one training job per run -> aggregation per study -> one job per figure and table
# -> report. `snakemake --cores N` builds reports/report.pdf for config/config.yaml's scale and studies.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


# Cheap steps run where Snakemake runs (the login node on a cluster): downloads, data preparation,
# aggregation, figures, tables and the report. Training jobs go to the executor.
localrules:
    all,
    data,
    generate_data,
    fetch,
    prepare_download,
    standin,
    aggregate,
    figure,
    table,
    report_manifest,
    report,
    record_timestamps,


rule all:
    default_target: True
    input:
        rules.report.output.pdf,
        prepared_datasets(),
        rules.record_timestamps.output.timestamps,


onsuccess:
    stop_rate_limiter_timers()


onerror:
    stop_rate_limiter_timers()

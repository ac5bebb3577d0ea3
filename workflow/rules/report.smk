# The report: every artifact of the catalog, ours beside the published one, with provenance.


rule report_manifest:
    input:
        figures=PLAN.artifact_files("figure"),
        tables=PLAN.artifact_files("table"),
        checks=PLAN.artifact_checks_files(),
        own_study_results=PLAN.own_study_results(),
        metrics=planned(PLAN.reported_study_metrics),
        code=PLAN.report_code("bnnrepro.report.manifest"),
        draw_functions=PLAN.draw_function_files(),
        paper_results=PLAN.paper_result_files(),
    output:
        manifest=layout.report_manifest_file(SCALE),
    log:
        layout.log_file("report", f"{SCALE}_manifest"),
    conda:
        "../../environment.yml"
    params:
        config=PLAN.report_config(),
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.report.manifest --config {params.config} --out {output} > {log} 2>&1"


rule report:
    input:
        manifest=rules.report_manifest.output.manifest,
        code=PLAN.report_code("bnnrepro.report.__main__"),
    output:
        pdf=report(report_files.REPORT_PDF, caption="../report/report.rst", category="Report"),
        typst_source=report_files.REPORT_TYPST,
    log:
        layout.log_file("report", "report"),
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.pipeline.job_server run bnnrepro.report {input.manifest} {output.pdf} > {log} 2>&1"


# Last: the size, time and md5 of every result, cached by DVC with them, so that results checked out from a
# DVC remote get back their time order and Snakemake schedules nothing, and the md5 of the workflow's sources, so that
# a checkout of results made from other sources reruns what those changed (bnnrepro.pipeline.result_timestamps). The sources
# are no inputs: the record is written when every result is current with them, and a source edited since that no
# result reads leaves it unchanged (rewriting config/config.yaml, as `dvc exp run -S` does, would rerun it).
rule record_timestamps:
    input:
        results=PLAN.result_files(),
        code=source_files("bnnrepro.pipeline.result_timestamps", record=PLAN.record),
    output:
        timestamps=TIMESTAMPS,
    log:
        layout.log_file("report", f"{SCALE}_timestamps"),
    run:
        recorded = record(input.results, Path(output[0]), sources=workflow_source_files())
        Path(log[0]).write_text(f"recorded {recorded} result files\n")

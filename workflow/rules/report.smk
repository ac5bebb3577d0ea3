# The report: every artifact of the catalog, ours beside the published one, with provenance.


rule report_manifest:
    input:
        figures=artifact_files("figure"),
        tables=artifact_files("table"),
        code=report_code("bnnrepro.report.manifest"),
    output:
        f"results/{SCALE}/report_manifest.json",
    log:
        f"logs/report/{SCALE}_manifest.log",
    conda:
        "../../environment.yml"
    params:
        config=report_config(),
    shell:
        "python -m bnnrepro.report.manifest --config {params.config} --out {output} > {log} 2>&1"


rule report:
    input:
        manifest=f"results/{SCALE}/report_manifest.json",
        code=report_code("bnnrepro.report.__main__"),
    output:
        pdf=report("reports/report.pdf", caption="../report/report.rst", category="Report"),
        typst_source="reports/report.typ",
    log:
        "logs/report/report.log",
    conda:
        "../../environment.yml"
    shell:
        "python -m bnnrepro.report {input.manifest} {output.pdf} > {log} 2>&1"


# Last: the size, time and md5 of every result, cached by DVC with them, so that results checked out from a
# DVC remote get back their time order and Snakemake schedules nothing (bnnrepro.result_timestamps).
rule record_timestamps:
    input:
        results=result_files(),
        code=source_files("bnnrepro.result_timestamps"),
    output:
        TIMESTAMPS,
    log:
        f"logs/report/{SCALE}_timestamps.log",
    run:
        Path(log[0]).write_text(f"recorded {record(input.results, Path(output[0]))} result files\n")

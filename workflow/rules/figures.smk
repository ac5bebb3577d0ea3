# Figures and tables: one job per artifact of the enabled studies.


rule figure:
    input:
        unpack(artifact_inputs),
    output:
        pdf=report(
            layout.artifact_file("figure", "pdf"),
            caption="../report/artifact.rst",
            category="Figures",
            labels={"artifact": "{stem}"},
        ),
        png=layout.artifact_file("figure", "png"),
        checks=layout.artifact_checks_file(),
    log:
        layout.log_file("figures", "{stem}"),
    wildcard_constraints:
        stem=artifact_stems("figure"),
    conda:
        "../../environment.yml"
    params:
        arguments=artifact_arguments,
    shell:
        "python -m bnnrepro.artifacts {params.arguments} --outputs {output.pdf} {output.png} --checks {output.checks} > {log} 2>&1"


rule table:
    input:
        unpack(artifact_inputs),
    output:
        csv=report(
            layout.artifact_file("table", "csv"),
            caption="../report/artifact.rst",
            category="Tables",
            labels={"artifact": "{stem}"},
        ),
        md=layout.artifact_file("table", "md"),
        tex=layout.artifact_file("table", "tex"),
        checks=layout.artifact_checks_file(),
    log:
        layout.log_file("tables", "{stem}"),
    wildcard_constraints:
        stem=artifact_stems("table"),
    conda:
        "../../environment.yml"
    params:
        arguments=artifact_arguments,
    shell:
        "python -m bnnrepro.artifacts {params.arguments} --outputs {output.csv} {output.md} {output.tex} --checks {output.checks} > {log} 2>&1"

# Figures and tables: one job per artifact of the enabled studies.


rule figure:
    input:
        unpack(artifact_inputs),
    output:
        pdf=report(
            "reports/figures/{stem}.pdf",
            caption="../report/artifact.rst",
            category="Figures",
            labels={"artifact": "{stem}"},
        ),
        png="reports/figures/{stem}.png",
    log:
        "logs/figures/{stem}.log",
    wildcard_constraints:
        stem=artifact_stems("figure"),
    conda:
        "../../environment.yml"
    params:
        arguments=artifact_arguments,
    shell:
        "python -m bnnrepro.artifacts {params.arguments} --outputs {output.pdf} {output.png} > {log} 2>&1"


rule table:
    input:
        unpack(artifact_inputs),
    output:
        csv=report(
            "reports/tables/{stem}.csv",
            caption="../report/artifact.rst",
            category="Tables",
            labels={"artifact": "{stem}"},
        ),
        md="reports/tables/{stem}.md",
        tex="reports/tables/{stem}.tex",
    log:
        "logs/tables/{stem}.log",
    wildcard_constraints:
        stem=artifact_stems("table"),
    conda:
        "../../environment.yml"
    params:
        arguments=artifact_arguments,
    shell:
        "python -m bnnrepro.artifacts {params.arguments} --outputs {output.csv} {output.md} {output.tex} > {log} 2>&1"

# Figures and tables: one job per study draws all its artifacts (rule draw_<study>). A job per artifact paid the
# imports of pandas, matplotlib and seaborn (2-3 s) for each of 69 artifacts at smoke, most of their time.


for _study in PLAN.drawn_studies():

    rule:
        name:
            f"draw_{_study}"
        input:
            **PLAN.drawing_inputs(_study),
        output:
            drawing_outputs(_study),
        log:
            layout.log_file("artifacts", _study),
        localrule: True
        conda:
            "../../environment.yml"
        params:
            arguments=PLAN.drawing_arguments(_study),
        shell:
            "python -m bnnrepro.pipeline.job_server run bnnrepro.artifacts {params.arguments} > {log} 2>&1"

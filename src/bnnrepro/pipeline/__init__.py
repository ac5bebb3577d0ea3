"""The workflow's machinery: what to run and when, apart from what a job computes.

`plan` models the DAG in plain Python (studies -> runs -> evaluations -> artifacts -> result files, with each job's
declared inputs); `workflow/rules/common.smk` only adapts it to Snakemake. Beside it: a study's grid (`studies`,
`method_tasks`), the source files a job runs (`sources`, `training_inputs`) and their input lists (`input_lists`),
work kept between DAG builds (`dag_cache`), the time order of cached results (`result_timestamps`,
`result_checks`), the steps before and after the jobs (`run_steps`, `config_keys`), and how a job's process starts
(`job_server`, `job_process`).

The package imports nothing here, so that a job importing one of its modules (every entry point imports
`job_process`) runs no other.
"""

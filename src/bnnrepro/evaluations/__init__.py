"""Evaluations: the arrays a figure needs beyond a run's metrics (predictive samples on a grid, hidden-state paths,
weight samples, metrics under other solvers or on shifted data), computed from a finished run's checkpoint.

Every evaluation is declared in config/evaluations/<name>.yaml (`bnnrepro.evaluations.declarations`) and computed by its
`code` module's `evaluation_arrays(method, name, splits, inputs)`: `method` is the trained run, `splits` its data and
`inputs` (`bnnrepro.evaluations.inputs.EvaluationInputs`) the rest, including the method as initialised. The job is
`python -m bnnrepro.evaluations RUN_DIR NAME OUT.npz [--data DATASET=FILE ...]` (workflow rule `evaluate`).

Methods do not import this package, so evaluation code is never a training job's code input: changing it reruns
only evaluations.
"""

"""Each method against the best over datasets with the splits of each dataset as its repeated measures: the
hierarchical Bayesian t-test of Corani et al. (2017, "Statistical comparison of classifiers through Bayesian
hierarchical modelling", Machine Learning 106, §3), through baycomp's `HierarchicalTest` and its Stan model.

Per dataset the model has its own mean difference, inferred from that dataset's splits with their correlation (the
training sets of two splits overlap: correlation rho = the held-out share, `HOLDOUT_FRACTION`, as in the correlated
t-test); the datasets' means are drawn from a Student distribution whose location is the difference on a new
dataset. The probabilities are of that location: P(worse than the best by more than the metric's ROPE, `ROPES`),
P(within it), P(better). A noisy dataset weighs less than a clean one, which the signed-rank test on the datasets'
means (`bnnrepro.report.practical_equivalence`) cannot do; a method better on one dataset only is not better on a new
one.

Sampling takes seconds per comparison after a Stan compilation of about a minute and a half, once per machine
(httpstan keeps it under ~/.cache/httpstan), so the posteriors of a kept benchmark are kept beside its runs
(`POSTERIORS_FILE`), each with the digest of its inputs (the shortfalls, the settings, the library versions):
`kept_comparisons` reuses a kept posterior only where its digest is the current one, so an edited run, selection or
setting cannot leave a stale probability in the document.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from bnnrepro.report.per_dataset_tests import HOLDOUT_FRACTION
from bnnrepro.report.practical_equivalence import RANKED_METRICS_DIRECTION, ROPES, Comparison, excess
from bnnrepro.report.ranking import Ranking, metric_blocks

POSTERIORS_FILE = "hierarchical.json"
"""In a kept benchmark's folder: {metric: {method: {worse, equivalent, better, datasets, digest}}}."""
STAN = {"chains": 4, "nsamples": 5000, "random_state": 0}
"""Stan's chains, draws per chain after warm-up, and the seed of the sampler and of baycomp's data preparation: a
kept posterior is the same on every regeneration on one machine. The priors are Corani et al.'s (baycomp's
defaults: nu ~ Gamma(alpha, beta), alpha in [1, 2], beta in [0.01, 0.1]; the scales uniform up to 1000 times the
observed ones)."""
INDEPENDENT_RHO = 1e-12
"""The correlation passed for independent replicates (a benchmark's `holdout_fraction` 0): baycomp cannot take 0."""
LIBRARIES = ("baycomp", "pystan", "httpstan")


class StalePosteriors(RuntimeError):
    """A kept benchmark's hierarchical posteriors are missing or were made from other inputs."""


def shortfall_matrix(selected: pd.DataFrame, metric: str, best: str, method: str) -> np.ndarray:
    """`method`'s shortfall against `best` ([datasets x splits], positive = worse, measured as the metric's ROPE is)
    on the splits where both have a finite result; each dataset keeps its first k such splits, k the fewest any
    dataset has (the model takes the same number of measures per dataset)."""
    pair = selected[selected["method"].isin([best, method])]
    higher = RANKED_METRICS_DIRECTION[metric] == "higher"
    rows = []
    for dataset in dict.fromkeys(pair["dataset"]):
        blocks = metric_blocks(pair[pair["dataset"] == dataset], metric, unit="replicate")
        if {best, method} <= set(blocks.columns) and len(blocks):
            rows.append(excess(blocks, best, metric, higher)[method].to_numpy())
    splits = min(map(len, rows), default=0)
    return np.array([row[:splits] for row in rows], dtype=float)


def input_digest(shortfall: np.ndarray, metric: str, holdout: float = HOLDOUT_FRACTION) -> str:
    """sha256 of what a posterior depends on: the shortfalls' values and shape, the ROPE, rho, Stan's settings and
    the versions of the libraries that sample it."""
    hasher = hashlib.sha256(np.ascontiguousarray(shortfall).tobytes())
    versions = {name: importlib.metadata.version(name) for name in LIBRARIES}
    settings = {"shape": shortfall.shape, "rope": ROPES[metric], "rho": holdout, **STAN, **versions}
    hasher.update(json.dumps(settings, sort_keys=True).encode())
    return hasher.hexdigest()


@contextlib.contextmanager
def _seeded_stan_in(folder: str, seed: int) -> Iterator[None]:
    """baycomp 1.0.3 neither seeds Stan nor keeps its cache ('last-sample.pickle') out of the working folder: for
    the sampling inside, Stan's builds get `seed` and the working folder is `folder`."""
    import stan

    build, cwd = stan.build, os.getcwd()
    stan.build = functools.partial(build, random_seed=seed)
    os.chdir(folder)
    try:
        yield
    finally:
        stan.build = build
        os.chdir(cwd)


def hierarchical_probabilities(
    shortfall: np.ndarray, metric: str, holdout: float = HOLDOUT_FRACTION
) -> tuple[float, float, float]:
    """(P(worse), P(equivalent), P(better)) on a new dataset, from the [datasets x splits] shortfalls of splits that
    each hold out the share `holdout`."""
    from baycomp import HierarchicalTest

    # runs: baycomp takes rho = runs / splits (1/folds of a k-fold cross-validation); a split holds out the share
    # `holdout`, which makes rho that share. Independent replicates (holdout 0) have rho = 0, which baycomp cannot
    # take (it divides by runs): rho = 1e-12 stands for it, the same model to far below Stan's precision
    runs = shortfall.shape[1] * max(holdout, INDEPENDENT_RHO)
    shortfall = spread_constant_rows(shortfall, ROPES[metric][1], STAN["random_state"])
    with tempfile.TemporaryDirectory() as folder, _seeded_stan_in(folder, STAN["random_state"]):
        # baycomp's (left, rope, right) for y - x: here the shortfall, so right is "worse than the best"
        better, equivalent, worse = HierarchicalTest.probs(
            np.zeros_like(shortfall), shortfall, rope=ROPES[metric][1], runs=runs, chains=STAN["chains"],
            nsamples=STAN["nsamples"], random_state=STAN["random_state"],
        )  # fmt: skip
    return float(worse), float(equivalent), float(better)


def spread_constant_rows(shortfall: np.ndarray, rope: float, seed: int) -> np.ndarray:
    """The shortfalls with each dataset's row that has no spread (a method as accurate as the best on every seed)
    given one: its constant plus uniform draws within +- `rope`, mirrored so that they cancel (the middle one of an
    odd count the constant itself). baycomp 1.0.3 does the same around 0 for such a row, and fails where its count
    is odd (it mirrors the first half onto a longer second half); done here, the row keeps its mean and an odd count
    works, and baycomp leaves it alone."""
    spread, rng = shortfall.copy(), np.random.default_rng(seed)
    half = shortfall.shape[1] // 2
    for row in spread:
        if np.var(row) == 0:
            draws = rng.uniform(-rope, rope, half)
            row[:] = row[0] + np.concatenate([draws, np.zeros(shortfall.shape[1] % 2), -draws])
    return spread


def kept_comparisons(
    folder: Path,
    rankings: list[Ranking],
    selected: pd.DataFrame,
    sample: bool = False,
    holdout: float = HOLDOUT_FRACTION,
) -> dict[str, tuple[str, list[Comparison]]]:
    """{metric: (best, comparisons)} of each ranking over datasets (its best by average rank, as the signed-rank
    test's), from `folder`'s kept posteriors where their digest is current; the others sampled and kept where
    `sample`, else a `StalePosteriors` error that names the command that makes them."""
    path = folder / POSTERIORS_FILE
    kept = json.loads(path.read_text()) if path.is_file() else {}
    made, compared, stale = {}, {}, []
    for ranking in (r for r in rankings if r.unit == "dataset"):
        best, metric = str(ranking.average_ranks.index[0]), ranking.metric
        comparisons = []
        for method in [m for m in ranking.blocks.columns if m != best]:
            shortfall = shortfall_matrix(selected, metric, best, method)
            digest = input_digest(shortfall, metric, holdout)
            posterior = kept.get(metric, {}).get(method, {})
            if posterior.get("digest") != digest:
                if not sample:
                    stale.append(f"{metric} {method}")
                    continue
                worse, equivalent, better = hierarchical_probabilities(shortfall, metric, holdout)
                posterior = {"worse": worse, "equivalent": equivalent, "better": better,
                             "datasets": len(shortfall), "digest": digest}  # fmt: skip
            made.setdefault(metric, {})[method] = posterior
            comparisons.append(Comparison(method, posterior["worse"], posterior["equivalent"], posterior["better"],
                                          posterior["datasets"]))  # fmt: skip
        compared[metric] = (best, sorted(comparisons, key=lambda c: (-(c.equivalent + c.better), c.method)))
    if stale:
        raise StalePosteriors(
            f"{path}: no current hierarchical posterior for {', '.join(stale)} (the kept runs, their selection or the "
            "test's settings changed): `python -m bnnrepro.report.benchmark_document` samples and keeps them"
        )
    if sample and made != kept:
        path.write_text(json.dumps(made, indent=1, sort_keys=True) + "\n")
    return compared

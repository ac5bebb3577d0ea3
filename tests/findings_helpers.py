"""Helpers of the findings tests (tests/test_benchmark_findings.py, tests/test_findings_*.py), which check that the
numbers a kept folder's findings.yaml takes from its runs are what the runs make: the folder's kept files, the
findings' text (its `[[value NAME]]` fields computed) and the fragments it does not say (`KeptFolder`), kept metrics
with values changed for the controls (`scaled`), the project's checks on other metrics (`artifact_context`), and
counts, ordinals, lists and ranges as the prose writes them."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.fidelity.finding_values import with_values
from bnnrepro.files import read_json, read_yaml

NUMBER_WORDS = {
    **dict(enumerate(["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"])),
    50: "fifty",
}
ORDINAL_WORDS = dict(enumerate(["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                                "tenth", "eleventh", "twelfth"], start=1))  # fmt: skip
MACHINE = re.compile(r"\((?P<cpu>[^)]+)\), (?P<cpus>\d+) CPUs")
"""A provenance's machine: its CPU model (in parentheses) and its number of CPUs."""
CORES = re.compile(r"(\d+) CPUs")
PER_SET = re.compile(r"(\w+): (holds|contradicted|not resolved) \(mean difference ([-+\d.e]+) over (\d+)")
"""One data set's comparison in a claim's evidence: its status, mean difference and paired splits."""


@cache
def findings_text(folder: Path) -> str:
    """The folder's findings.yaml in one string, whitespace-normalised, its `[[value NAME]]` fields computed."""
    return " ".join(" ".join(with_values(text, folder).split()) for text in _texts(read_yaml(folder / "findings.yaml")))


def _texts(findings: object) -> Iterator[str]:
    """Every text of findings.yaml's (possibly nested) mapping, in order."""
    if isinstance(findings, dict):
        for value in findings.values():
            yield from _texts(value)
    else:
        yield str(findings)


@dataclass(frozen=True)
class KeptFolder:
    """A kept folder's files (read afresh on each call: a control may change them) and what its findings say."""

    path: Path

    def metrics(self) -> pd.DataFrame:
        """The kept metrics (metrics.csv), one row per run and metric."""
        return pd.read_csv(self.path / "metrics.csv")

    def claims(self) -> pd.DataFrame:
        """The checked claims (claims.csv), indexed by artifact."""
        return pd.read_csv(self.path / "claims.csv").set_index("artifact")

    def provenance(self) -> dict:
        """provenance.json."""
        return read_json(self.path / "provenance.json")

    def batches(self) -> pd.Series:
        """The batch (its number in provenance.json's batches) each run came in (batches.csv), indexed by run."""
        return pd.read_csv(self.path / "batches.csv").set_index("run")["batch"]

    def machine(self) -> dict[str, str]:
        """{cpu: the CPU model, cpus: how many} of the machine provenance.json records."""
        return MACHINE.search(self.provenance()["machine"]).groupdict()

    def budget(self, name: str) -> pd.DataFrame:
        """A budget experiment kept beside the runs (sensitivity_budget_<name>.csv, made by
        scripts/uci_budget_sensitivity.py), indexed by variant: test `nll`, `rmse` and their standard errors
        (`nll_se`, `rmse_se`) over the `splits`."""
        table = pd.read_csv(self.path / f"sensitivity_budget_{name}.csv", index_col="variant")
        table.columns = ["nll", "nll_se", "rmse", "rmse_se", "splits"]
        return table

    def vendor_rerun(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """An earlier batch's runs as one CPU vendor's machine made them and as another's made them again
        (vendor_rerun.csv: the kept metrics' rows of those runs, `value` the first machine's and `rerun` the
        second's): the two tidy metric tables."""
        both = pd.read_csv(self.path / "vendor_rerun.csv")
        return both.drop(columns="rerun"), both.drop(columns="value").rename(columns={"rerun": "value"})

    def missing_fragments(self, fragments: Iterable[str]) -> list[str]:
        """The fragments that the findings (as `findings_text` reads them) do not say."""
        text = findings_text(self.path)
        return [fragment for fragment in fragments if fragment not in text]


def cores(machine: str) -> str:
    """The number of CPUs a provenance's machine names ('16' of '..., 16 CPUs')."""
    return CORES.search(machine).group(1)


def scaled(metrics: pd.DataFrame, factor: float, **patterns: str) -> pd.DataFrame:
    """A control's runs: `metrics` with the values of the rows whose columns fully match `patterns` times `factor`."""
    rows = pd.Series(True, index=metrics.index)
    for column, pattern in patterns.items():
        rows &= metrics[column].astype(str).str.fullmatch(pattern)
    assert rows.any(), f"no kept row matches {patterns}: the control would change nothing"
    changed = metrics.copy()
    changed.loc[rows, "value"] *= factor
    return changed


@contextmanager
def artifact_context(study: str, metrics: pd.DataFrame) -> Iterator[ArtifactContext]:
    """The paper-scale ArtifactContext of `study` on `metrics` (written to a temporary metrics file, which it reads)."""
    with tempfile.TemporaryDirectory() as folder:
        metrics.to_csv(Path(folder) / "metrics.csv", index=False)
        yield ArtifactContext(study, "paper", Path(folder) / "metrics.csv")


def number_word(number: int) -> str:
    """A count as the prose writes it: 'no', 'five', 'ten', 'fifty'; digits where it has no word ('12')."""
    return NUMBER_WORDS.get(number, str(number))


def ordinal(number: int) -> str:
    """'1st', '2nd', '3rd', '11th', '20th', '21st'."""
    suffix = "th" if number % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def ordinal_word(number: int) -> str:
    """'first' to 'twelfth', then as `ordinal` ('13th')."""
    return ORDINAL_WORDS.get(number, ordinal(number))


def listed(items: Iterable[object]) -> str:
    """'a', 'a and b', 'a, b and c' (each item as str; '' for none)."""
    words = [str(item) for item in items]
    return f"{', '.join(words[:-1])} and {words[-1]}" if len(words) > 1 else "".join(words)


def span(values: Iterable[float], form: str = ".2f", sep: str = " to ") -> str:
    """'0.52 to 0.54': the least and the largest in `form` joined by `sep`; one number where both print the same."""
    values = list(values)
    low, high = format(min(values), form), format(max(values), form)
    return low if low == high else f"{low}{sep}{high}"

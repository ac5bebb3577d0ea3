"""Every job process the workflow starts freezes its imported objects before it works
(bnnrepro.pipeline.job_process)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bnnrepro.pipeline.sources import _module_file

JOB = re.escape("python -m bnnrepro.pipeline.job_server run")

ROOT = Path(__file__).parents[1]
RULES = [rules.read_text() for rules in (ROOT / "workflow" / "rules").glob("*.smk")]
ENTRY_POINTS = sorted({module for text in RULES for module in re.findall(JOB + r" (bnnrepro[\w.]*)", text)})


def main_block(module: str) -> list[str]:
    """The calls, in order, of the module's `if __name__ == "__main__":` block."""
    path = _module_file(f"{module}.__main__") or _module_file(module)  # `python -m package` runs its __main__
    tree = ast.parse(path.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    assert len(blocks) == 1, f"{path}: no `if __name__ == '__main__':` block"
    return [ast.unparse(statement.value.func) for statement in blocks[0].body if isinstance(statement, ast.Expr)]


def test_the_workflow_starts_jobs_through_entry_points() -> None:
    assert {"bnnrepro.train", "bnnrepro.evaluations", "bnnrepro.artifacts", "bnnrepro.data"} <= set(ENTRY_POINTS)


def test_every_job_starts_through_the_job_server() -> None:
    """Each `python -m` of the workflow goes through bnnrepro.pipeline.job_server, which forks it from the server."""
    assert {module for text in RULES for module in re.findall(r"\"python -m ([\w.]+)", text)} == {
        "bnnrepro.pipeline.job_server"
    }


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_an_entry_point_freezes_its_imports_before_main(module: str) -> None:
    assert main_block(module) == ["freeze_imported_objects", "main"]


def test_freezing_moves_the_living_objects_out_of_the_collectors_reach() -> None:
    script = (
        "import gc; from bnnrepro.pipeline.job_process import freeze_imported_objects\n"
        "before = gc.get_freeze_count(); freeze_imported_objects(); print(before, gc.get_freeze_count())\n"
    )
    before, after = map(int, subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                            check=True).stdout.split())  # fmt: skip
    assert before == 0 and after > 1000

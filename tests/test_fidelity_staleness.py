"""Code digests of committed paper-scale results (bnnrepro.fidelity.code_digest): every committed batch records one,
a digest follows exactly the files of a method's training, and the fidelity document marks the batches whose code
has changed since and the methods whose kept runs mix code."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bnnrepro.fidelity.code_digest import batch_runs, code_digests, tree_inputs
from bnnrepro.fidelity.collect import BATCHES_FILE, CLAIMS_FILE, METRICS_FILE, PROVENANCE_FILE
from bnnrepro.fidelity.kept_files import provenance_batches
from bnnrepro.fidelity.staleness import code_section, kept_batch_runs, rerun_command
from bnnrepro.paths import project_root
from bnnrepro.pipeline.studies import load_study

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "docs" / "fidelity" / "paper"
UDN, DUN = "udn/spirals/omega=20+lr=0.005/seed=0", "dun_10/spirals/omega=20+lr=0.005/seed=0"
FINITE = "finite_5/spirals/omega=20+lr=0.005/seed=0"
SDEBNN = "sdebnn/sdebnn_toy/lr=0.001/seed=0"


def test_every_committed_batch_records_the_code_digest_of_each_of_its_methods() -> None:
    """Each batch of docs/fidelity/paper/*/provenance.json has a sha256 per method and dataset its runs train."""
    folders = sorted(path.parent for path in PAPER.glob(f"*/{PROVENANCE_FILE}"))
    assert folders
    for folder in folders:
        provenance = json.loads((folder / PROVENANCE_FILE).read_text())
        for batch, runs in zip(provenance_batches(provenance), batch_runs(folder), strict=True):
            digests = batch.get("code_digests")
            assert digests, f"{folder.name}: the batch at {batch['commit']} has no code digest (backfill-digests)"
            # a batch whose runs a later batch replaced keeps the digests of what it trained
            assert {"/".join(run.split("/")[:2]) for run in runs} <= set(digests), folder.name
            assert all(re.fullmatch("[0-9a-f]{64}", digest) for digest in digests.values()), folder.name


def test_editing_a_file_of_one_methods_training_changes_its_digest_only(tmp_path: Path) -> None:
    """In a copy of the project, an edit to the UDN module (a file UDN's training runs and an SDE-BNN's does not)
    changes UDN's digest and not the SDE-BNN's; an edit to UDN's method config changes UDN's and not the finite
    network's. A tree that is not the current checkout is listed by its own code (another process)."""
    tree = tmp_path / "tree"
    for part in ("src", "config"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    inputs = tree_inputs(tree, "udn_spirals", "paper", [UDN, FINITE])
    assert inputs == tree_inputs(ROOT, "udn_spirals", "paper", [UDN, FINITE])  # the same files, listed in-process
    module, config = "src/bnnrepro/methods/depth_networks.py", "config/train/method/udn.yaml"
    assert module in inputs[UDN][1] and config in inputs[UDN][1] and config not in inputs[FINITE][1]
    assert module not in tree_inputs(tree, "sdebnn_toy", "paper", [SDEBNN])[SDEBNN][1]

    def digests() -> dict[str, str]:
        return {**code_digests(tree, "udn_spirals", "paper", [UDN, FINITE]),
                **code_digests(tree, "sdebnn_toy", "paper", [SDEBNN])}  # fmt: skip

    before = digests()
    (tree / module).write_text((tree / module).read_text() + "\n# an edit\n")
    after_module = digests()
    assert after_module["udn/spirals"] != before["udn/spirals"]
    assert after_module["sdebnn/sdebnn_toy"] == before["sdebnn/sdebnn_toy"]
    (tree / config).write_text((tree / config).read_text() + "\n# an edit\n")
    after_config = digests()
    assert after_config["udn/spirals"] != after_module["udn/spirals"]
    assert after_config["finite_5/spirals"] == after_module["finite_5/spirals"]


def collected(folder: Path, batches: list[tuple[str, dict, list[str]]]) -> Path:
    """A collected udn_spirals folder of `batches` (commit, code digests, run ids): provenance, batches.csv, and a
    metrics.csv and claims.csv with nothing to show."""
    folder.mkdir(parents=True)
    provenance = [
        {"study": "udn_spirals", "scale": "paper", "commit": commit, "machine": "x86_64", "collected": "2026-11-27",
         "runs": len(runs), "grid": "a part", "standin": False, "train_seconds": 1.0, "longest_run_seconds": 1.0,
         "wall_seconds": None, "code_digests": digests}
        for commit, digests, runs in batches
    ]  # fmt: skip
    top = {**provenance[0], "commit": ", ".join(b[0] for b in batches), "batches": provenance}
    (folder / PROVENANCE_FILE).write_text(json.dumps(top if len(batches) > 1 else provenance[0]))
    membership = [{"run": run, "batch": index} for index, (_, _, runs) in enumerate(batches) for run in runs]
    pd.DataFrame(membership).to_csv(folder / BATCHES_FILE, index=False)
    pd.DataFrame({"run": [row["run"] for row in membership]}).to_csv(folder / METRICS_FILE, index=False)
    pd.DataFrame(columns=["artifact", "claim", "holds", "evidence"]).to_csv(folder / CLAIMS_FILE, index=False)
    return folder


def test_the_document_marks_a_batch_whose_code_changed_and_names_the_mixing(tmp_path: Path) -> None:
    """A batch whose UDN digest is not the current code's is stale for UDN only, with the command that reruns its
    UDN runs; its UDN runs beside a current batch's are mixed code. Batches at the current code are said to be."""
    first, second = [UDN, DUN], [run.replace("seed=0", "seed=1") for run in (UDN, DUN)]
    now = code_digests(project_root(), "udn_spirals", "paper", [*first, *second])
    old = {**now, "udn/spirals": "0" * 64}
    folder = collected(
        tmp_path / "mixed" / "paper" / "udn_spirals", [("aaaaaaa", old, first), ("bbbbbbb", now, second)]
    )
    text = "\n".join(code_section(folder))
    assert "**Stale code:** the batch at `aaaaaaa`" in text and "`udn` on spirals" in text
    assert "`dun_10`" not in text.partition("**Mixed code")[0].partition("To rerun")[0]
    assert f"targets udn_spirals method=udn --batch aaaaaaa --kept {tmp_path}/mixed)" in text  # the stale runs
    assert f"collect . --studies udn_spirals --scale paper --add --out {tmp_path}/mixed\n" in text  # kept there
    assert "`bbbbbbb` was trained" not in text
    assert "**Mixed code: batches at `aaaaaaa` and `bbbbbbb`** trained `udn` on spirals" in text

    current = collected(tmp_path / "current" / "paper" / "udn_spirals", [("bbbbbbb", now, first)])
    assert code_section(current) == ["Code: every batch was trained by the current code (its code digest is the "
                                     "current one).", ""]  # fmt: skip


def test_a_batch_whose_runs_a_later_batch_replaced_is_not_stale_for_them(tmp_path: Path) -> None:
    """A batch that trained UDN by older code, whose UDN runs a later batch at the current code replaced: neither
    stale nor mixed for UDN (none of its UDN runs is kept); the control: with its UDN run still kept, it is both."""
    rerun = UDN.replace("seed=0", "seed=1")
    now = code_digests(project_root(), "udn_spirals", "paper", [UDN, DUN, rerun])
    old = {**now, "udn/spirals": "0" * 64}
    replaced = collected(
        tmp_path / "replaced" / "paper" / "udn_spirals", [("aaaaaaa", old, [DUN]), ("bbbbbbb", now, [UDN, rerun])]
    )
    assert code_section(replaced) == ["Code: every batch was trained by the current code (its code digest is the "
                                      "current one).", ""]  # fmt: skip
    kept = collected(
        tmp_path / "kept" / "paper" / "udn_spirals", [("aaaaaaa", old, [DUN, UDN]), ("bbbbbbb", now, [rerun])]
    )
    text = "\n".join(code_section(kept))
    assert "**Stale code:** the batch at `aaaaaaa`" in text and "**Mixed code" in text


def test_a_rerun_command_trains_the_batch_s_stale_runs_and_no_other(tmp_path: Path) -> None:
    """The rerun command of a stale batch selects its kept runs by commit (`targets --batch`), narrowed to the stale
    methods: at omega 28, seeds 3-4, the spiral study's sensitivity grid (depth_lr_ratio 1.0) has UDN runs that a
    filter on grid values alone would train too; here they are left out. An unknown commit is an error naming the
    kept ones."""
    from bnnrepro.fidelity.run_selection import selected_runs

    grid = load_study("udn_spirals").runs("paper")
    methods = {"udn", "dun_10", "finite_3", "finite_4", "finite_5"}
    batch = [run for run in grid if run.method in methods and run.seed in (3, 4) and "/omega=28+lr=0.005/" in run.id]
    assert {run.method for run in batch} == methods
    sensitivity = [run for run in grid if run.seed in (3, 4) and "omega=28+lr=0.005+depth_lr_ratio" in run.id]
    assert sensitivity, "the grid has runs a grid-value filter would also select"
    folder = collected(tmp_path / "paper" / "udn_spirals", [("aaaaaaa", {}, [run.id for run in batch])])
    stale = [run for run in batch if run.method == "udn"]
    command = rerun_command("udn_spirals", "paper", "docs/fidelity", "aaaaaaa", batch, stale)
    assert "targets udn_spirals method=udn --batch aaaaaaa)" in command
    kept = kept_batch_runs(folder, "aaaaaaa")
    assert {run.id for run in selected_runs(grid, {"method": {"udn"}}) if run.id in kept} == {r.id for r in stale}
    with pytest.raises(SystemExit, match="was trained at bbbbbbb; its batches are at aaaaaaa"):
        kept_batch_runs(folder, "bbbbbbb")
    command = [sys.executable, "-m", "bnnrepro.fidelity", "targets", "udn_spirals", "method=udn", "--batch", "0000000"]
    printed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert printed.returncode != 0 and "no batch in" in printed.stderr and "was trained at 0000000" in printed.stderr


def test_targets_take_their_filters_before_or_after_the_options(tmp_path: Path, monkeypatch, capsys) -> None:
    """`targets STUDY --batch C KEY=V` selects what `targets STUDY KEY=V --batch C` does (a printed rerun command may
    be edited either way); a filter without `=` or an unknown option is an error that names it."""
    from bnnrepro.fidelity.__main__ import main

    runs = [UDN, DUN, UDN.replace("seed=0", "seed=1")]
    collected(tmp_path / "paper" / "udn_spirals", [("aaaaaaa", {}, runs)])

    def printed(*words: str) -> list[str]:
        monkeypatch.setattr(sys, "argv", ["bnnrepro.fidelity", "targets", "udn_spirals", *words])
        main()
        return capsys.readouterr().out.split()

    before = printed("method=udn", "--batch", "aaaaaaa", "--kept", str(tmp_path))
    after = printed("--batch", "aaaaaaa", "--kept", str(tmp_path), "method=udn", "seed=0,1")
    assert before == after and len([file for file in after if file.endswith("metrics.json")]) == 2
    for wrong in ("methodudn", "--bogus"):
        with pytest.raises(SystemExit):
            printed("--batch", "aaaaaaa", wrong)
        assert f"unrecognized arguments: {wrong}" in capsys.readouterr().err

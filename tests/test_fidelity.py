"""The fidelity document: caption claims checked on constructed results (one that holds, one that does not), and
the document's counts against the collected files they come from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnnrepro.artifacts.claims import all_claims, check
from bnnrepro.artifacts.claims.thesis_bedl import hyperprior_worse_than_bedl, pac_improves_bedl
from bnnrepro.artifacts.claims.thesis_vbp_tables import vbp_competitive_on_uci
from bnnrepro.artifacts.claims.udn_spirals import (
    accuracy_falls_with_omega,
    dun_beats_each_finite_network,
    udn_best_at_every_omega,
    udn_deepens_with_omega,
)
from bnnrepro.artifacts.context import ArtifactContext
from bnnrepro.artifacts.registry import catalog
from bnnrepro.fidelity.collect import CLAIMS_FILE, PROVENANCE_FILE, TABLES, grid_part
from bnnrepro.fidelity.document import FINDINGS_FILE, NOT_RUN_FILE, fidelity_document
from bnnrepro.files import read_yaml
from bnnrepro.pipeline.studies import available_studies, load_study
from bnnrepro.report.paper_verdicts import paper_verdicts


def spiral_metrics(tmp_path: Path, accuracy: dict[str, list[float]], depth: list[float]) -> ArtifactContext:
    """A udn_spirals tidy CSV with five seeds at omegas 2 and 8 (lr 0.005): the given accuracies per method and the
    UDN's expected depths, each seed's off by a little noise (sd 0.003)."""
    rows, noise = [], iter(np.random.default_rng(0).normal(0, 0.003, 1000))
    for method, values in accuracy.items():
        for omega, value in zip((2, 8), values, strict=True):
            for seed in range(5):
                row = {"study": "udn_spirals", "run": f"{method}/{omega}/{seed}", "method": method,
                       "dataset": "spirals", "seed": seed, "standin": False, "omega": omega, "lr": 0.005}  # fmt: skip
                rows.append({**row, "metric": "test_accuracy", "value": value + next(noise)})
                if method == "udn":
                    rows.append({**row, "metric": "expected_depth", "value": depth[(2, 8).index(omega)] + next(noise)})
    path = tmp_path / "metrics.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return ArtifactContext("udn_spirals", "paper", path)


def test_udn_claims_hold_on_results_that_show_them(tmp_path: Path) -> None:
    context = spiral_metrics(
        tmp_path, {"udn": [0.999, 0.9], "finite_3": [0.98, 0.8], "dun_10": [0.985, 0.85]}, depth=[2.0, 5.0]
    )
    assert udn_best_at_every_omega(context).holds
    assert accuracy_falls_with_omega(context).holds
    assert udn_deepens_with_omega(context).holds
    assert dun_beats_each_finite_network(context).holds


def test_udn_claims_fail_on_results_that_contradict_them(tmp_path: Path) -> None:
    context = spiral_metrics(
        tmp_path, {"udn": [0.99, 0.8], "finite_3": [0.98, 0.9], "dun_10": [0.9, 0.85]}, depth=[5.0, 2.0]
    )
    best = udn_best_at_every_omega(context)
    assert best.holds is False and "omega=8 vs finite_3" in best.evidence.partition("Holm")[2]
    assert udn_deepens_with_omega(context).holds is False
    assert dun_beats_each_finite_network(context).holds is False


def test_a_claim_the_runs_cannot_show_is_not_checked(tmp_path: Path) -> None:
    """Runs of the UDN alone (a part of the grid) cannot show that it beats the others: not checked, not failed."""
    context = spiral_metrics(tmp_path, {"udn": [0.99, 0.9]}, depth=[2.0, 5.0])
    claim = next(c for c in all_claims() if c.check is udn_best_at_every_omega)
    outcome = check(claim, context)
    assert outcome.holds is None and "another model" in outcome.evidence


def uci_metrics(tmp_path: Path, study: str, nll: dict[tuple[str, str], list[float]]) -> ArtifactContext:
    """A thesis study's tidy CSV of test NLLs (original units) per (method, dataset) over splits 0, 1, ..."""
    rows = [
        {"study": study, "run": f"{method}/{dataset}/split={split}/seed=0", "method": method, "dataset": dataset,
         "split": split, "seed": 0, "metric": "test_nll_original", "value": value}
        for (method, dataset), values in nll.items()
        for split, value in enumerate(values)
    ]  # fmt: skip
    path = tmp_path / "metrics.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return ArtifactContext(study, "paper", path)


def test_the_thesis_uci_claims_hold_and_fail_on_constructed_tables(tmp_path: Path) -> None:
    competitive = {("vbp", "uci_boston"): [2.50, 2.60, 2.55, 2.58, 2.52],
                   ("varout", "uci_boston"): [2.52, 2.63, 2.56, 2.61, 2.53]}  # fmt: skip
    assert vbp_competitive_on_uci(uci_metrics(tmp_path, "thesis_vbp", competitive)).holds
    behind = {**competitive, ("vbp", "uci_yacht"): [2.0, 2.02, 2.01, 2.03, 2.0],
              ("varout", "uci_yacht"): [1.5, 1.51, 1.52, 1.52, 1.49]}  # fmt: skip
    outcome = vbp_competitive_on_uci(uci_metrics(tmp_path, "thesis_vbp", behind))
    assert not outcome.holds and "yacht: contradicted (mean difference -0.5" in outcome.evidence
    bedl = {("bedl", "uci_boston"): [2.5, 2.6, 2.55], ("bedl_pac", "uci_boston"): [2.4, 2.52, 2.44],
            ("bedl_hyper", "uci_boston"): [2.7, 2.81, 2.74], ("bedl", "uci_naval"): [-6.0, -6.1, -6.05],
            ("bedl_pac", "uci_naval"): [-5.0, -5.05, -5.1],
            ("bedl_hyper", "uci_naval"): [-3.0, -3.1, -2.95]}  # fmt: skip
    context = uci_metrics(tmp_path, "thesis_bedl", bedl)
    assert pac_improves_bedl(context).holds  # naval, where BEDL-PAC is behind, is the thesis' exception
    assert hyperprior_worse_than_bedl(context).holds
    bedl[("bedl_pac", "uci_boston")] = [2.7, 2.82, 2.76]
    bedl[("bedl_hyper", "uci_boston")] = [2.0, 2.1, 2.03]
    context = uci_metrics(tmp_path, "thesis_bedl", bedl)
    assert not pac_improves_bedl(context).holds and not hyperprior_worse_than_bedl(context).holds
    only_bedl = uci_metrics(tmp_path, "thesis_bedl", {("bedl", "uci_boston"): [2.5, 2.6]})
    assert check(next(c for c in all_claims() if c.check is pac_improves_bedl), only_bedl).holds is None


def test_every_claim_belongs_to_a_catalog_artifact() -> None:
    ids = {entry["id"] for entry in catalog()["artifacts"]}
    assert all_claims() and {claim.artifact_id for claim in all_claims()} <= ids


def explain_every_study(scale_folder: Path, leave_out: tuple[str, ...] = ()) -> None:
    """A not_run.yaml that says why each study but `leave_out` was not run (a reason naming the study)."""
    reasons = {study: f"no data for {study}" for study in available_studies() if study not in leave_out}
    scale_folder.mkdir(parents=True, exist_ok=True)
    (scale_folder / NOT_RUN_FILE).write_text(json.dumps(reasons))


def collected_study(folder: Path, holds: list[bool], within: list[bool]) -> None:
    (folder / TABLES).mkdir(parents=True)
    (folder / PROVENANCE_FILE).write_text(json.dumps({
        "study": folder.name, "scale": folder.parent.name, "commit": "abc1234", "machine": "x86_64, 2 CPUs",
        "collected": "2026-11-25", "runs": 3, "standin": False, "train_seconds": 360.0, "longest_run_seconds": 200.0,
        "wall_seconds": 300.0, "grid": "3 of the grid's 10 runs: omega in {2, 8}",
    }))  # fmt: skip
    pd.DataFrame({
        "artifact": "udn/fig3a", "claim": [f"claim {i}" for i in range(len(holds))], "holds": holds,
        "status": ["holds" if h else "contradicted" for h in holds], "evidence": "a | b",
    }).to_csv(folder / CLAIMS_FILE, index=False)  # fmt: skip
    pd.DataFrame({
        "row": [f"row {i}" for i in range(len(within))], "column": "average accuracy",
        "ours": 90.0 + np.arange(len(within)),
        "ours_error": 1.0, "n_runs": 5, "published": 91.0, "published_error": 0.5,
        "difference": -1.0, "verdict": ["agrees" if w else "differs" for w in within], "p_value": 0.5,
        "margin": 0.9, "p_equivalence": [0.01 if w else 0.5 for w in within],
        "coincides_with": None, "partial": None, "standin": False,
    }).to_csv(folder / TABLES / "udn_table1.csv", index=False)  # fmt: skip
    pd.DataFrame(columns=["study", "run", "method", "dataset", "metric", "value"]).to_csv(folder / "metrics.csv")


@pytest.mark.parametrize(("holds", "within"), [([True, False, True], [True, False]), ([False], [False, False])])
def test_the_document_counts_what_was_collected(tmp_path: Path, holds: list[bool], within: list[bool]) -> None:
    collected_study(tmp_path / "paper" / "udn_spirals", holds, within)
    explain_every_study(tmp_path / "paper")
    document = fidelity_document(tmp_path, "docs/fidelity")
    summary = next(line for line in document.splitlines() if line.startswith("| udn_spirals | paper |"))
    assert f"| {sum(holds)} / {len(holds) - sum(holds)} / 0 |" in summary
    assert f"| {sum(within)} / {len(within) - sum(within)} / 0 |" in summary
    assert "a \\| b" in document  # a '|' of the evidence does not end its cell
    assert "omega in {2, 8}" in document and "5 min wall for its batches" in document


def test_the_provenance_says_which_part_of_the_grid_ran() -> None:
    runs = load_study("udn_spirals").runs("paper", sensitivity=False)
    part = [run for run in runs if run.method == "udn" and run.seed == 0 and run.hparams[0][1] in (4, 16)]
    assert grid_part(runs, runs) == "the whole grid, 1700 runs"
    assert grid_part(part, runs) == (
        "4 of the grid's 1700 runs: method in {udn}; dataset in {spirals}; omega in {4, 16}; lr in {0.005, 0.01}; "
        "seed in {0}"
    )


def test_a_batch_is_described_by_the_runs_it_still_has_in_the_grid_as_it_is_now() -> None:
    """A first batch that was the whole grid at one seed, ten of whose runs a later batch (the samplers at five
    seeds) trained again: each batch is named by the runs it keeps against today's grid, not by what it was."""
    from bnnrepro.fidelity.collect import batches_grid

    runs = load_study("repulsive_toy").runs("paper")
    samplers = [run for run in runs if run.dataset in ("gaussian_target", "funnel_target")]
    first = [run for run in runs if run.seed == 0 and run not in samplers]
    membership = pd.DataFrame({"run": [run.id for run in first + samplers],
                               "batch": [0] * len(first) + [1] * len(samplers)})  # fmt: skip
    described = batches_grid(first + samplers, runs, membership)
    assert (len(first), len(samplers)) == (20, 50)
    assert described.startswith("70 of the grid's 150 runs, in 2 batches: 20 runs with method in {de, fsvgd, hmc")
    assert "dataset in {repulsive_2d, repulsive_toy}; num_particles in {100}; lr in {0.01}; seed in {0};" in described
    assert "; 50 runs with method in {de, kde_wgd, sge_wgd, ssge_wgd, svgd}; dataset in {funnel_target," in described
    assert "the whole grid" not in described  # the control: the first batch was the whole grid of its day


def test_a_thesis_table_is_found_by_its_file_stem_and_only_our_cells_are_counted(tmp_path: Path) -> None:
    """Table files are named by `artifact_stem` ('thesis/table3.1' -> thesis_table3_1.csv); a published-only cell (a
    cited row, or a data set this part of the grid did not run) is neither reproduced nor missed."""
    folder = tmp_path / "paper" / "thesis_vbp"
    (folder / TABLES).mkdir(parents=True)
    (folder / PROVENANCE_FILE).write_text(json.dumps({
        "study": "thesis_vbp", "scale": "paper", "commit": "abc1234", "machine": "x86_64, 2 CPUs",
        "collected": "2026-11-25", "runs": 2, "standin": False, "train_seconds": 60.0, "longest_run_seconds": 40.0,
        "grid": "2 of the grid's 450 runs",
    }))  # fmt: skip
    pd.DataFrame(columns=["artifact", "claim", "holds", "status", "evidence"]).to_csv(folder / CLAIMS_FILE, index=False)
    pd.DataFrame({
        "row": ["DVI", "VBP", "VBP"], "column": ["boston", "boston", "naval"], "ours": [None, -2.6, None],
        "ours_error": [None, 0.03, None], "n_runs": [None, 20, None], "published": [-2.58, -2.59, 5.79],
        "published_error": [0.04, 0.03, 0.07], "verdict": ["not judged", "agrees", "not judged"],
        "p_value": [None, 0.8, None], "margin": [None, 0.095, None], "p_equivalence": [None, 0.01, None],
        "coincides_with": None, "partial": None,
    }).to_csv(folder / TABLES / "thesis_table3_1.csv", index=False)  # fmt: skip
    pd.DataFrame(columns=["study", "run", "method", "dataset", "metric", "value"]).to_csv(folder / "metrics.csv")
    explain_every_study(folder.parent)
    document = fidelity_document(tmp_path, "docs/fidelity")
    assert "Cells (rows that coincide counted once): 1 agrees." in document
    assert "| thesis_vbp | paper | 2 |" in document


def test_every_study_without_results_says_why_and_the_document_lists_it(tmp_path: Path) -> None:
    """A study with no collected results, or without those of an artifact that has a published number or a checked
    claim, is listed with the reason not_run.yaml gives; the document refuses one it does not explain."""
    collected_study(tmp_path / "paper" / "udn_spirals", [True], [True])  # udn/fig3a and udn/table1 only
    explain_every_study(tmp_path / "paper", leave_out=("udn_images",))
    with pytest.raises(
        ValueError, match=r"not_run.yaml: study udn_images has no results .* for udn/fig4, .*udn_images"
    ):
        fidelity_document(tmp_path, "docs/fidelity")
    explain_every_study(tmp_path / "paper")
    lines = fidelity_document(tmp_path, "docs/fidelity").splitlines()
    rows = {line.split(" | ")[0]: line for line in lines[lines.index("## Not run at `paper` here") :] if "|" in line}
    assert rows["| udn_images"] == "| udn_images | udn/fig4, udn/table2, udn/fig7 | no data for udn_images |"
    assert "udn/fig3b" in rows["| udn_spirals"] and "udn/fig3a" not in rows["| udn_spirals"]  # fig3b has claims
    (tmp_path / "paper" / NOT_RUN_FILE).write_text(json.dumps({"udn_imagez": "typo"}))
    with pytest.raises(ValueError, match="udn_imagez are not studies"):
        fidelity_document(tmp_path, "docs/fidelity")


def test_the_committed_document_is_the_one_the_committed_results_make() -> None:
    """docs/fidelity.md is regenerated from docs/fidelity/ (every study there, or its reason for not being there)."""
    root = Path(__file__).resolve().parents[1]
    assert fidelity_document(root / "docs" / "fidelity", "docs/fidelity") == (root / "docs" / "fidelity.md").read_text()


def test_the_committed_paper_results_give_each_artifact_its_paper_verdict() -> None:
    """The report's paper-scale verdicts (bnnrepro.report.paper_verdicts) come from the committed results under the
    current rules: every artifact with a committed table or claim has one, and Table 5.1 (16 cells, 11 differing
    under the rule) differs."""
    root = Path(__file__).resolve().parents[1]
    verdicts = paper_verdicts(root)
    claimed = {a for f in (root / "docs/fidelity/paper").glob("*/claims.csv") for a in pd.read_csv(f)["artifact"]}
    assert claimed <= set(verdicts)
    assert verdicts["thesis/table5.1"]["verdict"] == "differs" and verdicts["thesis/table5.1"]["study"] == "thesis_bedl"


def test_targets_select_by_a_key_only_some_grids_have() -> None:
    """`targets` keeps the runs whose grid has every named key among the values given: the UCI split of thesis_bedl
    (its image runs have none) and the spiral study's sensitivity grid; a key no run has is an error naming them."""
    from bnnrepro.fidelity.run_selection import selected_runs

    bedl = selected_runs(load_study("thesis_bedl").runs("paper"), {"split": {"0"}, "epochs": {"1000"}})
    assert bedl and all("split=0+" in run.id and "epochs=1000" in run.id for run in bedl)
    spirals = selected_runs(load_study("udn_spirals").runs("paper"), {"depth_lr_ratio": {"1.0"}, "omega": {"26"}})
    assert len(spirals) == 5 and {run.method for run in spirals} == {"udn"}
    with pytest.raises(SystemExit, match="unknown grid key.s. nonsense; the runs have .*split"):
        selected_runs(load_study("thesis_bedl").runs("paper"), {"nonsense": {"1"}})


def test_the_runs_of_a_grown_grid_are_named_with_the_command_that_runs_them() -> None:
    """repulsive_toy's grid went from one seed to five after its first batch (a second ran the samplers at five): the
    document says which runs no kept batch has and `targets --missing` gives exactly those; a study whose batches
    cover its grid has no such paragraph."""
    from bnnrepro.fidelity.staleness import kept_run_ids, missing_runs_section

    root = Path(__file__).resolve().parents[1] / "docs/fidelity/paper"
    folder = root / "repulsive_toy"
    runs, kept = load_study("repulsive_toy").runs("paper"), kept_run_ids(folder)
    missing = [run for run in runs if run.id not in kept]
    assert len(missing) == 80 and {run.seed for run in missing} == {1, 2, 3, 4}
    assert {run.dataset for run in missing} == {"repulsive_toy", "repulsive_2d"}  # the samplers' five seeds are kept
    section = "\n".join(missing_runs_section(folder))
    assert "80 of the grid's 150 runs" in section and "targets repulsive_toy --missing" in section
    assert missing_runs_section(root / "sdebnn_latent") == []


def test_targets_include_the_run_files_the_study_s_figures_draw() -> None:
    """A rerun through `targets` makes what the study's artifacts read besides metrics.json (the evaluations, e.g.
    the toy paths of SDE-BNN Figs. 2 and 10, and the Lorenz forecast paths of thesis Figs. 6.5-6.9); a run no figure
    draws gives its metrics.json alone."""
    from bnnrepro.fidelity.__main__ import target_files

    toy = load_study("sdebnn_toy").runs("paper")
    files = target_files("sdebnn_toy", "paper", toy)
    assert sum(f.endswith("metrics.json") for f in files) == len(toy)
    assert sum(f.endswith("eval/toy_paths.npz") for f in files) == len(toy)
    bnsde = load_study("thesis_bnsde").runs("paper")
    forecasts = target_files("thesis_bnsde", "paper", bnsde)
    assert any(f.endswith("eval/forecast_paths.npz") for f in forecasts)
    black_box = [run for run in bnsde if run.method == "e_bayes" and run.dataset == "lorenz"][:1]
    assert target_files("thesis_bnsde", "paper", black_box) == [black_box[0].file("metrics.json")]


def test_an_average_over_fewer_omegas_than_the_paper_s_is_partial_and_never_agrees(tmp_path: Path) -> None:
    """udn/table1 averages each model over the paper's omegas. Runs at two of them make every row partial, and a
    partial Omega_3 row whose number would agree (87.5 +- 0.3 over 20 seeds, published 87.4 +- 0.6 over 5) is
    undetermined."""
    from bnnrepro.artifacts.render import compare_with_published, verdict_counts
    from bnnrepro.artifacts.udn_spirals import average_accuracy

    context = spiral_metrics(tmp_path, {"udn": [0.999, 0.9], "dun_10": [0.985, 0.85]}, depth=[2.0, 5.0])
    omegas = len(load_study("udn_spirals").grid_values("paper", "dataset.omega"))
    assert set(average_accuracy(context)["partial"]) == {f"2 of {omegas} omegas"}
    row = "Standard network Ω_3"
    ours = pd.DataFrame({"row": [row], "column": "average accuracy", "ours": 87.5, "ours_error": 0.3, "n_runs": 20})
    whole = compare_with_published("udn/table1", ours, False)
    assert whole.set_index("row").loc[row, "verdict"] == "agrees"  # the control: over every omega it agrees
    partial = compare_with_published("udn/table1", ours.assign(partial=f"2 of {omegas} omegas"), False)
    assert partial.set_index("row").loc[row, "verdict"] == "undetermined"
    assert verdict_counts(partial)["agrees"] == 0


def test_a_finding_s_verdict_fields_come_from_its_table_and_an_unknown_cell_is_refused(tmp_path: Path) -> None:
    from bnnrepro.fidelity.document import with_verdicts

    table = pd.DataFrame({
        "row": ["UDN", "DUN-10"], "column": "average accuracy", "ours": [91.3, 88.6], "published": [91.7, 90.5],
        "ours_error": [1.9, 3.2], "published_error": [1.1, 0.7], "verdict": ["undetermined", "differs"],
        "coincides_with": None,
    })  # fmt: skip
    text = "Counts: [[cells]]. DUN-10: [[cell DUN-10 | average accuracy]]."
    assert with_verdicts(text, table, tmp_path) == "Counts: 1 differs, 1 undetermined. DUN-10: differs."
    numbers = with_verdicts("UDN: [[numbers UDN | average accuracy]]", table, tmp_path)
    assert numbers == "UDN: 91.3 ± 1.9 against 91.7 ± 1.1"
    with pytest.raises(ValueError, match="names the cell UDN-10 | average accuracy"):
        with_verdicts("[[cell UDN-10 | average accuracy]]", table, tmp_path)


OPENING_VERDICTS = {"holds": {"holds"}, "contradicted": {"contradicted"}, "not resolved": {"not resolved"},
                    "does not hold": {"contradicted", "not resolved"}}  # fmt: skip


def test_every_claim_finding_that_opens_with_a_verdict_states_the_committed_one() -> None:
    """A finding written as "Contradicted over ..." (a verdict of the whole claim, not "Holds on boston") must not
    outlive a rule change or a batch that moves the claim (the UDN's Fig. 3a claim moved to not resolved under Holm's
    correction; its finding says so)."""
    root = Path(__file__).resolve().parents[1] / "docs" / "fidelity" / "paper"
    checked = 0
    for findings_file in root.glob(f"*/{FINDINGS_FILE}"):
        claims = pd.read_csv(findings_file.parent / CLAIMS_FILE).set_index("claim")["status"]
        for artifact, notes in read_yaml(findings_file).items():
            for claim, text in notes.items():
                opening = next((o for o in OPENING_VERDICTS if re.match(rf"{o}( over|:|\.|,| \()", text.lower())), None)
                if claim == "table" or opening is None:
                    continue
                assert claims[claim] in OPENING_VERDICTS[opening], (artifact, claim, claims[claim], text[:60])
                checked += 1
    assert checked >= 8

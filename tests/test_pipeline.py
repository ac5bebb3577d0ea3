"""The whole DAG at `smoke` scale in a temporary copy of the project (`built`, tests/conftest.py), run as users run it.

`dvc repro` (which runs Snakemake) builds reports/report.pdf with no network; right after, `snakemake -n` schedules
nothing and a second `dvc repro` does nothing; a changed study config, code file or config/train file reruns only
what it affects (tests/test_pipeline_reruns.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from pypdf import PdfReader

from bnnrepro import layout
from bnnrepro.artifacts.claims import CLAIM_STATUSES, claims_of
from bnnrepro.artifacts.declarations import declarations
from bnnrepro.artifacts.registry import catalog, implementations
from bnnrepro.artifacts.verdict_rules import CELL_VERDICTS
from bnnrepro.fidelity.collect import collect
from bnnrepro.fidelity.document import NOT_RUN_FILE, fidelity_document
from bnnrepro.fidelity.reproduce import record_reproduction, reproduce, reproduction_sentences
from bnnrepro.pipeline.studies import available_studies, load_study
from bnnrepro.report.page_layout import layout_problems
from bnnrepro.report.summary import summary_rows
from bnnrepro.report.typst_report import printed_figures
from bnnrepro.report.verdicts import MATCHES, NOT_COMPARABLE, VERDICTS, claim_status
from tests.conftest import run

REPRODUCED = {"udn/fig2", "udn/fig3a", "udn/fig3b", "udn/table1", "udn/fig5", "udn/fig6"} | {
    "udn/fig4", "udn/fig7", "udn/fig8", "udn/table2",
    "sdebnn/fig1", "sdebnn/fig2", "sdebnn/fig3", "sdebnn/fig4", "sdebnn/fig8", "sdebnn/fig10",
    "sdebnn/fig5", "sdebnn/fig13", "sdebnn/fig14", "sdebnn/fig15",
    "sdebnn/fig6a", "sdebnn/fig6b", "sdebnn/fig7", "sdebnn/fig9", "sdebnn/fig11", "sdebnn/fig12",
    "sdebnn/table1", "sdebnn/table2", "sdebnn/table3", "sdebnn/table4", "sdebnn/table5",
    "sdebnn_ws/fig1", "sdebnn_ws/fig2", "sdebnn_ws/fig3", "sdebnn_ws/fig4",
    "repulsive/fig1", "repulsive/fig2", "repulsive/fig3", "repulsive/figF.1", "repulsive/table1",
    "thesis/fig3.3", "thesis/fig3.4", "thesis/table3.1", "thesis/table3.2", "thesis/table3.3", "thesis/table3.4",
    "thesis/table5.1", "thesis/table5.2", "thesis/table5.3", "thesis/table5.4",
    "thesis/table4.1", "thesis/fig4.3", "thesis/table4.2", "thesis/fig4.4", "thesis/fig4.5", "thesis/fig4.6",
    "thesis/table4.3", "thesis/table4.4", "thesis/table4.5",
    "thesis/fig6.3", "thesis/fig6.4", "thesis/table6.1", "thesis/fig6.5", "thesis/fig6.6", "thesis/fig6.7",
    "thesis/fig6.8", "thesis/fig6.9", "thesis/table6.2", "thesis/table6.3",
}  # fmt: skip


def scheduled_jobs(dry_run_output: str) -> dict[str, int]:
    """Job counts per rule from the 'Job stats' table of `snakemake -n`."""
    stats = dry_run_output.split("Job stats:", 1)[-1]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M) if rule != "total"}


def test_the_jobs_ran_as_children_of_the_job_server(built: Path) -> None:
    """The workflow's jobs start as forks of its job server (bnnrepro.pipeline.job_server); only those that start before
    the server is ready (the first data jobs, a few seconds) run as plain processes, and none is refused."""
    log = (built.parent / "first_run_job_server.log").read_text()
    training = re.findall(r"^job (\d+): python -m bnnrepro\.train ", log, flags=re.M)
    runs = list((built / "results/smoke/runs").glob(f"**/{layout.RUN_METRICS}"))
    assert len(runs) > 100 and len(training) >= 0.9 * len(runs)
    assert "refused" not in log
    assert all(f"job {pid}: exit status 0" in log for pid in training)


def test_report_lists_every_artifact_with_its_status(built: Path) -> None:
    manifest = json.loads((built / "results/smoke/report_manifest.json").read_text())
    status = {a["id"]: a["status"] for a in manifest["artifacts"]}
    assert list(status) == [a["id"] for a in catalog()["artifacts"]]
    assert len(status) == 78
    assert {i for i, s in status.items() if s == "reproduced"} == REPRODUCED
    assert sum(s == "diagram" for s in status.values()) == 9
    assert sum(s == "not yet reproduced" for s in status.values()) == 78 - 9 - len(REPRODUCED)
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(built / "reports/report.pdf").pages).split())
    assert "udn/table1" in text and "Standard network Ω_3" in text
    # the report says "not yet reproduced" exactly where an artifact is (none left since the UDN's CIFAR/UCI studies)
    assert ("not yet reproduced" in text) == ("not yet reproduced" in status.values())


def test_every_page_of_the_report_reads_right(built: Path) -> None:
    """As rendered: no overprinted text, nothing off the page, every table's rows as wide as its header, no heading
    ending a page, no figure text under 7 pt (bnnrepro.report.page_layout; tests/test_page_layout.py has each
    problem's control, among them the summary table of 4f20520)."""
    manifest = built / "results/smoke/report_manifest.json"
    figures = printed_figures(manifest)
    drawn = [a for a in json.loads(manifest.read_text())["artifacts"] if "png" in a.get("files", {})]
    assert len(figures) == len(drawn) + 2  # and the own study's two
    assert [str(problem) for problem in layout_problems(built / "reports/report.pdf", figures)] == []


def test_every_drawn_artifact_has_a_verdict_and_the_summary_counts_the_manifests(built: Path) -> None:
    """At smoke scale nothing is comparable with the paper but what is computed from formulas alone (udn/fig5's
    bound, the thesis' closed forms): those are judged by their claims; the first page counts the manifest's."""
    manifest = json.loads((built / "results/smoke/report_manifest.json").read_text())
    drawn = [a for a in manifest["artifacts"] if a["status"] == "reproduced"]
    assert {a["verdict"] for a in drawn} <= set(VERDICTS) and all(a["verdict_reason"] for a in drawn)
    judged = {a["id"]: a["verdict"] for a in drawn if a["verdict"] != NOT_COMPARABLE}
    assert judged.get("udn/fig5") == MATCHES  # the theorem's bound, exact at every scale
    assert all(implementations()[i].uses == "nothing" for i in judged)
    claims = {a["id"]: a["claims"] for a in drawn}
    assert [c["claim"] for c in claims["udn/fig8"]] == [c.text for c in claims_of("udn/fig8")]
    rows = summary_rows(manifest)
    first_page = " ".join(PdfReader(built / "reports/report.pdf").pages[0].extract_text().split())
    verdicts = [sum(a["verdict"] == verdict for a in drawn) for verdict in VERDICTS]
    total = [sum(len(r.artifacts) for r in rows), len(drawn), *verdicts]
    checked = [s for s in (claim_status(c) for a in drawn for c in a["claims"]) if s != "not checked"]
    expected = f"Total {' '.join(map(str, total))} {checked.count('holds')} of {len(checked)}"
    assert first_page.startswith("bnnrepro: reproduction report Summary")
    assert expected.replace(" ", "") in first_page.replace(" ", "")  # the PDF's text drops some spaces between cells
    assert set(json.loads((built / "reports/checks/udn_table1.json").read_text())["cells"]) == set(CELL_VERDICTS)


def test_every_artifact_file_exists(built: Path) -> None:
    for stem in ("udn_fig2", "udn_fig3a", "udn_fig3b", "udn_fig5", "udn_fig6"):
        assert (built / f"reports/figures/{stem}.png").stat().st_size > 1000
        assert (built / f"reports/figures/{stem}.pdf").read_bytes().startswith(b"%PDF")
    for ext in ("csv", "md", "tex"):
        assert (built / f"reports/tables/udn_table1.{ext}").exists()


def test_table_puts_ours_beside_the_published_numbers(built: Path) -> None:
    table = pd.read_csv(built / "reports/tables/udn_table1.csv").set_index("row")
    assert table.loc["UDN", "published"] == 91.7 and table.loc["UDN", "published_error"] == 1.1
    ours = pd.read_csv(built / "results/smoke/udn_spirals/metrics.csv")
    udn = ours[(ours.method == "udn") & (ours.metric == "test_accuracy") & (ours.lr == 0.005)]
    assert table.loc["UDN", "ours"] == pytest.approx(100 * udn["value"].mean())
    assert table.loc["UDN", "difference"] == pytest.approx(table.loc["UDN", "ours"] - 91.7)
    assert pd.isna(table.loc["Standard network Ω_5", "ours"])  # not run at smoke scale: published only


def test_tidy_metrics_have_one_row_per_run_and_metric(built: Path) -> None:
    metrics = pd.read_csv(built / "results/smoke/udn_spirals/metrics.csv")
    assert {"study", "method", "dataset", "hparams", "seed", "metric", "value"} <= set(metrics.columns)
    assert metrics.groupby(["run", "metric"]).size().max() == 1
    assert metrics["run"].nunique() == 10  # smoke: 3 methods x 2 omegas + 2 methods x 2 omegas


def test_nothing_to_do_after_the_run(built: Path) -> None:
    assert "Nothing to be done" in run(["snakemake", "-n"], built).stdout
    second = run(["dvc", "repro"], built)
    assert "didn't change" in second.stdout or "up to date" in second.stdout
    assert "Running stage" not in second.stdout


@pytest.mark.slow
def test_results_pushed_to_a_dvc_remote_are_up_to_date_in_a_fresh_clone(
    built: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`dvc push` of the run; `git clone` + `dvc pull report` elsewhere: nothing to rerun, nothing to reproduce."""
    remote = tmp_path_factory.mktemp("dvc-remote")
    run(["dvc", "remote", "add", "-d", "store", str(remote)], built)
    run(["git", "add", "-A"], built)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results"], built)
    run(["dvc", "push"], built)
    clone = tmp_path_factory.mktemp("clone") / "project"
    run(["git", "clone", "-q", str(built), str(clone)], built)
    assert not (clone / "results").exists()
    run(["dvc", "pull", "report"], clone)
    assert (clone / "reports/report.pdf").read_bytes() == (built / "reports/report.pdf").read_bytes()
    dry_run = run(["snakemake", "-n"], clone)
    dry_run = dry_run.stdout + dry_run.stderr
    assert "A run restores the recorded time order" in dry_run  # the checkout had shuffled the times
    assert "Nothing to be done" in dry_run
    repro = run(["dvc", "repro"], clone).stdout
    assert "didn't change" in repro and "Running stage" not in repro
    status = run(["dvc", "status", "report"], clone).stdout
    assert "up to date" in status and "fetch@" not in status  # the datasets not fetched here are not listed
    # without Snakemake's records of the jobs, times alone would rerun everything: the content decides
    for source in (clone / "src/bnnrepro").glob("*.py"):
        source.touch()
    metrics = next((clone / "results/smoke").glob("*/metrics.csv"))
    os.utime(metrics, ns=(metrics.stat().st_mtime_ns - 86_400 * 10**9,) * 2)  # a day back
    assert "Nothing to be done" in run(["snakemake", "-n"], clone).stdout


@pytest.mark.slow
def test_dvc_runs_the_scale_a_user_asks_for(built: Path, tmp_path: Path) -> None:
    """`dvc repro` runs config/config.yaml's scale; `dvc exp run -S` sets it for a run: asking for the smoke scale
    after the smoke run schedules nothing, though the file says `default`."""
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    config_file = project / "config/config.yaml"
    config_file.write_text(config_file.read_text().replace("scale: smoke", "scale: default"))
    run(["git", "add", "-A"], project)  # `dvc exp run` works from a commit
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "default scale"], project)
    assert "train" in scheduled_jobs(run(["snakemake", "-n"], project).stdout)  # what a plain `dvc repro` would run
    result = run(["dvc", "exp", "run", "-S", "config/config.yaml:scale=smoke"], project)
    assert "didn't change" in result.stdout or "Nothing to be done" in result.stdout + result.stderr
    assert "rule train" not in result.stdout + result.stderr
    assert yaml.safe_load(config_file.read_text())["scale"] == "smoke"


OPEN_RECORDER = """
import os, sys
LOG = os.environ.get("BNNREPRO_OPEN_LOG")
if LOG and "--study" in sys.argv:  # a drawing job (python -m bnnrepro.artifacts --study ...)
    log = open(f"{LOG}/{sys.argv[sys.argv.index('--study') + 1]}.txt", "a", buffering=1)
    def record(event, args):
        if event == "open" and isinstance(args[0], str) and "w" not in str(args[1]):
            log.write(os.path.abspath(args[0]) + "\\n")
    sys.addaudithook(record)
"""


def declared_inputs(built: Path, dry_run: str, rule: str) -> set[str]:
    """The files a planned job of `rule` declares: its inputs, and the files its input lists name."""
    inputs = set()
    for line in re.search(rf"^(?:localrule|rule) {rule}:\n((?:\s+\w+: .*\n)*)", dry_run, re.M).group(1).splitlines():
        if line.strip().startswith("input: "):
            inputs |= set(line.strip().removeprefix("input: ").split(", "))
    for listing in [f for f in inputs if f.startswith(layout.INPUT_LISTS)]:
        inputs |= {line.split("  ", 1)[1] for line in (built / listing).read_text().splitlines()}
    return inputs


@pytest.mark.slow
def test_a_drawing_job_reads_no_file_it_does_not_declare(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every project file a drawing job opens (its study, the configs it composes, evaluation settings, the catalog)
    is among its declared inputs, so that an edit of it redraws; its Python code is declared by the import graph.
    Recorded by an audit hook in each drawing job (a `sitecustomize` on the module path, which makes the jobs plain
    processes), while the jobs run again."""
    hook, opened = tmp_path / "hook", tmp_path / "opened"
    hook.mkdir(), opened.mkdir()
    (hook / "sitecustomize.py").write_text(OPEN_RECORDER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("BNNREPRO_OPEN_LOG", str(opened))
    studies = yaml.safe_load((built / "config/config.yaml").read_text())["studies"]
    drawing = [f"draw_{name}" for name in studies if not load_study(name).is_own]  # own studies draw no artifact
    planned = run(["snakemake", "-n", "--forcerun", *drawing], built).stdout
    run(["snakemake", "--cores", "2", "--forcerun", *drawing], built)
    undeclared = {}
    for log in opened.glob("*.txt"):
        declared = declared_inputs(built, planned, f"draw_{log.stem}")
        read = {str(Path(p).relative_to(built)) for p in log.read_text().splitlines() if p.startswith(str(built))}
        project_files = {
            f for f in read if not f.endswith((".py", ".pyc")) and not f.startswith((".snakemake", "logs"))
        }
        undeclared[log.stem] = sorted(f for f in project_files - declared if (built / f).is_file())
    assert len(undeclared) == len(drawing) and not any(undeclared.values()), undeclared


def planned_run(study: str, run_id: str, scale: str = "smoke") -> str:
    """The folder of a study's run (its name has the digest of the run's method variant: bnnrepro.layout)."""
    return next(run.folder for run in load_study(study).runs(scale) if run.id == run_id)


SPIRALS_RUN = planned_run("udn_spirals", "udn/spirals/omega=2+lr=0.01/seed=0")


@contextmanager
def set_aside(path: Path) -> Iterator[Path]:
    """Move `path` away for the block (the test deletes or damages it), then put it back as it was, time included."""
    kept = path.with_name(f".kept-{path.name}")
    shutil.copy2(path, kept)
    try:
        yield path
    finally:
        os.replace(kept, path)


DELETED = [  # one of each kind: a run's metrics, a study's tidy metrics, a figure, a data file the runs read
    f"{SPIRALS_RUN}/metrics.json",
    "results/smoke/udn_spirals/metrics.csv",
    "reports/figures/udn_fig3a.png",
    "results/data/spirals/omega=12+seed=0.npz",
]


def test_deleted_results_are_rebuilt_with_what_reads_them(built: Path) -> None:
    """Snakemake remakes a missing file only where a job that runs needs it: the report, newer than everything, needs
    nothing, so each result is an input of `all` and a deleted one is planned again, then what reads it."""
    with ExitStack() as stack:
        for name in DELETED:
            stack.enter_context(set_aside(built / name)).unlink()
        planned = run(["snakemake", "-n"], built).stdout
    for name in DELETED:
        assert re.search(rf"reason: Missing output files: [^\n]*{re.escape(name)}", planned), name
    jobs = scheduled_jobs(planned)
    assert jobs["generate_data"] == 1 and jobs["train"] == 1 + 5  # the run without metrics; the five on that data
    assert jobs["aggregate"] == 1 and jobs["report"] == 1 and jobs["record_timestamps"] == 1


def test_a_truncated_data_file_stops_the_run_before_any_job(built: Path) -> None:
    """Its newer time would rerun the five runs that read it, deleting their results, only for each to fail on it."""
    data = "results/data/spirals/omega=2+seed=0.npz"
    with set_aside(built / data) as path:
        path.write_bytes(path.read_bytes()[:300])
        result = run(["snakemake", "--cores", "1"], built, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{data}: not a readable prepared dataset" in output and f"rm '{data}'" in output
    assert "rule train" not in output and (built / SPIRALS_RUN / "metrics.json").is_file()


def test_truncated_run_results_are_named_with_their_fix(built: Path, tmp_path: Path) -> None:
    """The aggregation names a truncated metrics.json; the record that DVC pushes refuses a truncated checkpoint.
    (In a copy: Snakemake deletes the outputs of the jobs that fail.)"""
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    damaged = [
        f"{SPIRALS_RUN}/metrics.json",
        f"{planned_run('sdebnn_toy', 'sdebnn/sdebnn_toy/lr=0.001/seed=0')}/checkpoint.pt",
    ]
    for name in damaged:
        (project / name).write_bytes((project / name).read_bytes()[:-40])
    result = run(["snakemake", "--cores", "1", "--keep-going"], project, check=False)
    output = result.stdout + result.stderr + "".join(log.read_text() for log in (project / "logs").rglob("*.log"))
    assert result.returncode != 0
    for name in damaged:
        assert f"{name}: not a readable" in output and f"Delete it (rm '{name}') and rerun snakemake" in output


def test_snakemake_html_report_builds(built: Path) -> None:
    run(["snakemake", "--report", "reports/report.html"], built)
    html = (built / "reports/report.html").read_text()
    assert "udn_fig3a" in html and "udn_table1" in html


TINY_STUDY = {
    "paper": "own",
    "description": "One UDN run on spirals, to run at another scale than the rest.",
    "grids": {"main": {"method": ["udn"], "dataset": ["spirals"], "dataset.omega": [2], "seed": [0]}},
    "method_variants": {"udn": {"method": "udn"}},
}


def planned_outputs(dry_run_output: str, rule: str) -> list[str]:
    """The output files of the planned jobs of one rule, from `snakemake -n`'s job listing."""
    return re.findall(rf"^(?:localrule|rule) {rule}:\n(?:\s+\w+: .*\n)*?\s+output: ([^\n,]+)", dry_run_output, re.M)


@pytest.mark.slow
def test_a_study_at_another_scale_joins_the_smoke_report_and_retrains_nothing_else(built: Path, tmp_path: Path) -> None:
    """`study_scales` runs chosen studies at `default` beside the smoke ones: only their runs are planned, under
    results/default/; a real run of one of them builds its results and the report, which names each artifact's and
    study's scale; dropping it again retrains nothing (every scale's runs are kept)."""
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    (project / "config/studies/tiny.yaml").write_text(yaml.safe_dump(TINY_STUDY))
    studies = [*yaml.safe_load((project / "config/config.yaml").read_text())["studies"], "tiny"]
    with_tiny = f"studies=[{','.join(studies)}]"

    planned = run(["snakemake", "-n", "--config", with_tiny, "study_scales={tiny: default, udn_spirals: default}"],
                  project).stdout  # fmt: skip
    trained = planned_outputs(planned, "train")
    spirals = {run.file(layout.RUN_METRICS) for run in load_study("udn_spirals").runs("default")}
    assert spirals < set(trained) and len(trained) == len(spirals) + 1  # and tiny's one run
    assert all(path.startswith("results/default/runs/") for path in trained)

    run(["snakemake", "--cores", "2", "--config", with_tiny, "study_scales={tiny: default}"], project)
    assert (project / layout.study_metrics_file("default", "tiny")).is_file()
    manifest = json.loads((project / "results/smoke/report_manifest.json").read_text())
    assert manifest["provenance"]["study_scales"] == {"tiny": "default"}
    command = shlex.join(["snakemake", "--cores", "2", "--config", with_tiny, "study_scales={tiny: default}"])
    assert manifest["provenance"]["command"] == command  # the real invocation, with the studies it ran
    assert {study["study"]: study["scale"] for study in manifest["own_studies"]} == {
        "tiny": "default",
        "uci_benchmark": "smoke",
    }
    assert {a["scale"] for a in manifest["artifacts"] if a["status"] == "reproduced"} == {"smoke"}

    back = scheduled_jobs(run(["snakemake", "-n"], project).stdout)
    assert "train" not in back and "evaluate" not in back


@pytest.mark.slow
def test_a_renamed_study_retrains_nothing_and_other_overrides_retrain_it(built: Path, tmp_path: Path) -> None:
    """A run's folder is named by its variant's overrides, not by its study (bnnrepro.layout): the UDN spirals study
    under another name plans no training or evaluation, only its aggregation and drawing; the same study with one
    more override in `common` (the control) plans every one of its runs again."""
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    studies = yaml.safe_load((project / "config/config.yaml").read_text())["studies"]
    renamed = f"studies=[{','.join('spirals_renamed' if s == 'udn_spirals' else s for s in studies)}]"
    spirals = yaml.safe_load((project / "config/studies/udn_spirals.yaml").read_text())

    (project / "config/studies/spirals_renamed.yaml").write_text(yaml.safe_dump(spirals))
    planned = scheduled_jobs(run(["snakemake", "-n", "--config", renamed], project).stdout)
    assert "train" not in planned and "evaluate" not in planned
    assert planned["aggregate"] == 1 and planned["draw_spirals_renamed"] == 1

    changed = {**spirals, "common": {**spirals.get("common", {}), "optim.weight_decay": 0.0}}
    (project / "config/studies/spirals_renamed.yaml").write_text(yaml.safe_dump(changed))
    planned = scheduled_jobs(run(["snakemake", "-n", "--config", renamed], project).stdout)
    assert planned["train"] == len(load_study("udn_spirals").runs("smoke"))


@pytest.mark.slow
def test_fidelity_collect_keeps_each_claim_and_table_of_a_built_tree(built: Path, tmp_path: Path) -> None:
    """`python -m bnnrepro.fidelity collect` on the built tree checks every registered claim of the studies'
    artifacts on the same files their draw functions read, and keeps their tables, from which the document is
    generated."""
    studies = ["udn_spirals", "repulsive_toy", "sdebnn_latent", "sdebnn_toy"]
    run(["python", "-m", "bnnrepro.fidelity", "collect", str(built), "--studies", *studies, "--scale", "smoke",
         "--out", str(tmp_path)], built)  # fmt: skip
    for study in studies:
        claims = pd.read_csv(tmp_path / "smoke" / study / "claims.csv")
        assert len(claims) == sum(len(claims_of(a)) for a in load_study(study).artifacts) > 0
        assert set(claims["status"]) <= set(CLAIM_STATUSES)
        unchecked = claims["status"] == "not checked"
        assert claims["evidence"][unchecked].str.startswith("not checked").all()  # e.g. smoke runs no HMC
        assert (claims["holds"].astype(str) == "True").eq(claims["status"] == "holds").all()
    assert (tmp_path / "smoke/udn_spirals/tables/udn_table1.csv").is_file()
    others = {study: "not collected in this test" for study in available_studies() if study not in studies}
    (tmp_path / "smoke" / NOT_RUN_FILE).write_text(yaml.safe_dump(others))
    document = fidelity_document(tmp_path, "docs/fidelity")
    assert "## udn_spirals at `smoke`" in document and "| thesis_bnsde | " in document  # the others, and why


def tree_of(built: Path, runs: list, folder: Path) -> Path:
    """A project folder holding only `runs` of the built tree (their run folders without checkpoints): one batch."""
    for kept in runs:
        run_folder = Path(kept.file(layout.RUN_METRICS)).parent
        shutil.copytree(built / run_folder, folder / run_folder, ignore=shutil.ignore_patterns("*.pt"))
    return folder


@pytest.mark.slow
def test_fidelity_collect_adds_a_later_batch_to_the_kept_results(built: Path, tmp_path: Path) -> None:
    """Two batches trained in two trees (thesis_bnsde: the Lorenz runs, then the CMU runs), the second collected with
    `add=True`, keep what one collect of both gives: the same metrics, tables and claims, with each batch's provenance.
    An artifact drawn from run files whose runs the two trees split is refused."""
    runs = load_study("thesis_bnsde").runs("smoke")
    lorenz = [one for one in runs if one.dataset != "cmu_mocap35"]
    cmu = [one for one in runs if one.dataset == "cmu_mocap35"]
    collect(built, "thesis_bnsde", "smoke", tmp_path / "whole")
    collect(tree_of(built, lorenz, tmp_path / "first"), "thesis_bnsde", "smoke", tmp_path / "batches", 60.0)
    collect(tree_of(built, cmu, tmp_path / "second"), "thesis_bnsde", "smoke", tmp_path / "batches", 30.0, add=True)

    whole, batches = tmp_path / "whole/smoke/thesis_bnsde", tmp_path / "batches/smoke/thesis_bnsde"
    by_row = ["run", "metric"]
    pd.testing.assert_frame_equal(
        pd.read_csv(batches / "metrics.csv").sort_values(by_row, ignore_index=True),
        pd.read_csv(whole / "metrics.csv").sort_values(by_row, ignore_index=True),
        check_like=True,
    )
    for name in ["claims.csv", *(f"tables/{path.name}" for path in (whole / "tables").glob("*.csv"))]:
        pd.testing.assert_frame_equal(pd.read_csv(batches / name), pd.read_csv(whole / name))
    provenance = json.loads((batches / "provenance.json").read_text())
    assert [batch["runs"] for batch in provenance["batches"]] == [len(lorenz), len(cmu)]
    collect(tmp_path / "second", "thesis_bnsde", "smoke", tmp_path / "batches", 30.0, add=True)  # again: replaced
    assert json.loads((batches / "provenance.json").read_text()) == provenance
    assert provenance["runs"] == len(runs) and provenance["wall_seconds"] == 90.0
    assert provenance["grid"].startswith(json.loads((whole / "provenance.json").read_text())["grid"] + ", in 2 batches")

    drawn = next(a for a in load_study("repulsive_toy").artifacts if declarations("smoke")[a].uses == "runs")
    read = [one for one in load_study("repulsive_toy").runs("smoke") if declarations("smoke")[drawn].reads(one)]
    assert len(read) >= 2
    collect(tree_of(built, read[:1], tmp_path / "third"), "repulsive_toy", "smoke", tmp_path / "split")
    with pytest.raises(ValueError, match="collect those batches from one tree"):
        collect(tree_of(built, read[1:], tmp_path / "fourth"), "repulsive_toy", "smoke", tmp_path / "split", add=True)


def test_reproduce_finds_the_kept_numbers_bit_for_bit_and_names_a_one_ulp_change(built: Path, tmp_path: Path) -> None:
    """The tree a study was collected from reproduces it exactly, its training seconds aside (they describe a run);
    one metric of one run moved by one unit in the last place is that run's difference (the negative control)."""
    collect(built, "udn_spirals", "smoke", tmp_path)
    folder = tmp_path / "smoke" / "udn_spirals"
    same = reproduce(built, "udn_spirals", "smoke", folder)
    assert same.runs == same.identical == len(load_study("udn_spirals").runs("smoke")) and not same.differences
    assert "cpu_arithmetic=portable" in same.rerun_on[0] and "AVX2 kernels" in same.rerun_on[0]
    assert same.spread and all(values["max"] == 0 for values in same.spread.values())
    record_reproduction(folder, same, built)
    reproduced = json.loads((folder / "provenance.json").read_text())["reproductions"][0]
    assert reproduced["identical"] == same.runs and "reproduced bit for bit" in reproduction_sentences(
        {"reproductions": [reproduced]})[0]  # fmt: skip
    assert set(pd.read_csv(folder / reproduced["metrics_file"])["metric"]) == set(same.rerun_metrics["metric"])
    kept = pd.read_csv(folder / "metrics.csv")
    timed = kept.index[kept["metric"] == "train_seconds"]
    kept.loc[timed, "value"] += 1.0
    moved = kept.index[(kept["metric"] != "train_seconds") & (kept["run"] == kept["run"].iloc[0])][0]
    kept.loc[moved, "value"] = np.nextafter(kept.loc[moved, "value"], np.inf)
    kept.to_csv(folder / "metrics.csv", index=False)
    changed = reproduce(built, "udn_spirals", "smoke", folder)
    assert changed.identical == changed.runs - 1
    assert [(d["run"], d["metric"]) for d in changed.differences] == [tuple(kept.loc[moved, ["run", "metric"]])]
    collect(built, "udn_spirals", "smoke", tmp_path)  # the runs kept afresh: the record of the earlier ones goes
    assert "reproductions" not in json.loads((folder / "provenance.json").read_text())
    assert not (folder / reproduced["metrics_file"]).exists()

"""Downloads: checksummed, mirror-aware, resumable, and never leaving a partial file behind.

Unit tests serve a small generated registry from a loopback HTTP server that can truncate, corrupt or
drop files; the slow test fetches the real UCI and mocap files of ../shared/datasets through the
workflow's real path (Snakemake -> `dvc repro data/dvc.yaml:fetch@<name>` -> the fetcher) and checks them against
the raw files.
"""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy.io import loadmat

from bnnrepro.data import registry, uci
from bnnrepro.data.fetch import DownloadError, fetch, md5sum, staging_folder
from tests.conftest import OFFLINE, SHARED, MirrorHandler, copy_project, needs_offline, run, served_download

UCI_FOLDERS = {
    "uci_boston": "bostonHousing", "uci_concrete": "concrete", "uci_energy": "energy", "uci_kin8nm": "kin8nm",
    "uci_naval": "naval-propulsion-plant", "uci_power": "power-plant", "uci_protein": "protein-tertiary-structure",
    "uci_wine": "wine-quality-red", "uci_yacht": "yacht",
}  # fmt: skip


@pytest.fixture
def toy_registry(registry_root, mirror) -> dict[str, bytes]:
    """A registry with one download `toy` of two files, served by the mirror."""
    files = {"a.bin": np.random.default_rng(0).bytes(50_000), "b.txt": b"1 2 3\n4 5 6\n"}
    registry_root({"toy": served_download(mirror[1], "toy", files, "m:f", "m:f")})
    return files


def assert_nothing_partial(out: Path) -> None:
    assert not out.exists()
    staging = out.with_name(f".{out.name}.partial")
    assert not list(staging.glob("*.part"))


def test_fetch_from_the_mirror_verifies_and_publishes(toy_registry, mirror, tmp_path: Path) -> None:
    base, _, server = mirror
    out = tmp_path / "raw" / "toy"
    fetch("toy", out, base)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == toy_registry
    assert server.requests == ["/toy/a.bin", "/toy/b.txt"]
    assert not out.with_name(".toy.partial").exists()


@pytest.mark.parametrize("fault", ["truncate", "corrupt"])
def test_a_bad_file_is_a_checksum_error_naming_everything(toy_registry, mirror, tmp_path: Path, fault: str) -> None:
    base, folder, server = mirror
    if fault == "truncate":
        server.truncate.add("a.bin")
    else:
        (folder / "toy/a.bin").write_bytes(b"x" * 50_000)
    out = tmp_path / "raw" / "toy"
    with pytest.raises(DownloadError) as error:
        fetch("toy", out, base)
    message = str(error.value)
    expected_md5 = hashlib.md5(toy_registry["a.bin"]).hexdigest()
    assert "dataset toy" in message and f"{base}toy/a.bin" in message
    assert f"expected md5 {expected_md5} (50000 bytes)" in message and "got md5 " in message
    assert "Rerun to retry" in message and "data_mirror" in message and "dvc pull data/dvc.yaml:fetch@toy" in message
    assert_nothing_partial(out)


def test_a_dropped_connection_is_an_error_and_leaves_nothing(toy_registry, mirror, tmp_path: Path) -> None:
    base, _, server = mirror
    server.drop.add("a.bin")
    out = tmp_path / "raw" / "toy"
    with pytest.raises(DownloadError, match=r"dataset toy: could not download .*toy/a.bin: .*Rerun to retry"):
        fetch("toy", out, base)
    assert_nothing_partial(out)


def test_no_server_is_an_error_that_says_how_to_fetch(toy_registry, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match=r"could not download http://127.0.0.1:9/never/a.bin.*data_mirror"):
        fetch("toy", tmp_path / "raw" / "toy", None)


def test_a_rerun_resumes_from_the_verified_files(toy_registry, mirror, tmp_path: Path) -> None:
    base, _, server = mirror
    server.truncate.add("b.txt")
    out = tmp_path / "raw" / "toy"
    kept = re.escape(str(staging_folder(out)))
    with pytest.raises(DownloadError, match=f"the files verified so far stay in {kept}/"):  # a.bin is there
        fetch("toy", out, base)
    server.truncate.clear()
    server.requests.clear()
    fetch("toy", out, base)
    assert server.requests == ["/toy/b.txt"]  # a.bin was verified before and is not downloaded again
    assert md5sum(out / "a.bin") == hashlib.md5(toy_registry["a.bin"]).hexdigest()


def test_every_registry_download_names_its_source_checksums_and_functions() -> None:
    entries = registry.downloads()
    assert {"mnist", "fashion_mnist", "cifar10", "cifar100", "cifar10c", "svhn", "cmu_mocap35"} <= {
        e.name for e in entries
    }
    assert {e.name for e in entries} >= set(UCI_FOLDERS)
    for entry in entries:
        assert entry.url.startswith(("http://", "https://")) and entry.licence and entry.format
        assert all(len(f.md5) == 32 for f in entry.files)
    assert len(registry.dataset("uci_protein").files) == 4 + 2 * 5  # data, features, target, n_splits + 5 splits


@pytest.mark.slow
@pytest.mark.skipif(
    not SHARED.exists(), reason="../shared/datasets (the real UCI and mocap files) is not beside the project"
)
def test_real_uci_and_mocap_through_dvc_from_a_loopback_mirror(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: MirrorHandler(*a, directory=str(SHARED)))
    server.requests, server.truncate, server.drop = [], set(), set()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        project = copy_project(tmp_path / "project")
        run(["git", "init", "-q"], project)
        run(["dvc", "init", "-q"], project)
        # The workflow's data at paper scale with no study and the real downloads as its datasets (rule `data`
        # prepares them; with no study there is no report to build).
        datasets = f"datasets=[{','.join([*UCI_FOLDERS, 'cmu_mocap35'])}]"
        config = ["scale=paper", f"data_mirror=http://127.0.0.1:{server.server_address[1]}/", "studies=[]", datasets]
        run(["snakemake", "--cores", "2", "data", "--config", *config], project)
        assert "Nothing to be done" in run(["snakemake", "-n", "data", "--config", *config], project).stdout
    finally:
        server.shutdown()
        server.server_close()

    for name, folder in UCI_FOLDERS.items():
        for file in registry.dataset(name).files:
            assert md5sum(project / f"data/raw/{name}/{file.name}") == md5sum(SHARED / f"uci/{folder}/{file.name}")
        raw = np.loadtxt(SHARED / f"uci/{folder}/data.txt")
        features = np.atleast_1d(np.loadtxt(SHARED / f"uci/{folder}/index_features.txt", dtype=int))
        target = int(np.loadtxt(SHARED / f"uci/{folder}/index_target.txt"))
        with np.load(project / f"results/data/{name}.npz") as prepared:
            assert prepared["x"].shape == (raw.shape[0], len(features))
            np.testing.assert_array_equal(prepared["x"][:5], raw[:5, features])
            np.testing.assert_array_equal(prepared["y"][:5], raw[:5, target])
            n_splits = int((SHARED / f"uci/{folder}/n_splits.txt").read_text())
            assert int(prepared["n_splits"]) == n_splits == (5 if name == "uci_protein" else 20)
            train = np.loadtxt(SHARED / f"uci/{folder}/index_train_{n_splits - 1}.txt", dtype=int)
            np.testing.assert_array_equal(prepared[f"train_index_{n_splits - 1}"], train)
    udn_sizes = {"uci_boston": [404, 51, 51], "uci_kin8nm": [6553, 819, 820], "uci_naval": [9547, 1193, 1194]}
    for name, sizes in udn_sizes.items():  # the UDN paper's 80/10/10 splits (App. B.4)
        config = {"split": 0, "protocol": "udn", "val_fraction": 0.0, "standardize": True}
        splits = uci.load(project / f"results/data/{name}.npz", config)
        assert [len(splits.y(s)) for s in ("train", "val", "test")] == sizes
    mat = loadmat(SHARED / "cmu_mocap/mocap35.mat")
    with np.load(project / "results/data/cmu_mocap35.npz") as prepared:
        for split, key in (("train", "Xtr"), ("val", "Xval"), ("test", "Xtest")):
            np.testing.assert_allclose(prepared[f"x_{split}"], mat[key].astype(np.float32))
    stages = (f"data/dvc.yaml:fetch@{name}" for name in [*UCI_FOLDERS, "cmu_mocap35"])
    status = run(["dvc", "status", *stages], project).stdout
    assert "changed" not in status and "up to date" in status


@pytest.mark.slow
@needs_offline
def test_default_scale_data_needs_no_network(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    run([*OFFLINE, "snakemake", "--cores", "2", "data", "--config", "scale=default"], project)
    with np.load(project / "results/data/uci_yacht-standin.npz") as standin:
        assert standin["x"].shape == (308, 6)
    assert not (project / "data/raw").exists()


@needs_offline
def test_paper_scale_without_network_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    result = run(
        # no study: composing every study's paper grid would only cost a minute
        [*OFFLINE, "snakemake", "--cores", "1", "results/data/uci_yacht.npz", "--config", "scale=paper", "studies=[]"],
        project,
        check=False,
    )
    assert result.returncode != 0
    log = (project / "logs/data/fetch_uci_yacht.log").read_text()
    assert "dataset uci_yacht: could not download https://raw.githubusercontent.com/" in log
    assert "data_mirror" in log and "dvc pull data/dvc.yaml:fetch@uci_yacht" in log
    assert not (project / "results/data/uci_yacht.npz").exists() and not (project / "data/raw/uci_yacht").exists()

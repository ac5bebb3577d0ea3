"""CMU motion capture, subject 35 walking (the ODE2VAE preprocessing), thesis Table 6.2 (MOCAP-2).

The MATLAB file holds Xtr [16, 300, 50], Xval [3, 300, 50], Xtest [4, 300, 50]: sequences of 300
frames of 50 joint angles. A forecasting model reads the sequences as both inputs and targets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from scipy.io import loadmat

from bnnrepro.data.registry import Download
from bnnrepro.data.spec import Splits
from bnnrepro.files import write_atomic

SPLIT_KEYS = {"train": "Xtr", "val": "Xval", "test": "Xtest"}
SHAPES = {"train": (16, 300, 50), "val": (3, 300, 50), "test": (4, 300, 50)}


def prepare(raw: Path, out: Path) -> None:
    """mocap35.mat -> .npz with x_<split> float32 sequences (scipy's loadmat runs no code)."""
    mat = loadmat(raw / "mocap35.mat")
    arrays = {f"x_{split}": np.asarray(mat[key], dtype=np.float32) for split, key in SPLIT_KEYS.items()}
    for split, shape in SHAPES.items():
        if arrays[f"x_{split}"].shape != shape:
            raise ValueError(
                f"{raw / 'mocap35.mat'}: {SPLIT_KEYS[split]} has shape {arrays[f'x_{split}'].shape}, expected {shape}"
            )
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))


def load(path: Path, config: Mapping) -> Splits:
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    arrays.update({f"y_{split}": arrays[f"x_{split}"] for split in SPLIT_KEYS})
    return Splits(arrays)


def standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Offline stand-in: smooth periodic 'gaits' with per-joint phases and noise, in the real shapes."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, (n, frames, joints) in SHAPES.items():
        t = np.arange(frames)[None, :, None] / 25.0
        phase, amplitude = rng.uniform(0, 2 * np.pi, (n, 1, joints)), rng.uniform(0.2, 1.0, (1, 1, joints))
        arrays[f"x_{split}"] = (
            amplitude * np.sin(2 * np.pi * t + phase) + 0.05 * rng.normal(size=(n, frames, joints))
        ).astype(np.float32)
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))

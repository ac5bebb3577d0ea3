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
from bnnrepro.files import read_npz, write_atomic

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
    arrays = read_npz(path, what="prepared dataset")
    arrays.update({f"y_{split}": arrays[f"x_{split}"] for split in SPLIT_KEYS})
    return Splits(arrays)


STANDIN_OSCILLATORS = 3  # a 6-D latent state (cos and sin of each), the thesis' latent size (§6.4.3)
STANDIN_DT = 0.1  # the ODE2VAE preprocessing's frame spacing
STANDIN_NOISE = 0.05


def standin(entry: Download, out: Path, seed: int = 0) -> None:
    """Offline stand-in, in the real shapes: one subject's "gait" as three undamped oscillators with common
    frequencies (periods of 10 to 30 frames) and per-walk phases and amplitudes, a 6-D latent state (cos and sin of
    each) mapped to 50 joint angles by one fixed random linear map, plus noise of std 0.05. A 6-D latent BNSDE can
    represent it, as the thesis' model the real walks (§6.4.3)."""
    rng = np.random.default_rng(seed)
    frequencies = 2 * np.pi / (STANDIN_DT * rng.uniform(10, 30, STANDIN_OSCILLATORS))
    mixing = rng.normal(0.0, 1.0 / np.sqrt(2 * STANDIN_OSCILLATORS), (2 * STANDIN_OSCILLATORS, SHAPES["train"][2]))
    arrays = {}
    for split, (n, frames, joints) in SHAPES.items():
        t = STANDIN_DT * np.arange(frames)[None, :, None]
        phase = rng.uniform(0, 2 * np.pi, (n, 1, STANDIN_OSCILLATORS))
        amplitude = rng.uniform(0.5, 1.5, (n, 1, STANDIN_OSCILLATORS))
        angle = frequencies * t + phase
        latent = np.concatenate([amplitude * np.cos(angle), amplitude * np.sin(angle)], axis=-1)
        frames_ = latent @ mixing + STANDIN_NOISE * rng.normal(size=(n, frames, joints))
        arrays[f"x_{split}"] = frames_.astype(np.float32)
    write_atomic(out, lambda tmp: np.savez(tmp, **arrays))

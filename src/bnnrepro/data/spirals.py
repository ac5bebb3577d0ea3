"""The spiral datasets D(omega) of Nazaret & Blei (2022), App. B.1, eqs. 15-18.

t ~ U[0, 1], u = sqrt(t), y ~ U{-1, 1},
x ~ N([y u cos(omega u pi/2), y u sin(omega u pi/2)], 0.02) (0.02 read as a standard deviation).
Labels are returned as 0 (y = -1) and 1 (y = +1).
"""

from __future__ import annotations

import numpy as np

from bnnrepro.data.spec import Splits


def sample_spiral(omega: float, n: int, noise_std: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n points of D(omega): inputs [n, 2] (float32) and labels [n] (int64)."""
    u = np.sqrt(rng.uniform(0.0, 1.0, n))
    branch = rng.choice([-1.0, 1.0], size=n)
    angle = omega * u * np.pi / 2
    mean = np.stack([branch * u * np.cos(angle), branch * u * np.sin(angle)], axis=1)
    x = mean + rng.normal(0.0, noise_std, size=mean.shape)
    return x.astype(np.float32), (branch > 0).astype(np.int64)


def generate(omega: float, seed: int, n_train: int, n_val: int, n_test: int, noise_std: float) -> Splits:
    """Independent train, validation and test samples of D(omega) ("each 1024 samples", App. B.1).

    One generator seeded by (seed, omega) draws the three splits in turn, so that every run and
    every omega gets its own sample (the authors' code, `ANazaret/unbounded-depth-neural-networks`
    `experiments/load_data.py`, reuses seed s+1 for run s's validation set and run s+1's training set; we do not).
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, int(round(omega * 1000))]))
    arrays = {}
    for split, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        arrays[f"x_{split}"], arrays[f"y_{split}"] = sample_spiral(omega, n, noise_std, rng)
    return Splits(arrays)

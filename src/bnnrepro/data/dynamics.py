"""Simulated dynamical systems of Haussmann's thesis, Ch. 6 (BNSDE with empirical PAC-Bayes, Sec. 6.4).

Both systems are integrated with Euler-Maruyama (EM) with a constant diagonal diffusion G:
    h_{k+1} = h_k + f(h_k) dt + G sqrt(dt) eps_k,   eps_k ~ N(0, I)  (thesis Sec. 2.6 / 6.2.2),
recording every `subsample`-th state, starting with h_0 itself (as the authors' `generate_stochastic_lorenz`
does: it stores the state before each update, so the last recorded observation is at step n_steps - subsample).

Data layout written by the generators (both systems):
    x_<split>: float32 [n_chunks, chunk_len, P + 1], consecutive observation windows, the last column the time t
               (the authors' Lorenz code, `manuelhaussmann/bnsde` `lorenz.py`, stores t as a 4th column; we do
               the same for Lotka-Volterra);
    y_<split>: float32 [n_chunks, chunk_len, P], the states of the same window (x_<split>[..., :P]).
A forecasting model starts from the window's first observation x[:, 0, :P], simulates on the time grid x[:, :, -1]
and is scored against y over the whole window (bnsde's training and test protocol: start from the observed y_0,
Gaussian likelihood / MSE over all steps of the window). Windows are contiguous and do not overlap, so the train
(or test) windows concatenated in order give the observed series of that split, e.g. for the forecast figures.
No validation split is used by the thesis or its code: x_val/y_val are empty [0, chunk_len, .] unless asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bnnrepro.data.spec import Splits

# Lotka-Volterra, thesis Sec. 6.4.1: dx = (t1 x - t2 x y) dt + 0.2 dB, dy = (-t3 y + t4 x y) dt + 0.3 dB.
LV_THETA = (2.0, 1.0, 4.0, 1.0)
LV_DIFFUSION = (0.2, 0.3)
# Not stated in the thesis: one unit of prey above the coexistence equilibrium (t3/t4, t1/t2) = (4, 2).
LV_X0 = (5.0, 2.0)

# Stochastic Lorenz, thesis Sec. 6.4.2 (zeta, kappa, rho there): the thesis prints rho = 2.67; the code
# (`manuelhaussmann/bnsde`, `lorenz.py`) uses 8/3.
LORENZ_SIGMA, LORENZ_RHO, LORENZ_BETA = 10.0, 28.0, 8.0 / 3.0
LORENZ_X0 = (1.0, 1.0, 28.0)

_LV_TAG = 0x4C56  # separate random streams per dataset for the same seed
_LORENZ_TAG = 0x4C5A


def lotka_volterra_drift(x, y, theta: Sequence[float] = LV_THETA):
    """f(x, y) of the Lotka-Volterra SDE, on floats or arrays of the same shape."""
    t1, t2, t3, t4 = theta
    return t1 * x - t2 * x * y, -t3 * y + t4 * x * y


def lorenz_drift(x, y, z, sigma: float = LORENZ_SIGMA, rho: float = LORENZ_RHO, beta: float = LORENZ_BETA):
    """f(x, y, z) of the Lorenz system, on floats or arrays of the same shape."""
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def euler_maruyama(
    drift: Callable,
    x0: Sequence[float] | np.ndarray,
    diffusion: Sequence[float],
    dt: float,
    n_steps: int,
    subsample: int,
    rng: np.random.Generator | None,
) -> tuple[np.ndarray, np.ndarray]:
    """EM with constant diagonal diffusion; returns (t [n_obs], states [n_obs, *x0.shape]), n_obs = n_steps/subsample.

    x0 is [P] (one path) or [B, P] (B independent paths, vectorised over B). Observation k is the state after
    k * subsample steps. The time loop runs over Python floats for one path (about 1 us per step) and over
    numpy arrays of shape [B] for B paths; both consume the noise in the same order, so path b of a batch equals
    the single path with the same noise. rng may be None only if the diffusion is zero (then this is Euler).
    """
    x0 = np.asarray(x0, dtype=np.float64)
    p = x0.shape[-1]
    diffusion = np.broadcast_to(np.asarray(diffusion, dtype=np.float64), (p,))
    if n_steps % subsample:
        raise ValueError(f"n_steps={n_steps} is not a multiple of subsample={subsample}")
    noisy = bool(np.any(diffusion != 0))
    if noisy and rng is None:
        raise ValueError("a noisy simulation needs a random generator")
    n_obs = n_steps // subsample
    batch = x0.shape[:-1]
    out = np.empty((n_obs, *batch, p))
    scale = (np.sqrt(dt) * diffusion).reshape((1, p) + (1,) * len(batch))
    state = list(x0.tolist()) if not batch else [x0[..., i].copy() for i in range(p)]
    zeros = np.zeros((subsample, p, *batch))
    for k in range(n_obs):
        out[k] = np.stack(state, axis=-1) if batch else state
        if k == n_obs - 1:
            break
        increments = rng.standard_normal((subsample, p, *batch)) * scale if noisy else zeros
        for step in increments.tolist() if not batch else increments:
            f = drift(*state)
            state = [s + fs * dt + ds for s, fs, ds in zip(state, f, step, strict=True)]
    return np.arange(n_obs) * (subsample * dt), out


def simulate_lotka_volterra(
    rng: np.random.Generator | None,
    x0: Sequence[float] | np.ndarray = LV_X0,
    theta: Sequence[float] = LV_THETA,
    diffusion: Sequence[float] = LV_DIFFUSION,
    dt: float = 1e-4,
    n_steps: int = 100_000,
    subsample: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Stochastic Lotka-Volterra by EM (thesis Sec. 6.4.1 and 6.6.3): 1e5 steps of 1e-4 on [0, 10], every 100th kept.

    The two Wiener processes are taken as independent (diagonal G; the thesis writes d beta_t in both lines).
    diffusion=(0, 0) gives the deterministic Euler path. Returns (t [n_obs], states [n_obs, *x0.shape]).
    """
    return euler_maruyama(lambda x, y: lotka_volterra_drift(x, y, theta), x0, diffusion, dt, n_steps, subsample, rng)


def simulate_stochastic_lorenz(
    rng: np.random.Generator | None,
    x0: Sequence[float] | np.ndarray = LORENZ_X0,
    sigma: float = LORENZ_SIGMA,
    rho: float = LORENZ_RHO,
    beta: float = LORENZ_BETA,
    diffusion: float = 1.0,
    dt: float = 1e-4,
    n_steps: int = 200_000,
    subsample: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Stochastic Lorenz by EM (thesis Sec. 6.4.2 and 6.6.3): 2e5 steps of 1e-4 from (1, 1, 28), every 100th kept.

    Unit diffusion on each coordinate (G = I). The authors' code (`manuelhaussmann/bnsde`, `lorenz.py`) runs 1e6 steps
    (t in [0, 100), 10,000 observations); the thesis 2e5 (2000 observations), which is the default here.
    Returns (t [n_obs], states [n_obs, *x0.shape]).
    """
    return euler_maruyama(
        lambda x, y, z: lorenz_drift(x, y, z, sigma, rho, beta), x0, (diffusion,) * 3, dt, n_steps, subsample, rng
    )


def chunk(series: np.ndarray, start: int, n_chunks: int, length: int) -> np.ndarray:
    """n_chunks consecutive, non-overlapping windows of `length` rows of series, the first at row `start`."""
    stop = start + n_chunks * length
    if start < 0 or stop > len(series):
        raise ValueError(f"windows [{start}, {stop}) do not fit in a series of {len(series)} observations")
    return series[start:stop].reshape(n_chunks, length, *series.shape[1:])


def _check_layout(layout: dict[str, tuple[int, int, int]], n_obs: int) -> None:
    """Windows {split: (start, n_chunks, length)} must fit in n_obs observations and not overlap."""
    spans = sorted((start, start + n * length, split) for split, (start, n, length) in layout.items() if n > 0)
    for start, stop, split in spans:
        if start < 0 or stop > n_obs:
            raise ValueError(f"{split} windows [{start}, {stop}) do not fit in a series of {n_obs} observations")
    for (_, stop, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < stop:
            raise ValueError(f"the {a} and {b} windows overlap")


def _windows(t: np.ndarray, states: np.ndarray, layout: dict[str, tuple[int, int, int]]) -> dict[str, np.ndarray]:
    """x/y arrays of each split from {split: (start, n_chunks, length)} (checked by _check_layout)."""
    series = np.concatenate([states, t[:, None]], axis=1)
    arrays = {}
    for split, (start, n, length) in layout.items():
        x = chunk(series, start, n, length) if n > 0 else np.empty((0, length, series.shape[1]))
        arrays[f"x_{split}"] = x.astype(np.float32)
        arrays[f"y_{split}"] = x[..., :-1].astype(np.float32)
    return arrays


def generate_lotka_volterra(
    seed: int,
    n_steps: int = 100_000,
    dt: float = 1e-4,
    subsample: int = 100,
    n_train: int = 10,
    train_len: int = 50,
    n_test: int = 10,
    test_len: int = 50,
    test_start: int = 500,
    x0_prey: float = LV_X0[0],
    x0_predator: float = LV_X0[1],
    max_tries: int = 100,
) -> Splits:
    """Lotka-Volterra data of thesis Fig. 6.3 (Sec. 6.4.1, details Sec. 6.6.3).

    One EM path of 1e5 steps (dt = 1e-4, [0, 10]) with theta = (2, 1, 4, 1) and diffusion (0.2, 0.3), every
    100th state kept: 1000 observations at spacing 0.01. "The first 500 observations on [0, 5]" are the training
    data, the rest the test data, each "split into ten sequences of length 50" (Sec. 6.6.3). The main text's
    "observed on the interval t = [0, 1]" conflicts with this; we follow Sec. 6.6.3 (as the catalog does).
    Choices where the thesis is silent:
      * initial state (5, 2) (x0_prey, x0_predator);
      * independent noise on x and y;
      * additive noise can push a population below zero, after which the EM path diverges (from (5, 2) this
        happens to about 1-2% of paths on [0, 10]). We condition on positivity: a path with a non-positive or
        non-finite observation is discarded and redrawn from the next random stream (at most max_tries times).
    Layout of x/y (time as the last column of x): see the module docstring.
    """
    layout = {
        "train": (0, n_train, train_len),
        "val": (0, 0, train_len),
        "test": (test_start, n_test, test_len),
    }
    _check_layout(layout, n_steps // subsample)
    streams = np.random.SeedSequence([seed, _LV_TAG]).spawn(max_tries)
    for stream in streams:
        t, states = simulate_lotka_volterra(
            np.random.default_rng(stream), (x0_prey, x0_predator), dt=dt, n_steps=n_steps, subsample=subsample
        )
        if np.all(np.isfinite(states)) and np.all(states > 0):
            return Splits(_windows(t, states, layout))
    raise RuntimeError(f"no positive Lotka-Volterra path in {max_tries} tries (seed {seed})")


def generate_lorenz(
    seed: int,
    n_steps: int = 200_000,
    dt: float = 1e-4,
    subsample: int = 100,
    n_train: int = 20,
    train_len: int = 24,
    n_test: int = 20,
    test_len: int = 24,
    test_start: int = 1000,
    n_val: int = 0,
    val_len: int = 24,
    series_seed: int | None = None,
) -> Splits:
    """Stochastic Lorenz data of thesis Fig. 6.4-6.9 and Table 6.1 (Sec. 6.4.2, details Sec. 6.6.3).

    One EM path of 2e5 steps (dt = 1e-4) from (1, 1, 28), sigma = 10, rho = 28, beta = 8/3 (the thesis prints
    2.67; the code uses 8/3), unit diffusion, every 100th state kept: 2000 observations at spacing 0.01 (t < 20).
    "The first 1000 constitute the training data, the second 1000 the test observations" (Fig. 6.4), and "we split
    the training and the test data into 20 sequences of length 24" (Sec. 6.4.2; Table 6.1 is a "24-step ahead"
    error). Sec. 6.6.3 instead says 20 x 50 for training and 10 x 100 for testing: set train_len=50, n_test=10,
    test_len=100. Choices where the thesis is silent:
      * the 20 x 24 windows are the first 480 observations of each half: train from t = 0 (as the authors' code,
        `manuelhaussmann/bnsde` `lorenz.py`), test from observation test_start = 1000, t = 10 (the thesis's test half;
        the code instead takes the 480 observations right after the training ones, i.e. test_start=480, on a 1e6-step,
        10,000-observation path: n_steps=1_000_000);
      * no validation data in the thesis or code; n_val > 0 windows are taken right after the training windows;
      * series_seed: the seed of the simulated path when given (then every run seed gets the same series, and the
        repetitions of a study differ only in their models' draws), else the run's seed.
    Layout of x/y (time as the last column of x): see the module docstring.
    """
    layout = {
        "train": (0, n_train, train_len),
        "val": (n_train * train_len, n_val, val_len),
        "test": (test_start, n_test, test_len),
    }
    _check_layout(layout, n_steps // subsample)
    rng = np.random.default_rng(np.random.SeedSequence([seed if series_seed is None else series_seed, _LORENZ_TAG]))
    t, states = simulate_stochastic_lorenz(rng, dt=dt, n_steps=n_steps, subsample=subsample)
    return Splits(_windows(t, states, layout))

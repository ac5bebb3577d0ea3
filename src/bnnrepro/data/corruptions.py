"""Offline STAND-IN for CIFAR-10-C (Hendrycks & Dietterich 2019, https://github.com/hendrycks/robustness): numpy/scipy
approximations of its 19 corruptions at severities 1..5 (`corrupt`), applied to the CIFAR-10 stand-in's test
images (`cifar10c_like`, written by `bnnrepro.data.images.cifar10c_standin`). Not the published corruptions: numbers
obtained on them are not comparable with the papers (SDE-BNN §5.2.2, Figs. 7, 9).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import fft, ndimage, signal

from bnnrepro.data.formats import CIFAR10C_CORRUPTIONS, CIFAR10C_SEVERITIES
from bnnrepro.data.standins import to_uint8

# Each corruption maps float images [N, H, W, 3] in [0, 1], a severity index s (0..4) and a generator to
# corrupted images. Random draws never depend on s, so for one seed a higher severity scales the same
# noise, blur direction or overlay: the change from the clean image grows with the severity.
# The noises, gaussian_blur, zoom_blur, brightness, contrast, pixelate, fog's formula and jpeg_compression's
# qualities use CIFAR-10-C's parameters (make_cifar_c.py); the others are approximations with our own
# parameters, chosen to grow monotonically: snow, frost, fog and spatter overlays are procedural (no frost
# photographs, mud only), glass/defocus/motion blur and elastic_transform (no affine part) have their own
# scales, and saturate only oversaturates.


def _blur(x: np.ndarray, sigma: float) -> np.ndarray:
    return ndimage.gaussian_filter(x, sigma=(0, sigma, sigma, 0), mode="reflect")


def _bilinear(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x [N, H, W, C] sampled at fractional (rows, cols) [N, H, W], edges clamped."""
    n, h, w, _ = x.shape
    rows, cols = np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)
    r0, c0 = np.floor(rows).astype(np.intp), np.floor(cols).astype(np.intp)
    r1, c1 = np.minimum(r0 + 1, h - 1), np.minimum(c0 + 1, w - 1)
    wr, wc = (rows - r0)[..., None], (cols - c0)[..., None]
    i = np.arange(n)[:, None, None]
    top = x[i, r0, c0] * (1 - wc) + x[i, r0, c1] * wc
    bottom = x[i, r1, c0] * (1 - wc) + x[i, r1, c1] * wc
    return top * (1 - wr) + bottom * wr


def _grid(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices [H, W] (float32) of the pixels of images x [N, H, W, C]."""
    rows, cols = np.meshgrid(np.arange(x.shape[1]), np.arange(x.shape[2]), indexing="ij")
    return rows.astype(np.float32), cols.astype(np.float32)


def _smooth_field(rng: np.random.Generator, shape: tuple[int, int, int], sigma: float) -> np.ndarray:
    """Gaussian-smoothed white noise [N, H, W], standardised per image (mean 0, std 1)."""
    field = ndimage.gaussian_filter(rng.standard_normal(shape).astype(np.float32), (0, sigma, sigma), mode="wrap")
    field -= field.mean(axis=(1, 2), keepdims=True)
    return field / (field.std(axis=(1, 2), keepdims=True) + 1e-6)


def _plasma(rng: np.random.Generator, shape: tuple[int, int, int], sigmas: tuple[float, ...]) -> np.ndarray:
    """A fractal-like field in [0, 1]: octaves of smooth noise at scales `sigmas`, weighted 1, 0.6, 0.36, ..."""
    field = sum(0.6**k * _smooth_field(rng, shape, sigma) for k, sigma in enumerate(sigmas))
    low, high = field.min(axis=(1, 2), keepdims=True), field.max(axis=(1, 2), keepdims=True)
    return (field - low) / (high - low + 1e-6)


def _streaks(x: np.ndarray, length: float, angle: np.ndarray) -> np.ndarray:
    """One-sided motion blur: the mean of copies shifted 0..length pixels along `angle` [N] (radians).

    Pixel r takes the mean of x(r + t u), u = (sin, cos)(angle), t in [0, length]: a per-image kernel with
    bilinear weights at offsets t u, applied by FFT convolution to the edge-padded images.
    """
    n, reach = len(x), int(np.ceil(length))
    steps = np.linspace(0, length, max(2, int(round(2 * length)) + 1))
    direction = np.stack([np.sin(angle), np.cos(angle)], axis=1)  # [N, 2]
    # a convolution (not correlation) kernel of side 2 reach + 3: offset o sits at index reach + 1 - o
    position = reach + 1 - steps[None, :, None] * direction[:, None, :]  # [N, steps, 2]
    low = np.floor(position).astype(np.intp)
    frac = position - low
    kernel = np.zeros((n, 2 * reach + 3, 2 * reach + 3))
    images = np.broadcast_to(np.arange(n)[:, None], low.shape[:2])
    for dr, dc in ((0, 0), (0, 1), (1, 0), (1, 1)):
        weight = np.abs(1 - dr - frac[..., 0]) * np.abs(1 - dc - frac[..., 1]) / len(steps)
        np.add.at(kernel, (images, low[..., 0] + dr, low[..., 1] + dc), weight)
    padded = np.pad(x, ((0, 0), (reach + 1,) * 2, (reach + 1,) * 2, (0, 0)), mode="edge")
    return signal.fftconvolve(padded, kernel[..., None].astype(x.dtype), mode="valid", axes=(1, 2))


def _luma(x: np.ndarray) -> np.ndarray:
    return (x @ np.array([0.299, 0.587, 0.114], dtype=x.dtype))[..., None]


def _gaussian_noise(x, s, rng):
    return x + (0.04, 0.06, 0.08, 0.09, 0.10)[s] * rng.standard_normal(x.shape, dtype=np.float32)


def _shot_noise(x, s, rng):
    photons = (500, 250, 100, 75, 50)[s]
    return rng.poisson(x * photons) / photons


def _impulse_noise(x, s, rng):
    hit = rng.random(x.shape) < (0.01, 0.02, 0.03, 0.05, 0.07)[s]
    salt = rng.random(x.shape) < 0.5
    return np.where(hit, salt.astype(x.dtype), x)


def _speckle_noise(x, s, rng):
    return x + x * (0.06, 0.10, 0.12, 0.16, 0.20)[s] * rng.standard_normal(x.shape, dtype=np.float32)


def _gaussian_blur(x, s, rng):
    return _blur(x, (0.4, 0.6, 0.7, 0.8, 1.0)[s])


def _defocus_blur(x, s, rng):
    """A disk kernel (radius 0.5..3 pixels), then a Gaussian of sigma 0.5 against aliasing."""
    radius = (0.5, 1.0, 1.5, 2.0, 3.0)[s]
    support = np.arange(-int(np.ceil(radius)), int(np.ceil(radius)) + 1)
    disk = (support[:, None] ** 2 + support[None, :] ** 2 <= radius**2).astype(np.float32)
    return _blur(ndimage.convolve(x, (disk / disk.sum())[None, :, :, None], mode="reflect"), 0.5)


def _glass_blur(x, s, rng):
    """Blur, twice move every pixel by a random offset of up to 0.3..0.9 pixels each way, blur again."""
    sigma, reach = (0.4, 0.45, 0.5, 0.55, 0.6)[s], (0.3, 0.45, 0.6, 0.75, 0.9)[s]
    moves = rng.uniform(-1, 1, (2, 2, *x.shape[:3])).astype(np.float32)
    rows, cols = _grid(x)
    x = _blur(x, sigma)
    for dy, dx in moves:
        x = _bilinear(x, rows + reach * dy, cols + reach * dx)
    return _blur(x, sigma)


def _motion_blur(x, s, rng):
    angle = np.deg2rad(rng.uniform(-45, 45, len(x)))
    return _streaks(x, (2.0, 3.0, 4.0, 5.0, 6.0)[s], angle)


def _zoom_blur(x, s, rng):
    """The mean of the image and copies zoomed about the centre by 1.01, 1.02, ... (CIFAR-10-C's factors)."""
    zooms = np.arange(1.01, (1.06, 1.11, 1.16, 1.21, 1.26)[s], 0.01)
    copies = (_separable(x, *(_zoom_matrix(side, z) for side in x.shape[1:3])) for z in zooms)
    return (x + sum(copies)) / (len(zooms) + 1)


def _zoom_matrix(side: int, zoom: float) -> np.ndarray:
    """[side, side]: row i interpolates linearly at (i - centre) / zoom + centre."""
    centre = (side - 1) / 2
    position = (np.arange(side) - centre) / zoom + centre
    low = np.floor(position).astype(np.intp)
    frac = position - low
    matrix = np.zeros((side, side), np.float32)
    matrix[np.arange(side), low] = 1 - frac
    matrix[np.arange(side), np.minimum(low + 1, side - 1)] += frac
    return matrix


def _separable(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x [N, H, W, C] mapped by a matrix on its rows [H', H] and one on its columns [W', W]."""
    n, h, w, c = x.shape
    mapped_rows = np.matmul(rows, x.reshape(n, h, w * c)).reshape(n, len(rows), w, c)
    return np.matmul(cols, mapped_rows)


def _snow(x, s, rng):
    """Whiten towards a brightened grey image (CIFAR-10-C's weights), then add flakes streaked along a random
    direction."""
    density, strength = (0.01, 0.015, 0.02, 0.03, 0.04)[s], (1.5, 1.75, 2.0, 2.5, 3.0)[s]
    keep = (0.95, 0.9, 0.9, 0.85, 0.8)[s]
    flakes = (rng.random((*x.shape[:3], 1)) < density).astype(np.float32)
    streaks = _streaks(flakes, 2.0, np.deg2rad(rng.uniform(-135, -45, len(x))))
    whitened = keep * x + (1 - keep) * np.maximum(x, 1.5 * _luma(x) + 0.5)
    return whitened + strength * streaks


def _frost(x, s, rng):
    """Blend with a procedural bluish-white ice texture (fine-scale plasma)."""
    ice = 0.55 + 0.45 * _plasma(rng, x.shape[:3], (2.0, 1.0, 0.5))[..., None]
    weight = (0.2, 0.3, 0.4, 0.45, 0.5)[s]
    return (1 - weight) * x + weight * ice * np.array([0.85, 0.92, 1.0], dtype=np.float32)


def _fog(x, s, rng):
    """CIFAR-10-C's fog: add c times a plasma field, rescale by max / (max + c); here a smooth-noise plasma."""
    c = (0.2, 0.5, 0.75, 1.0, 1.5)[s]
    top = x.max(axis=(1, 2, 3), keepdims=True)
    return (x + c * _plasma(rng, x.shape[:3], (8.0, 4.0, 2.0, 1.0))[..., None]) * top / (top + c)


def _spatter(x, s, rng):
    """Mud blotches (CIFAR-10-C's mud colour) where smooth noise exceeds a threshold that falls with severity."""
    field = _smooth_field(rng, x.shape[:3], 1.5)[..., None]
    blotch = np.clip((field - (2.0, 1.75, 1.5, 1.25, 1.0)[s]) / 0.3, 0, 1) * (0.6, 0.65, 0.7, 0.75, 0.8)[s]
    mud = np.array([63, 42, 20], dtype=np.float32) / 255
    return x + blotch * (mud - x)


def _brightness(x, s, rng):
    return x + (0.05, 0.1, 0.15, 0.2, 0.3)[s]


def _contrast(x, s, rng):
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return (x - mean) * (0.75, 0.5, 0.4, 0.3, 0.15)[s] + mean


def _saturate(x, s, rng):
    """Scale the chroma (RGB minus luma) by 1.5..10 (CIFAR-10-C's severities 1-2 desaturate instead)."""
    luma = _luma(x)
    return luma + (1.5, 2.0, 3.0, 5.0, 10.0)[s] * (x - luma)


def _elastic_transform(x, s, rng):
    """Resample along a smooth random displacement field (sigma 3 pixels) of RMS 0.5..2.5 pixels."""
    rows, cols = _grid(x)
    dy, dx = (_smooth_field(rng, x.shape[:3], 3.0) for _ in range(2))
    alpha = (0.5, 1.0, 1.5, 2.0, 2.5)[s]
    return _bilinear(x, rows + alpha * dy, cols + alpha * dx)


def _pixelate(x, s, rng):
    """Box-downsample to a fraction (0.95..0.65) of the side, then upsample by nearest neighbour."""
    return _separable(x, *(_block_mean(side, (0.95, 0.9, 0.85, 0.75, 0.65)[s]) for side in x.shape[1:3]))


def _block_mean(side: int, fraction: float) -> np.ndarray:
    """[side, side]: row i averages the pixels of i's block when `side` pixels are cut into side * fraction blocks."""
    block = np.arange(side) * max(1, int(side * fraction)) // side
    same = (block[:, None] == block[None, :]).astype(np.float32)
    return same / same.sum(axis=1, keepdims=True)


# JPEG quantisation tables, ITU-T T.81 Annex K.1 (luminance) and K.2 (chrominance)
JPEG_LUMA = np.array(
    [
        [16, 11, 10, 16, 24, 40, 51, 61],
        [12, 12, 14, 19, 26, 58, 60, 55],
        [14, 13, 16, 24, 40, 57, 69, 56],
        [14, 17, 22, 29, 51, 87, 80, 62],
        [18, 22, 37, 56, 68, 109, 103, 77],
        [24, 35, 55, 64, 81, 104, 113, 92],
        [49, 64, 78, 87, 103, 121, 120, 101],
        [72, 92, 95, 98, 112, 100, 103, 99],
    ]
)
JPEG_CHROMA = np.full((8, 8), 99)
JPEG_CHROMA[:4, :4] = [[17, 18, 24, 47], [18, 21, 26, 66], [24, 26, 56, 99], [47, 66, 99, 99]]
RGB_TO_YCBCR = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])


def _jpeg_compression(x, s, rng):
    """JPEG at quality 80..40 (CIFAR-10-C's): YCbCr, 8x8 block DCT, IJG-scaled quantisation; no chroma subsampling."""
    quality = (80, 65, 58, 50, 40)[s]
    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    tables = [np.clip(np.floor((table * scale + 50) / 100), 1, 255) for table in (JPEG_LUMA, JPEG_CHROMA, JPEG_CHROMA)]
    step = np.stack(tables, axis=-1)[None, None, :, None, :, :]  # [1, 1, 8, 1, 8, 3]
    n, h, w, _ = x.shape
    ycc = (x.astype(np.float64) * 255 - 128) @ RGB_TO_YCBCR.T  # level shift: Y - 128 (Cb, Cr are centred)
    ycc = np.pad(ycc, ((0, 0), (0, -h % 8), (0, -w % 8), (0, 0)), mode="edge")
    blocks = ycc.reshape(n, ycc.shape[1] // 8, 8, ycc.shape[2] // 8, 8, 3)
    coefficients = fft.dctn(blocks, axes=(2, 4), norm="ortho")
    blocks = fft.idctn(np.round(coefficients / step) * step, axes=(2, 4), norm="ortho")
    ycc = blocks.reshape(ycc.shape)[:, :h, :w]
    return ((ycc @ np.linalg.inv(RGB_TO_YCBCR).T + 128) / 255).astype(np.float32)


CORRUPTIONS: dict[str, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]] = {
    "gaussian_noise": _gaussian_noise,
    "shot_noise": _shot_noise,
    "impulse_noise": _impulse_noise,
    "defocus_blur": _defocus_blur,
    "glass_blur": _glass_blur,
    "motion_blur": _motion_blur,
    "zoom_blur": _zoom_blur,
    "snow": _snow,
    "frost": _frost,
    "fog": _fog,
    "brightness": _brightness,
    "contrast": _contrast,
    "elastic_transform": _elastic_transform,
    "pixelate": _pixelate,
    "jpeg_compression": _jpeg_compression,
    "speckle_noise": _speckle_noise,
    "gaussian_blur": _gaussian_blur,
    "spatter": _spatter,
    "saturate": _saturate,
}


def corrupt(images: np.ndarray, corruption: str, severity: int, seed: int) -> np.ndarray:
    """STAND-IN for a CIFAR-10-C corruption (a CIFAR10C_CORRUPTIONS name), severity 1..5: uint8 [N, H, W, 3] in and out.

    For one seed the change grows with the severity (the same random draws, scaled).
    """
    if corruption not in CORRUPTIONS:
        raise ValueError(f"unknown corruption {corruption!r}; known: {', '.join(CORRUPTIONS)}")
    if severity not in range(1, CIFAR10C_SEVERITIES + 1):
        raise ValueError(f"severity must be 1..{CIFAR10C_SEVERITIES}, got {severity}")
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[3] != 3:
        raise ValueError(f"images should be uint8 [N, H, W, 3], got {images.dtype} {list(images.shape)}")
    x = images.astype(np.float32) / 255
    return to_uint8(CORRUPTIONS[corruption](x, severity - 1, np.random.default_rng(seed)))


def cifar10c_like(clean_images: np.ndarray, labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """STAND-IN for CIFAR-10-C: per corruption, uint8 [5 n, H, W, 3] with severities 1..5 stacked as in the
    real `<corruption>.npy` files, and "labels" (int64 [5 n], the labels repeated per severity)."""
    arrays = {}
    for index, name in enumerate(CIFAR10C_CORRUPTIONS):
        corruption_seed = int(np.random.SeedSequence([seed, index]).generate_state(1)[0])
        severities = range(1, CIFAR10C_SEVERITIES + 1)
        arrays[name] = np.concatenate([corrupt(clean_images, name, s, corruption_seed) for s in severities])
    arrays["labels"] = np.tile(np.asarray(labels, dtype=np.int64), CIFAR10C_SEVERITIES)
    return arrays

"""Offline STAND-INS for the image datasets, used at the `default` scale when nothing can be downloaded.

They are NOT the published datasets and numbers obtained on them are not comparable with the papers:
they only share the real datasets' tensor shapes, dtypes and label spaces, so that every job of the
workflow runs end to end offline.

- `mnist_like`: scikit-learn's 8x8 digits (`load_digits`, 1797 images) enlarged to 28x28 (MNIST).
- `fashion_like`: generated 28x28 garment silhouettes, one per Fashion-MNIST class (T-shirt/top, trouser,
  ..., ankle boot), with random scale, shift, brightness and stripes (Fashion-MNIST; not digits, so MNIST's
  stand-in is a distinct out-of-distribution set for it).
- `cifar_like`: generated 32x32x3 images, one smooth colour/sinusoid template per class (10 or 100).
- `svhn_like`: the same 8x8 digits on coloured backgrounds at 32x32x3 (test split only, an OOD set).

The CIFAR-10-C stand-in corrupts the CIFAR-10 stand-in's test images (`bnnrepro.data.corruptions`).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import ndimage

MAX_SHIFT = 2  # pixels a digit or garment moves from the centre, each way
CHUNK = 4096  # images generated at a time (bounds the float32 temporaries)


# --- digits: MNIST and SVHN stand-ins ---


@cache
def _digits(side: int) -> tuple[np.ndarray, np.ndarray]:
    """load_digits enlarged bilinearly to side x side, intensities in [0, 1] (float32), and labels."""
    from sklearn.datasets import load_digits  # imported here: scikit-learn takes 2 s, and only the digits need it

    digits = load_digits()
    images = ndimage.zoom(digits.images / 16.0, (1, side / 8, side / 8), order=1)
    return np.clip(images, 0, 1).astype(np.float32), digits.target.astype(np.int64)


def _balanced_labels(n: int, num_classes: int, rng: np.random.Generator) -> np.ndarray:
    """n labels, each class n / num_classes times (up to one), in random order."""
    return rng.permutation(np.arange(n) % num_classes).astype(np.int64)


def _sample_glyphs(
    n: int, test: bool, side: int, canvas: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n digit masks [n, canvas, canvas] in [0, 1], centred and shifted by up to MAX_SHIFT, with balanced labels.

    Train and test draw from disjoint base digits (every fourth of load_digits is a test digit), with replacement.
    """
    glyphs, targets = _digits(side)
    pool = np.flatnonzero((np.arange(len(targets)) % 4 == 0) == test)
    labels = _balanced_labels(n, 10, rng)
    index = np.empty(n, dtype=np.int64)
    for digit in range(10):
        where = labels == digit
        candidates = pool[targets[pool] == digit]
        index[where] = candidates[rng.integers(0, len(candidates), where.sum())]
    margin = (canvas - side) // 2 + MAX_SHIFT
    padded = np.pad(glyphs, ((0, 0), (margin, canvas + 2 * MAX_SHIFT - side - margin), (margin,) * 2))
    windows = sliding_window_view(padded, (canvas, canvas), axis=(1, 2))  # [N, 2s+1, 2s+1, canvas, canvas]
    dy, dx = rng.integers(0, 2 * MAX_SHIFT + 1, (2, n))
    return windows[index, dy, dx], labels


def to_uint8(x: np.ndarray) -> np.ndarray:
    return np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)


def mnist_like(n_train: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    """STAND-IN for MNIST: x [n, 28, 28] uint8, y int64 in 0..9.

    A digit of load_digits enlarged to 20x20 in a 28x28 canvas (MNIST's layout), shifted by up to 2 pixels,
    with a random gain and small Gaussian noise.
    """
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n in (("train", n_train), ("test", n_test)):
        glyphs, labels = _sample_glyphs(n, split == "test", 20, 28, rng)
        gain = rng.uniform(0.8, 1.2, (n, 1, 1)).astype(np.float32)
        noise = rng.normal(0, 0.04, glyphs.shape).astype(np.float32)
        arrays[f"x_{split}"], arrays[f"y_{split}"] = to_uint8(glyphs * gain + noise), labels
    return arrays


# --- Fashion-MNIST stand-in: garment silhouettes ---

# One row per Fashion-MNIST class, in its order: the shapes drawn, in turn, to make the garment. A shape is
# (kind, centre row, centre column, half height, half width) in pixels from the centre of the 28x28 canvas (rows
# grow downwards); kind "r" is a rectangle and "e" an ellipse, added to the silhouette, while "-r" and "-e" carve
# the shape out of what is drawn before them (a neckline, an opening, a handle's hole). The tops (0, 2, 4, 6)
# and the shoes (5, 7, 9) differ only in details, as in the real set.
GARMENTS: tuple[tuple[tuple[str, float, float, float, float], ...], ...] = (
    # 0 T-shirt/top: torso, short sleeves
    (("r", 1, 0, 11.5, 7.5), ("r", -8, 0, 3.5, 13)),
    # 1 trouser: two legs, waistband
    (("r", 0, -3.5, 13, 3), ("r", 0, 3.5, 13, 3), ("r", -11, 0, 2, 6.5)),
    # 2 pullover: torso, long sleeves, neckline
    (("r", 0.5, 0, 11.5, 7.5), ("r", 1, -10.75, 10.5, 2.25), ("r", 1, 10.75, 10.5, 2.25), ("-e", -11, 0, 2, 3.5)),
    # 3 dress: bodice, skirt flaring out
    (("r", -7, 0, 6, 4.5), ("r", 4, 0, 9, 6.5), ("e", 6, 0, 7, 10)),
    # 4 coat: long torso, long sleeves, open front
    (("r", 0.5, 0, 13, 8.5), ("r", 0, -11, 12, 2), ("r", 0, 11, 12, 2), ("-r", 0.5, 0, 13, 0.5)),
    # 5 sandal: sole, two straps, heel
    (("r", 8, 0, 1.25, 13), ("r", 0, 1, 1, 10), ("r", 4, 4, 1, 9), ("r", 3.5, -11, 5.5, 2)),
    # 6 shirt: torso, long sleeves, button placket
    (("r", 0.5, 0, 12.5, 7.5), ("r", 0, -10.5, 11, 2.5), ("r", 0, 10.5, 11, 2.5), ("-r", -6, 0, 7, 0.5)),
    # 7 sneaker: ankle, toe, sole
    (("r", 2, -8, 6, 5), ("e", 4.5, 3, 4.5, 10), ("r", 8.5, 0, 1.25, 13)),
    # 8 bag: handle (a ring), body
    (("e", -7, 0, 6, 7.5), ("-e", -7, 0, 4, 5.5), ("r", 4, 0, 9, 12.5)),
    # 9 ankle boot: shaft, foot, sole
    (("r", -2, -6, 11, 6), ("e", 4, 3, 5, 10), ("r", 9, 0, 1.5, 13)),
)


def _garments(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Images [n, 28, 28] in [0, 1] (float32) of the garments `labels`.

    Per image: the class's silhouette (anti-aliased edges) scaled by 0.85..1.1 (each axis jittered by up to 7%),
    shifted by up to 2 pixels each way; every shape moved by up to 1 pixel and its half sides scaled by 0.8..1.2,
    carvings 20-100% deep (so that the tops get confused); filled with stripes of random direction, frequency,
    phase and contrast and a linear shading, times a brightness gain, plus Gaussian pixel noise.
    """
    n, side = len(labels), 28
    scale = rng.uniform(0.85, 1.1, n)
    aspect = rng.uniform(0.93, 1.07, n)
    shift = rng.uniform(-MAX_SHIFT, MAX_SHIFT, (2, n))
    most = max(len(shapes) for shapes in GARMENTS)
    size = rng.uniform(0.8, 1.2, (2, most, n, 1, 1)).astype(np.float32)
    offset = rng.uniform(-1, 1, (2, most, n, 1, 1)).astype(np.float32)
    depth = rng.uniform(0.2, 1.0, (n, 1, 1)).astype(np.float32)
    centre = (side - 1) / 2
    pixels = np.arange(side, dtype=np.float32)
    # each image's pixel rows and columns in the table's coordinates: [n, 28, 1] and [n, 1, 28]
    rows = ((pixels[None, :] - centre - shift[0, :, None]) / (scale * aspect)[:, None])[:, :, None]
    cols = ((pixels[None, :] - centre - shift[1, :, None]) / (scale / aspect)[:, None])[:, None, :]
    mask = np.zeros((n, side, side), np.float32)
    for label, shapes in enumerate(GARMENTS):
        which = np.flatnonzero(labels == label)
        u, v, drawn = rows[which], cols[which], mask[which]
        for index, (kind, row, col, half_height, half_width) in enumerate(shapes):
            height, width = half_height * size[0, index, which], half_width * size[1, index, which]
            row, col = row + offset[0, index, which], col + offset[1, index, which]
            if kind.endswith("r"):
                inside = np.clip(height - np.abs(u - row) + 0.5, 0, 1) * np.clip(width - np.abs(v - col) + 0.5, 0, 1)
            else:
                radius = np.sqrt(((u - row) / height) ** 2 + ((v - col) / width) ** 2)
                inside = np.clip((1 - radius) * np.minimum(height, width) + 0.5, 0, 1)
            drawn = drawn * (1 - depth[which] * inside) if kind.startswith("-") else np.maximum(drawn, inside)
        mask[which] = drawn
    angle = rng.uniform(0, np.pi, (2, n, 1, 1))
    frequency = rng.uniform(0.12, 0.45, (n, 1, 1))  # cycles per pixel
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
    contrast = rng.uniform(0, 0.4, (n, 1, 1))
    slope = rng.uniform(-0.3, 0.3, (n, 1, 1))  # shading: relative change from the centre to an edge
    along = [(pixels[:, None] - centre) * np.cos(a) + (pixels - centre) * np.sin(a) for a in angle]
    texture = (1 - contrast * (0.5 + 0.5 * np.sin(2 * np.pi * frequency * along[0] + phase))) * (
        1 + slope * along[1] / centre
    )
    gain = rng.uniform(0.5, 1.0, (n, 1, 1))
    noise = rng.normal(0, 0.05, mask.shape)
    return (mask * gain * texture + noise).astype(np.float32)


def fashion_like(n_train: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    """STAND-IN for Fashion-MNIST: x [n, 28, 28] uint8, y int64 in 0..9 (Fashion-MNIST's classes), balanced.

    Garment silhouettes on a dark background (see GARMENTS and `_garments`); train and test are drawn
    independently from one generator.
    """
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n in (("train", n_train), ("test", n_test)):
        labels = _balanced_labels(n, 10, rng)
        chunks = [to_uint8(_garments(labels[i : i + CHUNK], rng)) for i in range(0, n, CHUNK)]
        arrays[f"x_{split}"] = np.concatenate(chunks) if chunks else np.zeros((0, 28, 28), np.uint8)
        arrays[f"y_{split}"] = labels
    return arrays


def svhn_like(n_test: int, seed: int) -> dict[str, np.ndarray]:
    """STAND-IN for SVHN's test split: x_test [n, 32, 32, 3] uint8, y_test int64 in 0..9 (SVHN's 10 read as 0).

    A digit of load_digits enlarged to 24x24 in a 32x32 canvas, in one random colour on another; every
    channel of the two colours differs by at least 0.35 (of 1).
    """
    rng = np.random.default_rng(seed)
    mask, labels = _sample_glyphs(n_test, True, 24, 32, rng)
    background = rng.uniform(0, 1, (n_test, 1, 1, 3))
    foreground = (background + rng.uniform(0.35, 0.65, (n_test, 1, 1, 3))) % 1.0
    images = background + (foreground - background) * mask[..., None] + rng.normal(0, 0.03, (*mask.shape, 3))
    return {"x_test": to_uint8(images), "y_test": labels}


# --- CIFAR-10 / CIFAR-100 stand-in ---


CIFAR10_CONFUSED_PAIR = (3, 5)
"""Cat and dog, the most confused pair of real CIFAR-10 (UDN §6.2 picks them as its hard pair): in the ten-class
stand-in the dog template is the cat's with the same sinusoids and slightly other colours."""
CONFUSED_OFFSET = 0.05


def _class_templates(num_classes: int) -> dict[str, np.ndarray]:
    """Per class: a base colour and two coloured sinusoids (integer frequencies, 1..3 cycles per image).

    The templates depend on the number of classes only, so every seed samples the same "dataset".
    """
    rng = np.random.default_rng(num_classes)
    frequencies = rng.integers(-3, 4, (num_classes, 2, 2))
    frequencies[np.all(frequencies == 0, axis=2)] = (1, 1)  # no constant "sinusoid"
    templates = {
        "base": rng.uniform(0.25, 0.75, (num_classes, 3)),
        "colour": rng.uniform(-0.3, 0.3, (num_classes, 2, 3)),
        "frequency": frequencies,
        "phase": rng.uniform(0, 2 * np.pi, (num_classes, 2)),
    }
    if num_classes == 10:
        cat, dog = CIFAR10_CONFUSED_PAIR
        templates["frequency"][dog] = templates["frequency"][cat]
        templates["base"][dog] = templates["base"][cat] + CONFUSED_OFFSET * rng.choice([-1, 1], 3)
        templates["colour"][dog] = templates["colour"][cat] + CONFUSED_OFFSET * rng.choice([-1, 1], (2, 3))
    return templates


def _cifar_images(labels: np.ndarray, templates: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Images of `labels`: the class template shifted by up to 8 pixels, with amplitude and colour jitter,
    one random distractor sinusoid and pixel noise."""
    n, side = len(labels), 32
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"))  # [2 (row, col), 32, 32]
    shift = rng.uniform(-8, 8, (n, 1, 2))
    freq = templates["frequency"][labels]  # [n, 2 components, 2 (row, col)]
    phase = templates["phase"][labels] - 2 * np.pi * np.sum(freq * shift, axis=2) / side
    amplitude = rng.uniform(0.7, 1.3, (n, 2))
    image = templates["base"][labels][:, None, None, :] + rng.normal(0, 0.15, (n, 1, 1, 3))
    for j in range(2):
        wave = np.sin(2 * np.pi * np.einsum("nk,khw->nhw", freq[:, j], grid) / side + phase[:, j, None, None])
        image = image + (amplitude[:, j, None] * templates["colour"][labels, j])[:, None, None, :] * wave[..., None]
    distractor_freq = rng.integers(-4, 5, (n, 2))
    distractor = np.sin(
        2 * np.pi * np.einsum("nk,khw->nhw", distractor_freq, grid) / side + rng.uniform(0, 7, (n, 1, 1))
    )
    image = image + rng.normal(0, 0.15, (n, 1, 1, 3)) * distractor[..., None]
    return to_uint8(image + rng.normal(0, 0.06, image.shape))


def cifar_like(n_train: int, n_test: int, num_classes: int, seed: int) -> dict[str, np.ndarray]:
    """STAND-IN for CIFAR-10 / CIFAR-100: x [n, 32, 32, 3] uint8 (HWC), y int64 in 0..num_classes-1, balanced."""
    templates = _class_templates(num_classes)
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n in (("train", n_train), ("test", n_test)):
        labels = _balanced_labels(n, num_classes, rng)
        chunks = [_cifar_images(labels[i : i + CHUNK], templates, rng) for i in range(0, n, CHUNK)]
        arrays[f"x_{split}"] = np.concatenate(chunks) if chunks else np.zeros((0, 32, 32, 3), np.uint8)
        arrays[f"y_{split}"] = labels
    return arrays

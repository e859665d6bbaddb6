"""Procedural colour images from a seed: the raw material of the imageCLEF stand-in.

Each image is a blend of a small per-image palette of colours (2-5), each colour weighted
over the image by its own smooth random field: a bilinearly upsampled coarse Gaussian grid,
a linear gradient and a few Gaussian blobs. A softmax with a per-image sharpness turns the
fields into weights, so an image is anything from flat regions of colour (sharp: peaked
histograms) to smooth gradients (soft: spread histograms). Shading, a per-image gamma,
fine texture and pixel noise follow, and values are clipped to 0..255 (so over- and
under-exposed images pile up in the end bins, as photographs do).

Palettes are drawn in HSV: a base hue with neighbouring or complementary hues, and a
saturation that makes a share of images near-grey (``GREY_SHARE``) and a share saturated
(``SATURATED_SHARE``); the rest lie in between. Images in one batch share a size, and the
size (height and width each in ``SIZE_RANGE``) is drawn per batch. Everything is vectorised
over a batch with NumPy, in float32.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

GREY_SHARE = 0.15
"""Share of near-grey images (saturation below 0.06)."""
SATURATED_SHARE = 0.15
"""Share of saturated images (saturation 0.85-1, bright)."""
SIZE_RANGE = (16, 48)
"""Smallest and largest height and width of an image, pixels (inclusive)."""
BATCH_IMAGES = 512
"""Images generated together by :func:`image_batches` (512 x 48 x 48 x 4 float32: 19 MB)."""
MAX_COLOURS = 5


def image_batches(seed: int, num_images: int, *, batch: int = BATCH_IMAGES
                  ) -> Iterator[np.ndarray]:
    """The images of the stand-in, in batches: the same seed gives the same images.

    Args:
        seed: numpy Generator seed.
        num_images: images in all (>= 1).
        batch: images per batch (>= 1); every batch but the last has this many.

    Yields:
        (n, H, W, 3) uint8 RGB images, H and W drawn per batch from ``SIZE_RANGE``.

    Raises:
        ValueError: ``num_images`` or ``batch`` is not an integer >= 1.
    """
    for name, value in (("num_images", num_images), ("batch", batch)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    rng = np.random.default_rng(seed)
    for start in range(0, num_images, batch):
        height, width = rng.integers(SIZE_RANGE[0], SIZE_RANGE[1] + 1, size=2)
        yield generate(rng, min(batch, num_images - start), int(height), int(width))


def generate(rng: np.random.Generator, num: int, height: int, width: int) -> np.ndarray:
    """``num`` random images of ``height`` x ``width`` pixels: (num, H, W, 3) uint8."""
    palette = _palettes(rng, num)                                   # (n, C, 3) in [0, 1]
    weights = _colour_weights(rng, num, height, width)              # (n, C, H, W)
    image = np.einsum("nchw,nck->nhwk", weights, palette, optimize=True)
    shading = _smooth_field(rng, num, height, width, grid=2, scale=0.25)
    image *= np.exp(shading)[..., None]
    gamma = np.exp(rng.normal(0.0, 0.3, (num, 1, 1, 1))).astype(np.float32)
    image = np.power(np.clip(image, 0.0, None), gamma)
    texture = _smooth_field(rng, num, height, width, grid=max(height // 3, 2), scale=1.0)
    texture_level = rng.uniform(0.0, 0.08, (num, 1, 1)).astype(np.float32)
    image += (texture * texture_level)[..., None]
    noise_level = rng.exponential(0.02, (num, 1, 1, 1)).astype(np.float32)
    image += noise_level * rng.standard_normal(image.shape, dtype=np.float32)
    return np.clip(np.rint(image * 255.0), 0, 255).astype(np.uint8)


def _palettes(rng: np.random.Generator, num: int) -> np.ndarray:
    """(num, MAX_COLOURS, 3) RGB palettes in [0, 1]; how many colours count is in the weights."""
    base = rng.uniform(0.0, 1.0, (num, 1))
    offsets = rng.choice([0.0, 0.08, 0.5], size=(num, MAX_COLOURS)) * rng.choice([-1, 1], (
        num, MAX_COLOURS)) + rng.normal(0.0, 0.03, (num, MAX_COLOURS))
    hue = (base + offsets) % 1.0
    kind = rng.uniform(0.0, 1.0, (num, 1))
    saturation = np.where(
        kind < GREY_SHARE, rng.uniform(0.0, 0.06, (num, MAX_COLOURS)),
        np.where(kind < GREY_SHARE + SATURATED_SHARE,
                 rng.uniform(0.85, 1.0, (num, MAX_COLOURS)),
                 rng.beta(2.0, 2.5, (num, MAX_COLOURS))))
    value = np.where(kind < GREY_SHARE + SATURATED_SHARE,
                     np.where(kind < GREY_SHARE, rng.beta(2.0, 2.0, (num, MAX_COLOURS)),
                              rng.uniform(0.7, 1.0, (num, MAX_COLOURS))),
                     rng.beta(2.5, 1.8, (num, MAX_COLOURS)))
    return _hsv_to_rgb(hue, saturation, value).astype(np.float32)


def _hsv_to_rgb(hue: np.ndarray, saturation: np.ndarray, value: np.ndarray) -> np.ndarray:
    """HSV in [0, 1] (any equal shapes) to RGB in [0, 1], stacked on a new last axis."""
    k = (np.array([5.0, 3.0, 1.0]) + hue[..., None] * 6.0) % 6.0
    ramp = np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return value[..., None] * (1.0 - saturation[..., None] * ramp)


def _colour_weights(rng: np.random.Generator, num: int, height: int, width: int
                    ) -> np.ndarray:
    """(num, MAX_COLOURS, H, W) softmax weights of each palette colour over the image."""
    grid = int(rng.integers(2, 7))
    logits = _smooth_field(rng, num * MAX_COLOURS, height, width, grid=grid, scale=1.0)
    logits = logits.reshape(num, MAX_COLOURS, height, width)
    ys = np.linspace(-1.0, 1.0, height, dtype=np.float32)[:, None]
    xs = np.linspace(-1.0, 1.0, width, dtype=np.float32)[None, :]
    slope = rng.normal(0.0, 1.0, (num, MAX_COLOURS, 2, 1, 1)).astype(np.float32)
    logits += slope[:, :, 0] * ys + slope[:, :, 1] * xs
    for _ in range(2):  # blobs: each adds a bump to one colour's weight
        centre = rng.uniform(-1.0, 1.0, (num, MAX_COLOURS, 2, 1, 1)).astype(np.float32)
        radius = rng.uniform(0.1, 0.5, (num, MAX_COLOURS, 1, 1)).astype(np.float32)
        height_of = rng.exponential(1.5, (num, MAX_COLOURS, 1, 1)).astype(np.float32)
        across = np.exp(-((ys - centre[:, :, 0]) ** 2) / (2.0 * radius**2))  # separable
        along = np.exp(-((xs - centre[:, :, 1]) ** 2) / (2.0 * radius**2))
        logits += height_of * across * along
    colours = rng.integers(2, MAX_COLOURS + 1, (num, 1, 1, 1))
    logits = np.where(np.arange(MAX_COLOURS)[None, :, None, None] < colours, logits, -np.inf)
    sharpness = np.exp(rng.uniform(np.log(0.5), np.log(20.0), (num, 1, 1, 1))).astype(np.float32)
    logits *= sharpness
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def _smooth_field(rng: np.random.Generator, num: int, height: int, width: int, *,
                  grid: int, scale: float) -> np.ndarray:
    """(num, H, W) float32: a (grid x grid) N(0, scale^2) grid, bilinearly upsampled."""
    coarse = rng.normal(0.0, scale, (num, grid, grid)).astype(np.float32)
    return np.einsum("hi,nij,wj->nhw", _interpolation(height, grid), coarse,
                     _interpolation(width, grid), optimize=True)


def _interpolation(size: int, grid: int) -> np.ndarray:
    """(size, grid) float32 linear interpolation weights from ``grid`` knots to ``size``."""
    position = np.linspace(0.0, grid - 1.0, size)
    knots = np.arange(grid)
    return np.clip(1.0 - np.abs(position[:, None] - knots[None, :]), 0.0, 1.0).astype(np.float32)

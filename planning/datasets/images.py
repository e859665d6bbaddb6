"""576-dimensional colour histograms of real images (the paper's imageCLEF features, App. J).

Each image gives three 192-bin histograms, of its red, green and blue values, each
normalised to sum 1, concatenated in the order R, G, B. The 256 channel values go to the
192 bins as bin = floor(value * 192 / 256) (equal-width bins of 4/3 values over [0, 256)).

Dequantisation: the workflow's features add U(0, 1) noise to every bin's pixel count before
normalising (``rng``). Counts are discrete, and a continuous density fitted to discrete data
is unbounded (Theis, van den Oord & Bethge 2016, "A note on the evaluation of generative
models", Section 3.1; RNADE's dequantised pixels, Uria, Murray & Larochelle 2013): most
images have exactly 0 pixels in many bins, so a mixture component with a mean at that value
and a standard deviation going to 0 raises the Gaussian mixture's likelihood (E5, E6)
without bound, and robust ADVI found that degenerate mode (held-out +8e4 nats and more).
The noise is below one pixel, so the histograms stay what they were to within one count.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

NUM_BINS = 192
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
DEQUANTISE_STREAM = 1
"""The random stream of the dequantisation noise beside the data seed
(:func:`dequantisation_rng`)."""


def dequantisation_rng(seed: int) -> np.random.Generator:
    """The generator of a data set's dequantisation noise: its own stream of ``seed``, apart
    from the stream that makes the stand-in's images."""
    return np.random.default_rng([seed, DEQUANTISE_STREAM])


def rgb_histograms(image_dir: str | os.PathLike, *, rng: np.random.Generator | None = None
                   ) -> np.ndarray:
    """The colour histograms of every .png/.jpg/.jpeg file in a folder, in file-name order.

    Images are converted to 8-bit RGB first (grey and palette images included).

    Args:
        image_dir: folder of images (not searched recursively; suffixes in any case).
        rng: dequantise with this generator (:func:`batch_histograms`), image by image in
            file-name order; None: exact histograms.

    Returns:
        (N, 576) float32; row n is image n's R, G and B histograms, each summing to 1.

    Raises:
        FileNotFoundError: ``image_dir`` is not a folder (named).
        ValueError: it holds no image, or an image cannot be read (named, with why).
    """
    folder = Path(image_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder {folder} does not exist or is not a folder: "
                                f"give a folder of {'/'.join(IMAGE_SUFFIXES)} images")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"no {'/'.join(IMAGE_SUFFIXES)} images in {folder}")
    features = np.empty((len(files), 3 * NUM_BINS), dtype=np.float32)
    for row, file in enumerate(files):
        try:
            with Image.open(file) as image:
                pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
        except OSError as error:  # PIL's UnidentifiedImageError and truncated files too
            raise ValueError(f"cannot read image {file}: {error}; remove it or replace it "
                             "with a readable image") from error
        features[row] = channel_histograms(pixels, rng=rng)
    return features


def channel_histograms(pixels: np.ndarray, *, rng: np.random.Generator | None = None
                       ) -> np.ndarray:
    """R, G and B histograms of (P, 3) uint8 pixel values: (576,) float32, each block sums to 1
    (dequantised with ``rng`` as :func:`batch_histograms`)."""
    return batch_histograms(pixels[None], rng=rng)[0]


def batch_histograms(images: np.ndarray, *, num_bins: int = NUM_BINS,
                     rng: np.random.Generator | None = None) -> np.ndarray:
    """The R, G and B histograms of a batch of equally sized images, by one ``bincount``.

    Args:
        images: (n, ..., 3) uint8 RGB values, e.g. (n, H, W, 3) images or (n, P, 3) pixels.
        num_bins: bins per channel, 1..256 (``NUM_BINS`` = 192, the paper's; value v goes to
            bin floor(v * num_bins / 256)).
        rng: dequantise (module docstring): bin (i, c, b) becomes (count + u) / sum over the
            channel's bins of (count + u), u ~ U(0, 1) drawn as ``rng.uniform(size=(n, 3,
            num_bins))``; None: count / pixels.

    Returns:
        (n, 3 * num_bins) float32; row i is image i's R, G and B histograms, each summing to 1.

    Raises:
        ValueError: ``num_bins`` is not an integer in 1..256.
    """
    if int(num_bins) != num_bins or not 1 <= num_bins <= 256:
        raise ValueError(f"num_bins must be an integer in 1..256, got {num_bins!r}")
    num = images.shape[0]
    pixels = images.reshape(num, -1, 3)
    bins = pixels.astype(np.int64) * num_bins // 256 + np.arange(3) * num_bins
    bins += np.arange(num)[:, None, None] * (3 * num_bins)
    counts = np.bincount(bins.ravel(), minlength=num * 3 * num_bins).reshape(num, 3, num_bins)
    counts = counts.astype(np.float64)
    if rng is not None:
        counts += rng.uniform(size=counts.shape)
    return (counts / counts.sum(-1, keepdims=True)).reshape(num, 3 * num_bins).astype(np.float32)


def standardise(features: np.ndarray, *, num_train: int | None = None) -> np.ndarray:
    """Per-dimension standardisation with the mean and sd of the training rows (Appendix J).

    Args:
        features: (N, D) array; the first ``num_train`` rows are the training rows
            (None: all rows).
        num_train: rows whose mean and standard deviation are used for every row.

    Returns:
        (N, D) float32, (features - mean) / sd; a dimension constant over the training rows
        (sd 0, e.g. a bin no training image fills) is only centred.
    """
    train = features if num_train is None else features[:num_train]
    if train.shape[0] < 2:
        raise ValueError(f"need >= 2 training rows to standardise, got {train.shape[0]}")
    mean = train.mean(axis=0, dtype=np.float64)
    sd = train.std(axis=0, dtype=np.float64)
    sd[sd == 0.0] = 1.0
    return ((features - mean) / sd).astype(np.float32)

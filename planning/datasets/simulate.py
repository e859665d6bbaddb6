"""The imageCLEF stand-ins (E5, E6), simulated from a seed: data sets of ``data.source:
imageclef``, named by ``data.name``. (Simulated data of ``data.source: simulate`` come from
the model module's own ``simulate``, ``advi_repro.models``.)

``image_standin`` (the default of E5 and E6) computes the colour histograms of procedural
images; ``gmm_standin`` draws rows from a Gaussian mixture (the model being fitted).

Each uses ``numpy.random.default_rng(seed)``; the same seed gives the same arrays.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from advi_repro.models._checks import require_count
from advi_repro.planning.datasets import images, procedural

BLOCK_ROWS = 8192
"""Rows ``gmm_standin`` draws and writes at a time (8192 x 576 float64: 38 MB)."""


def gmm_standin(
    seed: int,
    *,
    num_train: int = 250_000,
    num_heldout: int = 10_000,
    dim: int = 576,
    num_components: int = 30,
    out_path: str | os.PathLike,
) -> Path:
    """A Gaussian-mixture stand-in for the imageCLEF histograms, written as a float32 .npy.

    Rows are drawn from a diagonal Gaussian mixture with unequal weights and components that
    overlap in every dimension: weights ~ Dirichlet(2 1_K), means mu_kd ~ N(0, 1), standard
    deviations sigma_kd ~ LogNormal(0, 0.25), so two components' means differ by about as
    much as their spread. Each dimension is then standardised (mean 0, sd 1 over the
    training rows), as the paper standardises its histograms (Appendix J), by
    :func:`write_standardised` in blocks of ``BLOCK_ROWS`` rows. Rows drawn from the very
    model E5 and E6 fit are the easiest case for a sampler; :func:`image_standin` is not.

    Args:
        seed: numpy Generator seed.
        num_train: training rows (paper: 250,000), first in the file.
        num_heldout: held-out rows (paper: 10,000), last in the file.
        dim: D, the number of features (paper: 576 = 3 x 192 histogram bins).
        num_components: mixture components of the generator (30).
        out_path: the .npy file to write, shape (num_train + num_heldout, dim).

    Returns:
        ``out_path`` as a Path.
    """
    require_count(num_train=num_train, num_heldout=num_heldout, dim=dim,
                    num_components=num_components)
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(num_components, 2.0))
    means = rng.normal(0.0, 1.0, (num_components, dim))
    sds = rng.lognormal(0.0, 0.25, (num_components, dim))
    num_rows = num_train + num_heldout

    def blocks() -> Iterator[np.ndarray]:
        for start in range(0, num_rows, BLOCK_ROWS):
            size = min(BLOCK_ROWS, num_rows - start)
            component = rng.choice(num_components, size=size, p=weights)
            noise = rng.standard_normal((size, dim))
            yield (means[component] + sds[component] * noise).astype(np.float32)

    return write_standardised(blocks(), out_path, num_rows=num_rows, dim=dim,
                              num_train=num_train)


def image_standin(
    seed: int,
    *,
    num_train: int = 250_000,
    num_heldout: int = 10_000,
    num_bins: int = images.NUM_BINS,
    out_path: str | os.PathLike,
) -> Path:
    """The imageCLEF stand-in from procedural images, through the real-image feature path.

    ``advi_repro.planning.datasets.procedural.image_batches(seed, num_train + num_heldout)``
    generates the
    images (colour fields, gradients and blobs from per-image palettes, shading, texture,
    noise; a share near-grey, a share saturated; sizes per batch), in memory only: none is
    written as an image file. Each batch goes through
    ``advi_repro.planning.datasets.images.batch_histograms``,
    the function that gives a real image (``data.image_dir``) its 576 R, G, B histogram
    bins, dequantised as real images' are
    (``advi_repro.planning.datasets.images.dequantisation_rng(seed)``),
    and the rows are standardised with the mean and sd of the training rows as real
    images' are (``advi_repro.planning.datasets.images.standardise``'s rule, by streamed sums). Row
    i
    is image i.

    Args:
        seed: numpy Generator seed of the images.
        num_train: training rows (paper: 250,000), first in the file.
        num_heldout: held-out rows (paper: 10,000), last in the file.
        num_bins: histogram bins per channel (paper: 192; fewer keep smoke runs cheap).
        out_path: the .npy file to write, shape (num_train + num_heldout, 3 * num_bins)
            float32 (576 columns at the paper's 192 bins).

    Returns:
        ``out_path`` as a Path.
    """
    require_count(num_train=num_train, num_heldout=num_heldout)
    num_rows = num_train + num_heldout
    rng = images.dequantisation_rng(seed)
    blocks = (images.batch_histograms(batch, num_bins=num_bins, rng=rng)
              for batch in procedural.image_batches(seed, num_rows))
    return write_standardised(blocks, out_path, num_rows=num_rows, dim=3 * num_bins,
                              num_train=num_train)


def write_standardised(blocks: Iterable[np.ndarray], out_path: str | os.PathLike, *,
                       num_rows: int, dim: int, num_train: int) -> Path:
    """Streams row blocks into a float32 .npy, then standardises it in place, atomically.

    Two passes over the file, so memory stays at a block or two: the blocks are written as
    they come while the sums of the first ``num_train`` rows accumulate (float64), then every
    row becomes ``(x - mean) / sd`` with the training rows' mean and sd (a dimension constant
    over them is only centred, as ``advi_repro.planning.datasets.images.standardise`` does). The
    file
    appears at ``out_path`` only when complete.

    Args:
        blocks: (n_i, dim) arrays whose rows, in order, are the file's ``num_rows`` rows.
        out_path: the .npy to write.
        num_rows, dim: the file's shape; num_train: the training rows, first (>= 2).

    Raises:
        ValueError: fewer than 2 training rows, or the blocks do not make (num_rows, dim).
    """
    if num_train < 2:
        raise ValueError(f"num_train must be >= 2 to standardise, got {num_train}")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=out_path.parent, prefix=f".{out_path.name}.")
    os.close(handle)
    try:
        header = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32,
                                           shape=(num_rows, dim))
        offset = header.offset
        del header
        with open(temporary, "r+b") as out:
            mean, sd = _write_blocks(blocks, out, offset, num_rows=num_rows, dim=dim,
                                     num_train=num_train)
            for start in range(0, num_rows, BLOCK_ROWS):
                size = min(BLOCK_ROWS, num_rows - start)
                position = offset + start * dim * np.dtype(np.float32).itemsize
                out.seek(position)
                block = np.fromfile(out, dtype=np.float32, count=size * dim).reshape(size, dim)
                out.seek(position)
                out.write(((block - mean) / sd).astype(np.float32).tobytes())
        os.chmod(temporary, 0o644)
        os.replace(temporary, out_path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return out_path


def _write_blocks(blocks: Iterable[np.ndarray], out: BinaryIO, offset: int, *,
                  num_rows: int, dim: int, num_train: int) -> tuple[np.ndarray, np.ndarray]:
    """Writes the blocks from ``offset``; returns the training rows' (mean, sd), sd 0 -> 1."""
    out.seek(offset)
    total, total_sq, written = np.zeros(dim), np.zeros(dim), 0
    for block in blocks:
        if block.ndim != 2 or block.shape[1] != dim or written + block.shape[0] > num_rows:
            raise ValueError(f"a block of shape {block.shape} after {written} rows does not "
                             f"fit a ({num_rows}, {dim}) file")
        out.write(np.ascontiguousarray(block, dtype=np.float32).tobytes())
        train = block[: max(0, num_train - written)].astype(np.float64)
        total += train.sum(axis=0)
        total_sq += np.square(train).sum(axis=0)
        written += block.shape[0]
    if written != num_rows:
        raise ValueError(f"the blocks made {written} rows, expected {num_rows}")
    mean = total / num_train
    sd = np.sqrt(np.maximum(total_sq / num_train - mean**2, 0.0))
    sd[sd == 0.0] = 1.0
    return mean, sd

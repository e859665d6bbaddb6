"""Simulated data from a seed: the ARD regression data (E1) and the imageCLEF stand-in (E5, E6).

Both use ``numpy.random.default_rng(seed)``; the same seed gives the same arrays.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

NOISE_PRECISION = 1.0
"""tau of the simulated regression: the noise of y_n has standard deviation 1."""

BLOCK_ROWS = 8192
"""Rows ``gmm_standin`` draws and writes at a time (8192 x 576 float64: 38 MB)."""


def linreg_ard(
    seed: int, *, num_train: int = 10_000, num_heldout: int = 1_000, num_features: int = 250
) -> dict[str, np.ndarray]:
    """Regression data in which half of the regressors have no predictive power (Appendix F).

    x_nd ~ N(0, 1) iid; w_d ~ N(0, 1) for the first D // 2 regressors and w_d = 0 for the
    others; y_n = w^T x_n + e_n with e_n ~ N(0, 1 / NOISE_PRECISION). Save with
    ``numpy.savez(path, **arrays)`` for ``models.linreg_ard.load``.

    Args:
        seed: numpy Generator seed.
        num_train, num_heldout: rows N of the training and held-out sets.
        num_features: D, the number of regressors.

    Returns:
        ``X_train (num_train, D)``, ``y_train (num_train,)``, ``X_heldout (num_heldout, D)``,
        ``y_heldout (num_heldout,)``, all float32; the truth ``w (D,)`` float32 and
        ``noise_precision ()`` float32.
    """
    _require_counts(num_train=num_train, num_heldout=num_heldout, num_features=num_features)
    rng = np.random.default_rng(seed)
    w = np.zeros(num_features)
    num_relevant = num_features // 2
    w[:num_relevant] = rng.normal(0.0, 1.0, num_relevant)
    X = rng.normal(0.0, 1.0, (num_train + num_heldout, num_features))
    noise = rng.normal(0.0, 1.0 / np.sqrt(NOISE_PRECISION), num_train + num_heldout)
    y = X @ w + noise
    X, y = X.astype(np.float32), y.astype(np.float32)
    return {
        "X_train": X[:num_train],
        "y_train": y[:num_train],
        "X_heldout": X[num_train:],
        "y_heldout": y[num_train:],
        "w": w.astype(np.float32),
        "noise_precision": np.float32(NOISE_PRECISION),
    }


def gmm_standin(
    seed: int,
    *,
    num_train: int = 250_000,
    num_heldout: int = 10_000,
    dim: int = 576,
    num_components: int = 30,
    out_path: str | os.PathLike,
) -> Path:
    """A simulated stand-in for the imageCLEF colour histograms, written as a float32 .npy.

    Rows are drawn from a diagonal Gaussian mixture with unequal weights and components that
    overlap in every dimension: weights ~ Dirichlet(2 1_K), means mu_kd ~ N(0, 1), standard
    deviations sigma_kd ~ LogNormal(0, 0.25), so two components' means differ by about as
    much as their spread. Each dimension is then standardised (mean 0, sd 1 over the
    training rows), as the paper standardises its histograms (Appendix J). The file is
    written in blocks of ``BLOCK_ROWS`` rows (two passes: draw, then standardise in place),
    so memory stays at a few blocks, and renamed into place when complete.

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
    _require_counts(num_train=num_train, num_heldout=num_heldout, dim=dim,
                    num_components=num_components)
    if num_train < 2:
        raise ValueError(f"num_train must be >= 2 to standardise, got {num_train}")
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(num_components, 2.0))
    means = rng.normal(0.0, 1.0, (num_components, dim))
    sds = rng.lognormal(0.0, 0.25, (num_components, dim))
    num_rows = num_train + num_heldout

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=out_path.parent, prefix=f".{out_path.name}.")
    os.close(handle)
    try:
        header = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32,
                                           shape=(num_rows, dim))
        offset = header.offset
        del header
        total, total_sq = np.zeros(dim), np.zeros(dim)
        with open(temporary, "r+b") as out:
            out.seek(offset)
            for start in range(0, num_rows, BLOCK_ROWS):
                size = min(BLOCK_ROWS, num_rows - start)
                component = rng.choice(num_components, size=size, p=weights)
                noise = rng.standard_normal((size, dim))
                block = (means[component] + sds[component] * noise).astype(np.float32)
                out.write(block.tobytes())
                train = block[: max(0, num_train - start)].astype(np.float64)
                total += train.sum(axis=0)
                total_sq += np.square(train).sum(axis=0)
            mean = total / num_train
            sd = np.sqrt(np.maximum(total_sq / num_train - mean**2, 0.0))
            sd[sd == 0.0] = 1.0
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


def _require_counts(**values: int) -> None:
    bad = {name: value for name, value in values.items() if int(value) != value or value < 1}
    if bad:
        raise ValueError(f"sizes must be integers >= 1, got {bad}")

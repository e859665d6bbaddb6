"""Figures 5c and 5d: the K factors of a factorisation (columns of beta, (I, K)) as images.

Each factor beta[:, k] (I = 560 pixels for the Frey faces) is drawn as a grey image of
``shape`` (28 x 20), row-major as the frames are stored (``beta[:, k].reshape(28, 20)``),
each on its own grey scale (black: 0 or its minimum, white: its maximum). The values are a
run's posterior mean (``posterior_mean.npz``, ``advi_repro.runners.posterior``; for ADVI the mean
of the last checkpoint's S draws from q).

With ``top_frames`` (Figure 5c), each factor is drawn in a row beside the frames with the
largest posterior mean loadings ``theta[u, k]`` on it, so a reader can judge whether the
factors "pick out significant frames".

Run by Snakemake (``snakemake.input``/``output``/``params.factors``) or from the shell:
``python scripts/plot_factors.py posterior_mean.npz out.png --site beta --shape 28 20``
(also writes ``out.pdf``; ``--frames frey_rawface.npy --top-frames 4`` adds the frames).
"""


import argparse
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from advi_repro.planning.files import (
    atomic_open,  # noqa: E402
    read_posterior_mean,  # noqa: E402
)
from advi_repro.planning.scriptlog import log_to  # noqa: E402


def factor_images(factors: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """(I, K) factors -> (K, rows, columns) images, ``factors[:, k].reshape(shape)``.

    Raises:
        ValueError: not a matrix, or rows * columns != I.
    """
    factors = np.asarray(factors)
    rows, columns = (int(n) for n in shape)
    if factors.ndim != 2 or factors.shape[0] != rows * columns:
        raise ValueError(f"factors of shape {factors.shape} cannot be drawn as {rows} x "
                         f"{columns} images: need ({rows * columns}, K)")
    return np.stack([factors[:, k].reshape(rows, columns) for k in range(factors.shape[1])])


def plot(images: np.ndarray, *, title: str, columns: int = 5) -> plt.Figure:
    """A grid of the K images (``columns`` per row), titled k = 1..K."""
    count = images.shape[0]
    grid_rows = math.ceil(count / columns)
    height, width = images.shape[1:]
    fig, axes = plt.subplots(grid_rows, columns, squeeze=False, layout="constrained",
                             figsize=(1.2 * columns, 1.2 * grid_rows * height / width + 0.4))
    for k, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if k < count:
            ax.imshow(images[k], cmap="gray", interpolation="nearest")
            ax.set_title(f"k = {k + 1}", fontsize=8)
    fig.suptitle(title)
    return fig


def top_loading_frames(theta: np.ndarray, count: int) -> np.ndarray:
    """(K, count) indices u of the frames with the largest loadings theta[u, k], largest first.

    Raises:
        ValueError: theta is not a (U, K) matrix, or count is not in 1..U.
    """
    theta = np.asarray(theta)
    if theta.ndim != 2 or not 1 <= count <= theta.shape[0]:
        raise ValueError(f"cannot pick the top {count} frames of loadings of shape "
                         f"{theta.shape}: need a (U, K) matrix with U >= {count}")
    return np.argsort(-theta, axis=0, kind="stable")[:count].T


def plot_with_frames(images: np.ndarray, theta: np.ndarray, frames: np.ndarray, *,
                     count: int, title: str) -> plt.Figure:
    """One row per factor k: its image, then the ``count`` frames loading most on it."""
    top = top_loading_frames(theta, count)
    rows, (height, width) = images.shape[0], images.shape[1:]
    fig, axes = plt.subplots(rows, count + 1, squeeze=False, layout="constrained",
                             figsize=(0.9 * (count + 1), 0.9 * rows * height / width + 0.5))
    for k in range(rows):
        axes[k, 0].imshow(images[k], cmap="gray", interpolation="nearest")
        axes[k, 0].set_title(f"factor k = {k + 1}", fontsize=6)
        for j, u in enumerate(top[k]):
            axes[k, j + 1].imshow(frames[u].reshape(height, width), cmap="gray",
                                  interpolation="nearest", vmin=0, vmax=255)
            axes[k, j + 1].set_title(f"frame {u}: {theta[u, k]:.3g}", fontsize=6)
    for ax in axes.flat:
        ax.set_axis_off()
    fig.suptitle(title, fontsize=9)
    return fig


def render(posterior_mean: str | os.PathLike, outputs: Sequence[str | os.PathLike], *,
           site: str, shape: Sequence[int], title: str,
           frames: str | os.PathLike | None = None, top_frames: int = 0) -> tuple[int, ...]:
    """Draws ``site`` of a ``posterior_mean.npz`` to each of ``outputs`` (format by suffix);
    with ``top_frames`` > 0, beside each factor the rows of ``frames`` (an (N, I) .npy, its
    first U rows being theta's) with the largest loadings ``theta[:, k]``.

    Returns:
        The site's shape (I, K).
    """
    arrays = read_posterior_mean(posterior_mean)
    for name in (site, "theta") if top_frames else (site,):
        if name not in arrays:
            raise KeyError(f"{posterior_mean} has no site {name!r}; it has {sorted(arrays)}")
    images = factor_images(arrays[site], shape)
    if top_frames:
        theta = arrays["theta"]
        data = np.load(frames, mmap_mode="r")[: theta.shape[0]]
        figure = plot_with_frames(images, theta, data, count=top_frames,
                                  title=f"{title}:\neach factor and the {top_frames} frames "
                                        "with the\nlargest loadings theta[u, k]")
    else:
        figure = plot(images, title=title)
    for path in outputs:
        with atomic_open(path, "wb") as f:
            figure.savefig(f, format=Path(path).suffix[1:], dpi=150)
    plt.close(figure)
    return tuple(arrays[site].shape)


def main() -> None:
    if "snakemake" in globals():
        log_to(snakemake.log[0])  # noqa: F821
        factors = snakemake.params.factors  # noqa: F821
        shape = render(snakemake.input.posterior_mean, list(snakemake.output),  # noqa: F821
                       site=factors.site, shape=factors.image_shape, title=factors.title,
                       frames=factors.frames, top_frames=factors.top_frames)
        logging.info("drew %s %s of %s as %s images", factors.site, shape,
                     factors.posterior_mean, factors.image_shape)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("posterior_mean", type=Path)
    parser.add_argument("out_png", type=Path)
    parser.add_argument("--site", default="beta")
    parser.add_argument("--shape", type=int, nargs=2, default=(28, 20))
    parser.add_argument("--title", default="Factors")
    parser.add_argument("--frames", type=Path, help="(N, I) .npy of the frames")
    parser.add_argument("--top-frames", type=int, default=0,
                        help="frames shown beside each factor (needs --frames)")
    args = parser.parse_args()
    render(args.posterior_mean, [args.out_png, args.out_png.with_suffix(".pdf")],
           site=args.site, shape=args.shape, title=args.title, frames=args.frames,
           top_frames=args.top_frames)


if __name__ == "__main__":
    main()

"""Figures 5c and 5d: the K factors of a factorisation (columns of beta, (I, K)) as images.

Each factor beta[:, k] (I = 560 pixels for the Frey faces) is drawn as a grey image of
``shape`` (28 x 20), row-major as the frames are stored (``beta[:, k].reshape(28, 20)``),
each on its own grey scale (black: 0 or its minimum, white: its maximum). The values are a
run's posterior mean (``posterior_mean.npz``, :mod:`runners.posterior`; for ADVI the mean
of the last checkpoint's S draws from q).

Run by Snakemake (``snakemake.input``/``output``/``params.factors``) or from the shell:
``python scripts/plot_factors.py posterior_mean.npz out.png --site beta --shape 28 20``
(also writes ``out.pdf``).
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

from runners.files import atomic_open  # noqa: E402
from runners.posterior import read_posterior_mean  # noqa: E402


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


def render(posterior_mean: str | os.PathLike, outputs: Sequence[str | os.PathLike], *,
           site: str, shape: Sequence[int], title: str) -> tuple[int, ...]:
    """Draws ``site`` of a ``posterior_mean.npz`` to each of ``outputs`` (format by suffix).

    Returns:
        The site's shape (I, K).
    """
    arrays = read_posterior_mean(posterior_mean)
    if site not in arrays:
        raise KeyError(f"{posterior_mean} has no site {site!r}; it has {sorted(arrays)}")
    figure = plot(factor_images(arrays[site], shape), title=title)
    for path in outputs:
        with atomic_open(path, "wb") as f:
            figure.savefig(f, format=Path(path).suffix[1:], dpi=150)
    plt.close(figure)
    return tuple(arrays[site].shape)


def main() -> None:
    if "snakemake" in globals():
        logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
        factors = snakemake.params.factors  # noqa: F821
        shape = render(snakemake.input.posterior_mean, list(snakemake.output),  # noqa: F821
                       site=factors.site, shape=factors.image_shape, title=factors.title)
        logging.info("drew %s %s of %s as %s images", factors.site, shape,
                     factors.posterior_mean, factors.image_shape)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("posterior_mean", type=Path)
    parser.add_argument("out_png", type=Path)
    parser.add_argument("--site", default="beta")
    parser.add_argument("--shape", type=int, nargs=2, default=(28, 20))
    parser.add_argument("--title", default="Factors")
    args = parser.parse_args()
    render(args.posterior_mean, [args.out_png, args.out_png.with_suffix(".pdf")],
           site=args.site, shape=args.shape, title=args.title)


if __name__ == "__main__":
    main()

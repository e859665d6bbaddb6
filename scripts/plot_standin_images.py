"""The imageCLEF stand-in's first images and their colour histograms (report, Figure 1 data).

The images are regenerated from the stand-in's seed and size exactly as
``advi_repro.planning.datasets.simulate.image_standin`` made them (the first batch of
``advi_repro.planning.datasets.procedural.image_batches(seed, num_images)``), so they are the first
rows of the
E5/E6 data file; each is shown above its R, G and B histograms
(``advi_repro.planning.datasets.images.batch_histograms``, before standardisation).

Run by Snakemake (``snakemake.params.job``, the data job of the stand-in) or from the shell:
``python scripts/plot_standin_images.py out.png --seed 0 --num-images 260000`` (also
writes ``out.pdf``).
"""

import argparse
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from advi_repro.planning.datasets import images, procedural  # noqa: E402
from advi_repro.planning.files import atomic_open  # noqa: E402
from advi_repro.planning.scriptlog import log_to

SHOWN = 12
"""Images in the figure."""


def first_images(seed: int, num_images: int, count: int = SHOWN) -> np.ndarray:
    """The stand-in's first ``count`` images: (count, H, W, 3) uint8 (fewer if it has fewer)."""
    return next(procedural.image_batches(seed, num_images))[:count]


def plot(sample: np.ndarray, *, title: str, num_bins: int = images.NUM_BINS, columns: int = 6
         ) -> plt.Figure:
    """Each image above its R, G, B histograms (fraction of pixels per bin)."""
    histograms = images.batch_histograms(sample, num_bins=num_bins).reshape(
        len(sample), 3, num_bins)
    grid_rows = -(-len(sample) // columns)
    fig, axes = plt.subplots(2 * grid_rows, columns, squeeze=False, layout="constrained",
                             figsize=(1.9 * columns, 3.0 * grid_rows))
    for ax in axes.flat:
        ax.set_axis_off()
    for i, (image, histogram) in enumerate(zip(sample, histograms, strict=True)):
        row, column = divmod(i, columns)
        top, bottom = axes[2 * row, column], axes[2 * row + 1, column]
        top.imshow(image, interpolation="nearest")
        top.set_title(f"image {i} ({image.shape[0]} x {image.shape[1]})", fontsize=7)
        bottom.set_axis_on()
        for channel, colour in enumerate(("red", "green", "blue")):
            bottom.plot(histogram[channel], color=colour, linewidth=0.7)
        bottom.set_yscale("symlog", linthresh=0.01)
        bottom.set_xticks([0, num_bins // 2, num_bins - 1])
        bottom.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    return fig


def render(outputs: Sequence[str | os.PathLike], *, seed: int, num_images: int,
           num_bins: int = images.NUM_BINS) -> tuple:
    """Draws the stand-in's first images to each of ``outputs``; returns their shape."""
    sample = first_images(seed, num_images)
    figure = plot(sample, num_bins=num_bins,
                  title=f"Procedural imageCLEF stand-in (seed {seed}, {num_images:,} images, "
                        f"{num_bins} bins per channel): the first {len(sample)}")
    for path in outputs:
        with atomic_open(path, "wb") as f:
            figure.savefig(f, format=Path(path).suffix[1:], dpi=150)
    plt.close(figure)
    return sample.shape


def main() -> None:
    if "snakemake" in globals():
        log_to(snakemake.log[0])  # noqa: F821
        job = snakemake.params.job  # noqa: F821
        num_images = job.kwargs["num_train"] + job.kwargs["num_heldout"]
        num_bins = job.kwargs.get("num_bins", images.NUM_BINS)
        shape = render(list(snakemake.output), seed=job.seed,  # noqa: F821
                       num_images=num_images, num_bins=num_bins)
        logging.info("drew images %s of the stand-in %s", shape, job.path)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_png", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-images", type=int, default=260_000)
    args = parser.parse_args()
    render([args.out_png, args.out_png.with_suffix(".pdf")], seed=args.seed,
           num_images=args.num_images)


if __name__ == "__main__":
    main()

"""Factors of a factorisation under several settings, one row per setting (Figure 5d study).

Each input is ``LABEL=PATH`` of a ``posterior_mean.npz`` (a run's) or of an .npz with the
site (``scripts/map_factors.py``); row r shows the K columns of the site as images
(``factor_images`` of ``scripts/plot_factors.py``), each on its own grey scale, and under
each factor the share of its total in its brightest 5% of pixels (1.0: all the factor's mass
in 5% of the pixels; 0.05: spread evenly), a measure of sparsity.

    python scripts/plot_factor_settings.py out.png "ADVI=run/posterior_mean.npz" \
        "MAP alpha0=1000=map.npz" --title "Dirichlet Exponential factors"
"""

import argparse
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from plot_factors import factor_images  # noqa: E402

from advi_repro.planning.files import atomic_open  # noqa: E402

TOP_SHARE = 0.05
"""Sparsity: the share of a factor's total in its brightest TOP_SHARE of pixels."""


def top_mass(factors: np.ndarray, share: float = TOP_SHARE) -> np.ndarray:
    """(K,) share of each column's sum in its largest ``ceil(share * I)`` entries."""
    count = int(np.ceil(share * factors.shape[0]))
    largest = -np.sort(-factors, axis=0)[:count]
    return largest.sum(axis=0) / factors.sum(axis=0)


def plot(rows: Sequence[tuple[str, np.ndarray]], shape: Sequence[int], *, title: str
         ) -> plt.Figure:
    """One row of factor images per (label, (I, K) factors)."""
    num_factors = max(f.shape[1] for _, f in rows)
    height, width = shape
    fig, axes = plt.subplots(len(rows), num_factors, squeeze=False, layout="constrained",
                             figsize=(0.9 * num_factors, len(rows) * (0.9 * height / width + 0.35)))
    for r, (label, factors) in enumerate(rows):
        images, sparsity = factor_images(factors, shape), top_mass(factors)
        for k, ax in enumerate(axes[r]):
            ax.set_xticks([])
            ax.set_yticks([])
            if k < len(images):
                ax.imshow(images[k], cmap="gray", interpolation="nearest")
                ax.set_xlabel(f"{sparsity[k]:.2f}", fontsize=6, labelpad=1)
        axes[r, 0].set_ylabel(label, fontsize=6)
    fig.suptitle(title, fontsize=9)
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_png", type=Path)
    parser.add_argument("settings", nargs="+", help="LABEL=PATH of an .npz with the site")
    parser.add_argument("--site", default="beta")
    parser.add_argument("--shape", type=int, nargs=2, default=(28, 20))
    parser.add_argument("--title", default="Factors under each setting")
    args = parser.parse_args()
    rows = []
    for setting in args.settings:
        label, _, path = setting.rpartition("=")
        if not label:
            parser.error(f"{setting!r}: give LABEL=PATH")
        with np.load(path) as arrays:
            rows.append((label, arrays[args.site]))
    figure = plot(rows, args.shape, title=args.title)
    for path in (args.out_png, args.out_png.with_suffix(".pdf")):
        with atomic_open(path, "wb") as f:
            figure.savefig(f, format=path.suffix[1:], dpi=150)


if __name__ == "__main__":
    main()

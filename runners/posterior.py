"""posterior_mean.npz: the posterior mean of every latent site, kept valid on disk.

What a run leaves besides its trace for figures that show the fit itself (Figures 5c, 5d:
the factors beta as images). Estimates, in the constrained space (theta, not zeta):

- ADVI: E_q[theta] estimated by the mean of the S draws from q scored at the latest
  checkpoint (S = ``eval_draws``); not T^-1(mu), which for a log transform is q's median;
- NUTS, HMC: the mean of all post-warmup draws so far; before the first post-warmup
  draw, the mean of the latest warmup chunk (``phase`` says which).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from advi_repro.planning.files import atomic_open


class PosteriorMean:
    """A running mean of constrained draws per site, rewritten atomically by :meth:`write`.

    State: ``sums`` (site -> float64 array of the site's shape) and ``num_draws``.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        """
        Args:
            path: the .npz file; replaced if it exists.
        """
        self.path = Path(path)
        self.reset()

    def reset(self) -> None:
        """Forgets every draw (a new q, or a new warmup chunk)."""
        self.sums: dict[str, np.ndarray] = {}
        self.num_draws = 0

    def update(self, draws: dict[str, Any]) -> None:
        """Adds draws: dict site -> (S_b, *site_shape)."""
        sizes = {site: np.shape(value)[0] for site, value in draws.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"sites have different numbers of draws: {sizes}")
        for site, value in draws.items():
            total = np.sum(np.asarray(value, dtype=np.float64), axis=0)
            self.sums[site] = total if site not in self.sums else self.sums[site] + total
        self.num_draws += next(iter(sizes.values()))

    def means(self) -> dict[str, np.ndarray]:
        """site -> mean over the draws so far, float32 (site's shape)."""
        if not self.num_draws:
            raise ValueError("no draws yet: nothing to average")
        return {site: (total / self.num_draws).astype(np.float32)
                for site, total in self.sums.items()}

    def write(self, **meta: Any) -> None:
        """Writes the means (one array per site) and ``num_draws`` plus ``meta`` (scalars
        such as iteration, phase) to :attr:`path`, atomically."""
        arrays = {**self.means(), "num_draws": np.asarray(self.num_draws)}
        clash = set(meta) & set(arrays)
        if clash:
            raise ValueError(f"meta keys {sorted(clash)} clash with site names")
        arrays.update({key: np.asarray(value) for key, value in meta.items()})
        with atomic_open(self.path, "wb") as f:
            np.savez(f, **arrays)

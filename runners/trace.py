"""trace.csv: one row per checkpoint, kept valid on disk after every row.

Columns: the run's identity (``experiment, method, label, seed``), then the checkpoint's
``iteration, wall_s, heldout_lpd, num_draws`` and the method's own columns (``elbo`` for
ADVI; ``phase, accept_prob, divergences, step_size`` for MCMC).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from advi_repro.planning.files import atomic_open

CHECKPOINT_COLUMNS = ("iteration", "wall_s", "heldout_lpd", "num_draws")
"""The columns every method writes at every checkpoint (the figures need only these)."""


class TraceWriter:
    """Collects checkpoint rows and rewrites ``path`` atomically after each one.

    An interrupted run therefore leaves a complete CSV of the checkpoints it reached. A
    trace has at most a few hundred rows, so rewriting it whole costs nothing measurable
    (and the clock is stopped while it is written).
    """

    def __init__(self, path: str | os.PathLike, identity: dict[str, Any]) -> None:
        """
        Args:
            path: the trace file; replaced if it exists.
            identity: columns with one value for the whole run (experiment, method, ...).
        """
        self.path = Path(path)
        self.identity = dict(identity)
        self.rows: list[dict[str, Any]] = []

    def append(self, **checkpoint: Any) -> None:
        """Adds one checkpoint row; it needs :data:`CHECKPOINT_COLUMNS` and the same keys
        as the first row."""
        missing = [c for c in CHECKPOINT_COLUMNS if c not in checkpoint]
        if missing:
            raise ValueError(f"trace row lacks columns {missing}")
        row = {**self.identity, **checkpoint}
        if self.rows and row.keys() != self.rows[0].keys():
            raise ValueError(f"trace row has columns {list(row)}, expected {list(self.rows[0])}")
        self.rows.append(row)
        with atomic_open(self.path, "w") as f:
            writer = csv.DictWriter(f, fieldnames=list(row), lineterminator="\n")
            writer.writeheader()
            writer.writerows(self.rows)

    @property
    def last(self) -> dict[str, Any] | None:
        """The latest row, or None before the first checkpoint."""
        return self.rows[-1] if self.rows else None

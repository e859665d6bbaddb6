"""Stan's relative-ELBO convergence test (``stan/variational/advi.hpp``).

Every ``eval_elbo`` iterations the ELBO is estimated and the relative change
``|(elbo_prev - elbo) / elbo|`` pushed into a circular buffer of size
``max(0.1 * max_iter / eval_elbo, 2)``; the run stops when the buffer's mean or median is
below ``tol_rel_obj``. As in Stan, ``elbo_prev`` starts at 0 (so the first change is 1), the
median of an even-sized buffer is its upper middle element, and after ``10 * eval_elbo``
iterations a mean or median above 0.5 flags a possibly diverging run.
"""

from __future__ import annotations

import collections
import math
from typing import NamedTuple

DIVERGENCE_THRESHOLD = 0.5


def buffer_size(max_iter: int, eval_elbo: int) -> int:
    """Size of the circular buffer of relative changes, ``max(0.1 * max_iter / eval_elbo, 2)``
    truncated to an integer, as Stan computes it."""
    return int(max(0.1 * max_iter / eval_elbo, 2.0))


def relative_change(elbo_prev: float, elbo: float) -> float:
    """``|(elbo_prev - elbo) / elbo|``, Stan's ``rel_difference(elbo, elbo_prev)``."""
    return abs((elbo_prev - elbo) / elbo)


class ConvergenceStatus(NamedTuple):
    """Outcome of one convergence check.

    Attributes:
        rel_change: the relative ELBO change just pushed.
        rel_mean: mean of the buffer.
        rel_median: median of the buffer (upper middle element for even sizes, as Stan).
        converged_by: "mean", "median", "mean and median" or None.
        may_diverge: True when, after 10 * eval_elbo iterations, mean or median > 0.5.
    """

    rel_change: float
    rel_mean: float
    rel_median: float
    converged_by: str | None
    may_diverge: bool


class ConvergenceMonitor:
    """Holds the previous ELBO and the circular buffer (host-side, called between chunks).

    Args:
        tol_rel_obj: positive tolerance on the relative ELBO change (Stan: 0.01).
        max_iter: the iteration limit, which sets the buffer size.
        eval_elbo: iterations between ELBO evaluations (Stan: 100).
    """

    def __init__(self, *, tol_rel_obj: float, max_iter: int, eval_elbo: int) -> None:
        self.tol_rel_obj = tol_rel_obj
        self.eval_elbo = eval_elbo
        self.elbo_prev = 0.0
        self.changes: collections.deque[float] = collections.deque(
            maxlen=buffer_size(max_iter, eval_elbo)
        )

    def update(self, iteration: int, elbo: float) -> ConvergenceStatus:
        """Push the ELBO estimated at ``iteration`` and apply Stan's stopping rules."""
        change = relative_change(self.elbo_prev, elbo)
        self.elbo_prev = elbo
        self.changes.append(change if math.isfinite(change) else math.inf)
        ordered = sorted(self.changes)
        mean = sum(ordered) / len(ordered)
        median = ordered[len(ordered) // 2]
        rules = [name for name, v in (("mean", mean), ("median", median)) if v < self.tol_rel_obj]
        may_diverge = iteration > 10 * self.eval_elbo and (
            mean > DIVERGENCE_THRESHOLD or median > DIVERGENCE_THRESHOLD
        )
        return ConvergenceStatus(
            change, mean, median, " and ".join(rules) if rules else None, may_diverge
        )

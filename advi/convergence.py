"""Stan's relative-ELBO convergence test (``stan/variational/advi.hpp``).

Every ``eval_elbo`` iterations the ELBO is estimated and the relative change
``|(elbo_prev - elbo) / elbo|`` pushed into a circular buffer of size
``max(0.1 * max_iter / eval_elbo, 2)``; the run stops when the buffer's mean or median is
below ``tol_rel_obj``. As in Stan, ``elbo_prev`` starts at 0 (so the first change is 1), the
median of an even-sized buffer is its upper middle element, and after ``10 * eval_elbo``
iterations a mean or median above 0.5 flags a possibly diverging run.

:class:`RelativeELBORule` is this test as the stopping rule of :func:`advi.driver.drive`
(the ``"stan"`` preset).
"""

from __future__ import annotations

import collections
import math
from typing import Any, NamedTuple

from jax import Array

from .driver import MAX_ITER_PREFIX, Row, Verdict
from .step import ADVIState

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


class RelativeELBORule:
    """Stan's stopping rule for :func:`advi.driver.drive`: the ELBO from ``runner.elbo``
    every ``eval_elbo`` iterations (and at ``max_iter``) through a
    :class:`ConvergenceMonitor`; a non-finite estimate asks for a restart from the last
    state whose estimate was finite. The reported parameters are the last iterate's.

    Args:
        runner: the compiled functions (:class:`advi.compiled.CompiledADVI`).
        elbo_key: the key of the ELBO estimates (salted by the iteration).
        state: the initial state (the first restart point).
        tol_rel_obj, eval_elbo, max_iter: as in :func:`advi.fit`.
    """

    moments = False
    reports_rhat = False
    fallback_text = "the last finite state"

    def __init__(self, runner: Any, elbo_key: Array, state: ADVIState, *, tol_rel_obj: float,
                 eval_elbo: int, max_iter: int) -> None:
        self.runner, self.elbo_key, self.last_good = runner, elbo_key, state
        self.eval_elbo, self.max_iter = eval_elbo, max_iter
        self.monitor = ConvergenceMonitor(tol_rel_obj=tol_rel_obj, max_iter=max_iter,
                                          eval_elbo=eval_elbo)
        self.warned_divergence = False
        self.max_iter_note = (f"{MAX_ITER_PREFIX}{max_iter} reached before the relative ELBO "
                              f"change fell below tol_rel_obj={tol_rel_obj}; the approximation "
                              "may not have converged")

    def observe(self, state: ADVIState, moments: Any) -> Verdict:
        """Estimate the ELBO when due and apply Stan's test."""
        it = int(state.iteration)
        if it % self.eval_elbo and it != self.max_iter:
            return Verdict()
        elbo, _ = self.runner.elbo(state.params, self.elbo_key, it)
        if not math.isfinite(elbo):
            return Verdict(failure="non-finite ELBO beyond elbo_samples redraws")
        self.last_good = state
        status = self.monitor.update(it, elbo)
        note = None
        if status.may_diverge and not self.warned_divergence:
            self.warned_divergence = True
            note = (f"iteration {it}: relative ELBO change mean {status.rel_mean:.3g}, "
                    f"median {status.rel_median:.3g} > 0.5; the fit may be diverging")
        row = Row(elbo, status.rel_change, status.rel_mean, status.rel_median)
        return Verdict(row=row, reason=status.converged_by, note=note)

    def estimate(self, state: ADVIState) -> Any:
        return state.params

    def fallback(self, state: ADVIState) -> ADVIState:
        return self.last_good

    def restarted(self) -> None:
        """Stan's buffer of relative changes carries on across restarts."""

    def describe(self, row: Row) -> str:
        return f"rel mean {row.rel_mean:.4f} median {row.rel_median:.4f}"

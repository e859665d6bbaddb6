"""The main loop of the robust preset: constant steps until the iterates are stationary, then
their average (:mod:`advi.stationarity`).

The run is cut into chunks of ``eval_elbo`` iterations; each chunk returns the moments of
its iterates (:class:`advi.chunk.ChunkMoments`). The window is the second half of the
chunks run so far (the first half is the transient), or all of them when the run starts from
an accepted Laplace start with its Hessian (q already at the mode with the curvature's
scales: no transient to discard; where the mean-field optimum is elsewhere, split R-hat sees
the drift between the window's first and last quarters and waits), rounded down to a
multiple of :data:`advi.stationarity.RHAT_SPLITS`. After such a start, where the whole trace
fails the tests below but split R-hat over its second half (at least
:data:`advi.stationarity.MIN_WINDOW_CHUNKS` chunks) passes, the first half is discarded as
a random start's is (the start was a mode far from the family's optimum: a horseshoe's
local scales, whose mean-field fit from its accepted start passed over the whole trace
only after 21,000 iterations, at the answer it held at 10,000, where it had warned that
max_iter was reached). Not the ELBO's test over that half: on a Gaussian process with a
1e-10 jitter it stopped mean-field fits at 1,000 iterations 0.51 sd off, where the whole
trace's tests run them on to 0.12. The run stops when split R-hat over that
window is below :data:`advi.stationarity.RHAT_THRESHOLD` for 95% of the monitored quantities
(each mean and log standard deviation of q; :data:`advi.stationarity.RHAT_QUANTILE`), or
when the ELBO has settled: its gain across the window, the last doubling of the run, is
below ``tol_rel_obj`` of its size with 95% confidence (:func:`advi.stationarity.elbo_gain`,
a test whose power does not fall with K, where R-hat's 2K quantities of a 25,000-dimensional
factorisation keep drifting long after its predictions have settled); either way it returns
the average of the iterates over the window, or over its last chunks where they still
drift (:func:`advi.stationarity.averaging_chunks`). After an accepted start whose window
is still the whole trace, the ELBO's test waits while split R-hat is above
:data:`advi.stationarity.SETTLED_RHAT_MAX` (q still leaving the mode). Where the ELBO
settled while q's means still travel (a median over them of more than
:data:`advi.stationarity.TRAVEL_SD` of q's sds over the window: a crawl along a ridge),
the fit warns. A minibatched fit (``minibatch_size``, or streamed rows) stops by split
R-hat alone: its ELBO estimates carry the minibatch's noise, N / sqrt(B) times a datum's,
and ``tol_rel_obj`` of |ELBO| grows with N, so that the ELBO's test passed while q was
still 1-4 posterior sds off in its mean and 2-3 times too wide (a normal mean from 20,000
rows, B = 100), where R-hat's test ends within 0.3 sd (benchmarks/README.md). Non-finite
draws beyond the redraw budget restart the run from the current
average with eta / 10, and a fresh trace whose first half is discarded; where an ELBO in the
window is not finite (the run diverged, its average with it), from the average iterate of
the chunk with the highest finite ELBO since the last restart.
:class:`StationarityRule` is this stopping rule, run by :func:`advi.driver.drive`;
:data:`POLICY` its restart policy.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np
from jax import Array

from .chunk import ChunkMoments
from .driver import MAX_ITER_PREFIX, RestartPolicy, Row, Verdict
from .families import narrowed
from .stationarity import (
    MIN_WINDOW_CHUNKS,
    RHAT_SPLITS,
    SETTLED_RHAT_MAX,
    TRAVEL_SD,
    averaging_chunks,
    elbo_gain,
    settled,
    split_rhat,
    stationary,
    travel,
    window_chunks,
)
from .step import ADVIState

SMALLEST_ETA = 1e-4
"""Below this eta a run that keeps meeting non-finite draws stops with ADVIError."""

TRAVEL_NOTE = "the ELBO settled while q still travels"
"""How the warning of :meth:`_Trace.crawling` begins."""


class _Trace:
    """The per-chunk moments of the current phase, on the host: each chunk's parameter sums
    and ELBO, and running (prefix) sums of the monitored quantities and their squares in
    float64, so that a window's split R-hat costs O(P) per chunk whatever its length.
    After a burn-in, chunks older than half the trace (no later window reaches them) are
    dropped."""

    def __init__(self, burn_in: bool) -> None:
        self.burn_in = burn_in
        self.count = 0  # chunks added
        self.params: list[Any] = []  # the last len(self.params) chunks'
        self.prefix: list[tuple[np.ndarray, np.ndarray]] = []  # sums up to each kept chunk
        self.base: tuple[np.ndarray, np.ndarray] | None = None  # sums before the kept ones
        self.elbo: list[float] = []
        self.best: tuple[float, Any] | None = None  # the chunk with the highest ELBO
        self.averaged: tuple[int, Any] | None = None  # (count, the average at that count)

    def add(self, m: ChunkMoments) -> None:
        stat = np.asarray(m.stat, np.float64)
        stat_sq = np.asarray(m.stat_sq, np.float64)
        if self.base is None:
            self.base = (np.zeros_like(stat), np.zeros_like(stat_sq))
        last = self.prefix[-1] if self.prefix else self.base
        self.prefix.append((last[0] + stat, last[1] + stat_sq))
        self.params.append(jax.tree.map(np.asarray, m.params))
        self.elbo.append(float(m.elbo))
        if np.isfinite(self.elbo[-1]) and (self.best is None or self.elbo[-1] > self.best[0]):
            self.best = (self.elbo[-1], self.params[-1])
        self.count += 1
        if self.burn_in:  # a later window starts at or after chunk count // 2
            while self.count - len(self.prefix) < self.count // 2 - 1:
                self.base = self.prefix.pop(0)
                self.params.pop(0)

    def window(self) -> int:
        """Chunks in the current window (0 before the first check)."""
        return window_chunks(self.count, self.burn_in)

    def may_discard(self) -> bool:
        """Whether the trace keeps its first half (no burn-in) and its second half is a
        window of at least :data:`advi.stationarity.MIN_WINDOW_CHUNKS` chunks."""
        return not self.burn_in and window_chunks(self.count, True) >= MIN_WINDOW_CHUNKS

    def _sums(self, size: int, pieces: int) -> tuple[np.ndarray, np.ndarray]:
        """(pieces, P) sums of the quantities and of their squares over the last ``size``
        chunks cut into ``pieces`` consecutive parts (``size`` a multiple of ``pieces``)."""
        assert self.base is not None
        bounds = [self.prefix[-1 - i] if i < len(self.prefix) else self.base
                  for i in range(size, -1, -size // pieces)]
        sums = np.empty((2, pieces, bounds[0][0].size))
        # a chunk whose moments overflowed leaves inf - inf = nan: not stationary, silently
        with np.errstate(invalid="ignore"):
            for piece, (lower, upper) in enumerate(zip(bounds, bounds[1:], strict=False)):
                np.subtract(upper[0], lower[0], out=sums[0, piece])
                np.subtract(upper[1], lower[1], out=sums[1, piece])
        return sums[0], sums[1]

    def rhat(self, chunk_len: int) -> tuple[bool, float]:
        """(stationary, the R-hat statistic) over the window; (False, nan) before it."""
        size = self.window()
        if not size:
            return False, math.nan
        stat, stat_sq = self._sums(size, RHAT_SPLITS)
        return stationary(split_rhat(stat, stat_sq, chunk_len * size // RHAT_SPLITS))

    def gain(self) -> tuple[float, float]:
        """:func:`advi.stationarity.elbo_gain` over the window; (nan, nan) before it."""
        size = self.window()
        return elbo_gain(np.asarray(self.elbo[-size:])) if size else (math.nan, math.nan)

    def crawling(self, chunk_len: int) -> str | None:
        """The warning for a window over which q's means travelled a median of more than
        :data:`advi.stationarity.TRAVEL_SD` of its sds (:func:`advi.stationarity.travel`),
        or None."""
        size = self.window()
        moved = travel(self._sums(size, size)[0], chunk_len) if size >= 2 else np.zeros(1)
        median = float(np.nanmedian(moved)) if np.any(np.isfinite(moved)) else 0.0
        if not median > TRAVEL_SD:
            return None
        return (f"{TRAVEL_NOTE}: over the last {size * chunk_len} iterations its means "
                f"moved a median of {median:.1f} of q's standard deviations; likely cause: q "
                "crawling along a ridge of strongly correlated parameters (an uncentred "
                "predictor, data far from order 1), as from a random start; remedy: "
                "standardise the data (centre and scale the predictors), fit in float64 "
                "(dtype=\"float64\"), a full-rank q (family=\"fullrank\"), or run longer (a "
                "smaller tol_rel_obj)")

    def restart_point(self, chunk_len: int) -> Any:
        """Where a restart begins: the iterate average (:meth:`average`), or, where an ELBO
        in the window is not finite (the run diverged: a full-rank q from a random start
        whose own scales ran away, its average as far off), the average iterate of the
        phase's chunk with the highest finite ELBO."""
        if self.best is None or np.all(np.isfinite(self.elbo[-max(self.window(), 1):])):
            return self.average(chunk_len)
        return jax.tree.map(lambda x: jax.device_put((x / chunk_len).astype(x.dtype)),
                            self.best[1])

    def average(self, chunk_len: int) -> Any:
        """The iterate average over the window's trailing chunks that
        :func:`advi.stationarity.averaging_chunks` picks (the last chunk when the window
        is empty); kept until the next chunk (a checkpoint and the end ask for the same)."""
        if self.averaged is not None and self.averaged[0] == self.count:
            return self.averaged[1]
        size = self.window()
        size = max(averaging_chunks(self._sums(size, size)[0], chunk_len) if size else 1, 1)

        def mean(*sums: np.ndarray) -> Array:  # on the host: no eager XLA op to compile
            total = np.sum(np.stack(sums), axis=0, dtype=np.float64)
            return jax.device_put((total / (size * chunk_len)).astype(sums[0].dtype))

        self.averaged = (self.count, jax.tree.map(mean, *self.params[-size:]))
        return self.averaged[1]


START_NARROWING, START_NARROWINGS = 0.1, 3
"""At iteration 0 the robust preset's first 3 restarts narrow q's scales 10-fold each, at
the same eta: a random start's unit scales that put almost every draw where the gradient
is not finite (the small stochastic volatility model's full-rank q from a random start:
no eta helped) reach 1e-3 of them before eta steps down."""

POLICY = RestartPolicy(
    next_eta=lambda eta: eta / 10 if eta / 10 >= SMALLEST_ETA else None,
    limit=f"the smallest eta the robust preset tries ({SMALLEST_ETA:g})",
    narrow=lambda params: narrowed(params, START_NARROWING), narrowings=START_NARROWINGS,
)
"""The robust preset's restarts: eta / 10, down to :data:`SMALLEST_ETA`; at iteration 0,
first q narrowed (:data:`START_NARROWING`)."""


def scaled_moments(moments: ChunkMoments, factor: float) -> ChunkMoments:
    """``moments`` with its sums (the iterates', the monitored quantities' and their
    squares') multiplied by ``factor``, on the host, each in its own dtype."""

    def scaled(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return (x.astype(np.float64) * factor).astype(x.dtype)

    return moments._replace(params=jax.tree.map(scaled, moments.params),
                            stat=scaled(moments.stat), stat_sq=scaled(moments.stat_sq))


class StationarityRule:
    """The robust preset's stopping rule for :func:`advi.driver.drive` (module docstring):
    each chunk's moments join the trace; the run has converged when split R-hat over the
    window is below the threshold; the reported parameters are the average of the window or
    of its last chunks (:func:`advi.stationarity.averaging_chunks`).

    Args:
        chunk_len: iterations per chunk (the moments are sums over that many).
        burn_in: False after an accepted Laplace start with its Hessian (the window is the
            whole trace); True otherwise, also after a Laplace start above
            :data:`advi.laplace.HESSIAN_MAX_DIM`, whose scales start at one common value
            (:func:`advi.laplace.common_scale`): q's log scales then travel from it to
            theirs, a transient to discard like a random start's.
        max_iter: as in :func:`advi.fit`, for the warning when it is reached.
        tol_rel_obj: the ELBO's relative gain across the window below which the run has
            settled (:func:`advi.stationarity.settled`).
        elbo_test: False: the run stops by split R-hat (or ``max_iter``) alone, as a
            minibatched fit does (module docstring).
    """

    moments = True
    reports_rhat = True
    fallback_text = "the average of the iterates (where the run diverged, its best chunk's)"

    def __init__(self, chunk_len: int, burn_in: bool, max_iter: int,
                 tol_rel_obj: float, elbo_test: bool = True) -> None:
        self.chunk_len, self.trace = chunk_len, _Trace(burn_in)
        self.tol_rel_obj, self.elbo_test = tol_rel_obj, elbo_test
        self.max_iter_note = (f"{MAX_ITER_PREFIX}{max_iter} reached before the iterates were "
                              "stationary (split R-hat < 1.1)"
                              f"{' or the ELBO settled' if elbo_test else ''}; the result is "
                              "the average of the last iterates")

    def observe(self, state: ADVIState, moments: ChunkMoments) -> Verdict:
        """Add the chunk to the trace and test the window. Chunks end on multiples of
        ``chunk_len`` (:func:`advi.driver.drive`), or short of one at ``max_iter``: a short
        chunk's sums are scaled to ``chunk_len`` iterations at their own mean, so that the
        average and the statistics weigh its iterates as those of a whole chunk."""
        steps = (int(state.iteration) - 1) % self.chunk_len + 1
        self.trace.add(moments if steps == self.chunk_len else
                       scaled_moments(moments, self.chunk_len / steps))
        reason, note, rhat = self._tested()
        if reason is None and self.trace.may_discard():
            # after an accepted start: is its transient the trace's first half after all?
            self.trace.burn_in = True
            converged, half = self.trace.rhat(self.chunk_len)
            self.trace.burn_in = converged
            reason, rhat = ("rhat", half) if converged else (None, rhat)
        return Verdict(row=Row(self.trace.elbo[-1], rhat=rhat), reason=reason, note=note)

    def _tested(self) -> tuple[str | None, str | None, float]:
        """(the stopping reason or None, a warning or None, split R-hat) over the window."""
        converged, rhat = self.trace.rhat(self.chunk_len)
        if converged:
            return "rhat", None, rhat
        held = not self.trace.burn_in and rhat > SETTLED_RHAT_MAX  # q still leaves the mode
        if self.elbo_test and not held and settled(*self.trace.gain(), self.tol_rel_obj):
            return "elbo settled", self.trace.crawling(self.chunk_len), rhat
        return None, None, rhat

    def estimate(self, state: ADVIState) -> Any:
        return self.trace.average(self.chunk_len)

    def fallback(self, state: ADVIState) -> ADVIState:
        """The state before the failed chunk, at :meth:`_Trace.restart_point` when the trace
        has chunks."""
        return state._replace(params=self.trace.restart_point(self.chunk_len)) if (
            self.trace.params) else state

    def restarted(self) -> None:
        """A fresh trace whose first half is discarded."""
        self.trace = _Trace(burn_in=True)

    def describe(self, row: Row) -> str:
        return f"split R-hat (95%) {row.rhat:.3f}"

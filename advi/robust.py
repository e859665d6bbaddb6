"""The main loop of the robust preset: constant steps until the iterates are stationary, then
their average (:mod:`advi.stationarity`).

The run is cut into chunks of ``eval_elbo`` iterations; each chunk returns the moments of
its iterates (:class:`advi.compiled.ChunkMoments`). The window is the second half of the
chunks run so far (the first half is the transient), or all of them when the run starts
from an accepted Laplace start (q already at the mode with the curvature's scales: no
transient to discard; where the mean-field optimum is elsewhere, split R-hat sees the drift
between the window's first and last quarters and waits), rounded down to a multiple of
:data:`advi.stationarity.RHAT_SPLITS`; the run stops when split R-hat over that window is
below :data:`advi.stationarity.RHAT_THRESHOLD` for 95% of the monitored quantities (each
mean and log standard deviation of q; :data:`advi.stationarity.RHAT_QUANTILE`), and returns
the average of the iterates over the window. Non-finite draws beyond the redraw budget
restart the run from the current average with eta / 10, and a fresh trace whose first half
is discarded.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .compiled import ChunkMoments, CompiledADVI
from .result import ADVIError, Approximation, CheckpointInfo
from .stationarity import split_rhat, stationary, window_chunks
from .step import ADVIState, fresh_state

logger = logging.getLogger("advi")

SMALLEST_ETA = 1e-4
"""Below this eta a run that keeps meeting non-finite draws stops with ADVIError."""


class HistoryRow(NamedTuple):
    """One row of the robust loop's history (one per chunk)."""

    iteration: int
    elbo: float  # mean of the chunk's M-draw ELBO estimates, nats
    rhat: float  # the 95% quantile of split R-hat over the window; nan before the first
    eta: float
    wall_s: float


class RobustOutcome(NamedTuple):
    """What :func:`optimise` returns to :func:`advi.fit`."""

    params: Any
    iteration: int
    converged: bool
    reason: str
    eta: float
    history: list[HistoryRow]
    wall_s: float
    restarts: list[tuple[int, float, float]]
    redraws: int


class _Trace:
    """The per-chunk moments of the current phase, on the host."""

    def __init__(self, burn_in: bool) -> None:
        self.burn_in = burn_in
        self.params: list[Any] = []
        self.stat: list[np.ndarray] = []
        self.stat_sq: list[np.ndarray] = []

    def add(self, m: ChunkMoments) -> None:
        self.params.append(jax.tree.map(np.asarray, m.params))
        self.stat.append(np.asarray(m.stat))
        self.stat_sq.append(np.asarray(m.stat_sq))

    def window(self) -> int:
        """Chunks in the current window (0 before the first check)."""
        return window_chunks(len(self.stat), self.burn_in)

    def rhat(self, chunk_len: int) -> tuple[bool, float]:
        """(stationary, the R-hat statistic) over the window; (False, nan) before it."""
        size = self.window()
        if not size:
            return False, math.nan
        stat, stat_sq = np.stack(self.stat[-size:]), np.stack(self.stat_sq[-size:])
        return stationary(split_rhat(stat, stat_sq, chunk_len))

    def average(self, chunk_len: int) -> Any:
        """The iterate average over the window (the last chunk when the window is empty)."""
        size = max(self.window(), 1)

        def mean(*sums: np.ndarray) -> Array:  # on the host: no eager XLA op to compile
            total = np.sum(np.stack(sums), axis=0, dtype=np.float64)
            return jnp.asarray((total / (size * chunk_len)).astype(sums[0].dtype))

        return jax.tree.map(mean, *self.params[-size:])


def optimise(
    compiled: CompiledADVI,
    state: ADVIState,
    eta: float,
    *,
    run_key: Any,
    chunk_len: int,
    max_iter: int,
    checkpoint_every: int,
    checkpoint: Callable[[CheckpointInfo], bool | None] | None,
    wall_s: float,
    burn_in: bool = True,
) -> RobustOutcome:
    """Run chunks until stationary, ``max_iter`` or the hook says stop (module docstring);
    ``burn_in`` False (after an accepted Laplace start) makes the window the whole trace.

    Raises:
        ADVIError: when non-finite draws persist below eta = :data:`SMALLEST_ETA`.
    """
    trace, history, restarts = _Trace(burn_in), [], []
    reason, converged = "max_iter", False
    while int(state.iteration) < max_iter:
        it = int(state.iteration)
        tick = time.perf_counter()
        new_state, moments = compiled.run(state, eta, run_key, len(restarts),
                                          min(chunk_len, max_iter - it))
        if bool(new_state.failed):
            wall_s += time.perf_counter() - tick
            state, eta = _restart(compiled, state, trace, chunk_len, eta, restarts)
            trace = _Trace(burn_in=True)
            continue
        state, it = new_state, int(new_state.iteration)
        steps = it - int(history[-1].iteration if history else 0)
        trace.add(moments)
        converged, rhat = trace.rhat(chunk_len)
        wall_s += time.perf_counter() - tick
        history.append(HistoryRow(it, float(moments.elbo) / max(steps, 1), rhat, eta, wall_s))
        logger.info("iter %6d  elbo %12.6g  split R-hat (95%%) %.3f  eta %g  %.2f s",
                    it, history[-1].elbo, rhat, eta, wall_s)
        if converged:
            reason = "rhat"
        if checkpoint is not None and (it % checkpoint_every == 0 or converged):
            approx = Approximation(compiled.family, trace.average(chunk_len), compiled.target)
            if checkpoint(CheckpointInfo(it, wall_s, history[-1].elbo, approx)):
                reason = "stopped by checkpoint"
                break
        if converged:
            break
    return RobustOutcome(trace.average(chunk_len), int(state.iteration), converged, reason,
                         eta, history, wall_s, restarts, int(state.redraws))


def _restart(compiled: CompiledADVI, state: ADVIState, trace: _Trace, chunk_len: int,
             eta: float, restarts: list) -> tuple[ADVIState, float]:
    it = int(state.iteration)
    if eta / 10 < SMALLEST_ETA:
        raise ADVIError(f"non-finite gradients beyond 10*grad_samples redraws at iteration "
                        f"{it} with eta={eta:g}; stopping below eta={SMALLEST_ETA:g}")
    params = trace.average(chunk_len) if trace.params else state.params
    restarts.append((it, eta, eta / 10))
    logger.warning("non-finite draws at iteration %d with eta=%g; restarting at eta=%g",
                   it, eta, eta / 10)
    return fresh_state(params, compiled.optimizer, state.iteration, state.redraws), eta / 10

"""The Laplace start's L-BFGS searches: on the host (SciPy) and compiled (JAX).

:func:`find_mode` runs SciPy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995) on the host in
float64, calling the compiled log density and gradient; the Laplace start uses it up to
:data:`advi.laplace.HESSIAN_MAX_DIM`, where the compile of a search would cost more than a
whole fit and float32 iterates cannot meet the exact-mode test of a formed Hessian.

:func:`mode_search` is the search above that size, where the start spends its time in
L-BFGS (1,500 to 1,800 steps on E3, K = 25,250; 3,300 to 4,000 on E4): there SciPy's own
work and the host round trips cost 30% of each step, while compiled (Liu & Nocedal 1989,
inside one ``jax.lax.while_loop``, the direction by :mod:`advi.lbfgs_compact`) the step is
mostly the evaluation. Its line search uses gradients only: a step is accepted
where the directional derivative phi'(alpha) = grad f(u + alpha d) . d of f = -log p meets
Hager & Zhang's (2005, SIAM J. Optim. 16(1)) approximate Wolfe conditions,

    sigma phi'(0) <= phi'(alpha) <= (2 delta - 1) phi'(0),

the Armijo condition of the quadratic that interpolates phi' (exact where f is quadratic)
with the usual curvature condition, which also keeps every L-BFGS pair's curvature
positive. Where the log density's value costs more than the shared forward pass (a
Poisson likelihood's log-factorials: a third of a step on E3), this spares that cost on
every step; log p itself is evaluated every :data:`GAIN_WINDOW` steps, for the stall test,
and where the search would stop. Near a mode whose log p float32 resolves coarsely (-1e6:
0.06 nats), a line search on values stalls where one on gradients goes on
(benchmarks/README.md, "Measurements behind the library's defaults"). The search
maximises log p(base + scale * u) over u from u = 0, so that a stage whitened by one
common scale (:func:`advi.laplace.common_scale`) runs in the same compiled function.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from jax import Array

from .lbfgs_compact import scale_by_compact_lbfgs
from .loops import loop_data

LBFGS_MEMORY = 10
"""Correction pairs kept by the compiled L-BFGS (SciPy's L-BFGS-B default ``maxcor``)."""

RUNAWAY = 100.0
"""The Laplace start's host search ends (the test not met) when the gradient's norm at its
best point has grown to RUNAWAY times the smallest it had at an earlier best point: near a
mode L-BFGS's gradient shrinks, while down a hierarchical funnel's neck (a group scale going
to 0, where the density grows without bound) it grows with the curvature. On E2 (election88,
K = 90) the refused start took 265-377 steps, and 75-132 with the test (:mod:`advi.laplace`
then runs no second stage); searches that reach a mode (the library's tests, E1) grew their
gradient at most 38-fold (benchmarks/README.md, "Measurements behind the library's
defaults")."""

GAIN_WINDOW = 100
"""Iterations over which the search's gain in log p is taken for its stall test (and
between two evaluations of log p by the compiled search)."""

WOLFE_DELTA = 0.1
"""delta of the approximate Wolfe conditions (Hager & Zhang 2005's default): the step's
decrease of the quadratic model is at least delta alpha |phi'(0)|."""

WOLFE_SIGMA = 0.9
"""sigma of the curvature condition, the usual value for quasi-Newton steps (Nocedal &
Wright 2006, Section 3.1)."""

LINE_SEARCH_TRIALS = 20
"""Gradients one step of the compiled search may try; a step that finds none ends it."""


class Search(NamedTuple):
    """What :func:`mode_search`'s function returns (arrays on the device).

    Attributes:
        u: (K,) the best point found, in the search's coordinates (zeta = base + scale u).
        log_p: () log p there (nats), -inf where no finite point was found.
        grad: (K,) grad_zeta log p there.
        steps: () int32, L-BFGS iterations run.
        converged: () bool, the stopping test holds at ``u``.
        failed: () bool, the search ended where a line search found no step: log p
            rises without bound or is not smooth along its direction (a funnel's neck).
    """

    u: Array
    log_p: Array
    grad: Array
    steps: Array
    converged: Array
    failed: Array


def mode_search(log_density: Callable[[Array, Any], Array], grad_rtol: float,
                gain_rtol: float = 0.0, stall_after: int = 0) -> Callable[..., Search]:
    """A jittable L-BFGS search ``(base (K,), scale (), max_steps () int32, abs_tol (), data)
    -> Search`` maximising ``log_density(base + scale u, data)`` from u = 0.

    Its steps evaluate gradients only (the module docstring's line search); log p is
    evaluated at u = 0, every :data:`GAIN_WINDOW` iterations, where the stopping test
    holds, and where the search ends, and the search returns the best of those points. It
    stops after ``max_steps`` iterations; at a non-finite log p or gradient at u = 0; where
    a line search finds no step in :data:`LINE_SEARCH_TRIALS` gradients; where log p,
    evaluated, is not finite or below the best evaluated so far; or when the test holds:
    with ``abs_tol`` > 0, every whitened gradient coordinate |scale grad_k| <= abs_tol;
    with ``abs_tol`` = 0, ||grad|| <= ``grad_rtol`` max(1, |log p|) (the tests of
    :func:`find_mode`); or when the search has stalled: log p rose by less than
    ``gain_rtol`` |log p| over the last :data:`GAIN_WINDOW` iterations (0: never; a stall
    does not count as the test met), tested from iteration ``stall_after`` on (a count;
    a window ending before it never stalls).
    """

    def search(base: Array, scale: Array, max_steps: Array, abs_tol: Array, data: Any
               ) -> Search:
        def negative(u: Array, d: Any) -> Array:
            return -log_density(base + scale * u, d)

        def met(log_p: Array, grad: Array) -> Array:
            absolute = jnp.max(jnp.abs(scale * grad)) <= abs_tol
            relative = jnp.linalg.norm(grad) <= grad_rtol * jnp.maximum(1.0, jnp.abs(log_p))
            return jnp.where(abs_tol > 0, absolute, relative)

        def check(c: _Carry, failed: Array) -> _Carry:
            data, held = read(c.held)
            log_p = -negative(c.u, data)
            grad = -c.grad_u / scale
            worse = ~jnp.isfinite(log_p) | (log_p < c.best.log_p)
            here = Search(c.u, log_p, grad, c.steps, met(log_p, grad), failed)
            best = jax.tree_util.tree_map(lambda old, new: jnp.where(worse, old, new),
                                          c.best, here)._replace(failed=failed)
            window = c.steps % GAIN_WINDOW == 0
            stalled = window & (c.steps >= max(stall_after, 1)) & (best.log_p - c.mark
                                                < gain_rtol * jnp.abs(best.log_p))
            stop = (failed | worse | best.converged | stalled | (c.steps >= max_steps))
            return c._replace(best=best, mark=jnp.where(window, best.log_p, c.mark),
                              stop=stop, held=held)

        def body(c: _Carry) -> _Carry:
            direction, lbfgs = optimizer.update(c.grad_u, c.lbfgs, c.u)
            u, grad_u, found, held = _line_search(jax.grad(negative), c.u, c.grad_u,
                                                  -direction, c.held, read)
            c = c._replace(u=u, grad_u=grad_u, lbfgs=lbfgs, held=held,
                           steps=c.steps + found.astype(jnp.int32))
            due = (~found | met(c.best.log_p, -grad_u / scale)
                   | (c.steps % GAIN_WINDOW == 0) | (c.steps >= max_steps))
            return jax.lax.cond(due, check, lambda c, _: c, c, ~found)

        optimizer, (held, read) = scale_by_compact_lbfgs(LBFGS_MEMORY), loop_data(data)
        u0 = jnp.zeros_like(base)
        value, grad_u = jax.value_and_grad(negative)(u0, data)
        finite = jnp.isfinite(value) & jnp.all(jnp.isfinite(grad_u))
        steps = jnp.zeros((), jnp.int32)
        start = Search(u0, jnp.where(finite, -value, -jnp.inf), -grad_u / scale, steps,
                       finite & met(-value, -grad_u / scale), jnp.zeros((), bool))
        c = _Carry(u0, grad_u, optimizer.init(u0), start, start.log_p, steps,
                   ~finite | start.converged | (max_steps <= 0), held)
        end = jax.lax.while_loop(lambda c: ~c.stop, body, c)
        return end.best._replace(steps=end.steps)

    return search


def run_search(search: Callable[..., Search], zeta: np.ndarray, scale: float, cap: int,
               abs_tol: float, data: Any, dtype: Any) -> tuple[np.ndarray, bool, int, bool]:
    """One stage of the Laplace start by ``search`` (a compiled :func:`mode_search`) from
    ``zeta`` (K,), its arguments cast to ``dtype``: (shift u (K,) float64, zeros where no
    finite point was found; test met; iterations; refused: ``failed`` with the test not
    met)."""
    out = search(np.asarray(zeta, dtype), np.asarray(scale, dtype), np.int32(cap),
                 np.asarray(abs_tol, dtype), data)
    met, refused = bool(out.converged), bool(out.failed) and not bool(out.converged)
    if not np.isfinite(float(out.log_p)):
        return np.zeros_like(zeta), False, int(out.steps), refused
    return np.asarray(out.u, np.float64), met, int(out.steps), refused


class _Carry(NamedTuple):
    """The compiled search's loop state: the current point and its gradient of -log p in
    u, the L-BFGS memory, the best point evaluated, log p at the last window's end,
    iterations, whether to stop, and the data's leaves held by :func:`advi.loops.loop_data`."""

    u: Array
    grad_u: Array
    lbfgs: Any
    best: Search
    mark: Array
    steps: Array
    stop: Array
    held: list


class _Trials(NamedTuple):
    """The line search's state: the next step, the bracket [lo, hi] and the directional
    derivatives at its ends, the last trial's gradient, trials made, whether the last was
    accepted, and the data's leaves held by :func:`advi.loops.loop_data`."""

    alpha: Array
    lo: Array
    slope_lo: Array
    hi: Array
    slope_hi: Array
    grad: Array
    trials: Array
    done: Array
    held: list


def _line_search(grad: Callable[[Array, Any], Array], u: Array, grad_u: Array,
                 direction: Array, held: list, read: Callable[[list], Any]
                 ) -> tuple[Array, Array, Array, list]:
    """A step along ``direction`` that meets the approximate Wolfe conditions, from
    gradients alone: (the new point, its gradient, found, the held data). Trials start at
    a unit step, double it below the curvature condition until a bracket is known, and
    then take the secant root of the directional derivative (safeguarded to the bracket's
    inner 80%; bisection after a non-finite gradient). ``grad(u, data)``, the data
    ``read(held)`` in each trial (:func:`advi.loops.loop_data`)."""
    slope0 = jnp.vdot(grad_u, direction)

    def trial(t: _Trials) -> _Trials:
        data, held = read(t.held)
        g = grad(u + t.alpha * direction, data)
        slope = jnp.vdot(g, direction)
        finite = jnp.isfinite(slope) & jnp.all(jnp.isfinite(g))
        over = finite & (slope > (2 * WOLFE_DELTA - 1) * slope0)
        short = finite & (slope < WOLFE_SIGMA * slope0)
        done = finite & ~over & ~short
        lo, slope_lo = jnp.where(short, t.alpha, t.lo), jnp.where(short, slope, t.slope_lo)
        hi = jnp.where(over | ~finite, t.alpha, t.hi)
        slope_hi = jnp.where(over, slope, jnp.where(finite, t.slope_hi, jnp.nan))
        width = hi - lo
        secant = jnp.clip(lo - slope_lo * width / (slope_hi - slope_lo), lo + 0.1 * width,
                          hi - 0.1 * width)
        following = jnp.where(jnp.isfinite(hi), jnp.where(jnp.isfinite(secant), secant,
                                                          lo + 0.5 * width), 2 * t.alpha)
        return _Trials(jnp.where(done, t.alpha, following), lo, slope_lo, hi, slope_hi, g,
                       t.trials + 1, done, held)

    one, descent = jnp.ones((), u.dtype), slope0 < 0
    t = jax.lax.while_loop(
        lambda t: ~t.done & (t.trials < LINE_SEARCH_TRIALS), trial,
        _Trials(one, 0 * one, slope0, jnp.inf * one, jnp.nan * one, grad_u,
                jnp.zeros((), jnp.int32), ~descent, held))
    found = t.done & descent
    return (jnp.where(found, u + t.alpha * direction, u), jnp.where(found, t.grad, grad_u),
            found, t.held)


def _runs(loss: Callable, stop: Callable, best: dict[str, Any], max_steps: int,
          restart: bool) -> int:
    """SciPy's L-BFGS-B on ``loss`` from ``best["zeta"]`` with ``stop`` as its callback (which
    sets ``best["stopped"]`` where a test ended it), run once more from the best point, its
    memory cleared, where ``restart``, the first run met a non-finite value (``loss`` sets
    ``best["lately"]``) short of the tests, steps are left and that run raised log p
    (``best["value"]``). Once: up a funnel's neck without the runaway test, every run
    raises log p. Returns the iterations run in all."""
    steps, again, runs = 0, True, 0
    while again:
        runs += 1
        before, best["lately"] = best["value"], False
        out = scipy.optimize.minimize(
            loss, best["zeta"], jac=True, method="L-BFGS-B", callback=stop,
            options={"maxiter": max_steps - steps, "gtol": 0.0, "ftol": 0.0, "maxls": 40},
        )
        steps += int(out.nit)
        again = (restart and runs == 1 and best["lately"] and not best["stopped"]
                 and steps < max_steps and best["value"] > before
                 and math.isfinite(best["value"]))
    return steps


class HostSearch(NamedTuple):
    """What :func:`find_mode` returns (on the host).

    Attributes:
        zeta: (K,) float64, the best point found.
        converged: bool, the gradient test holds there.
        steps: int, L-BFGS iterations run.
        ran_away: bool, the runaway test ended the search.
        nonfinite: bool, some point the search tried had a non-finite log p or gradient.
    """

    zeta: np.ndarray
    converged: bool
    steps: int
    ran_away: bool = False
    nonfinite: bool = False


def find_mode(
    value_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    zeta0: np.ndarray,
    max_steps: int,
    grad_rtol: float,
    abs_tol: float = 0.0,
    runaway: float = math.inf,
    restart: bool = True,
) -> HostSearch:
    """Maximise a log density by L-BFGS (SciPy's L-BFGS-B, no bounds) from ``zeta0``.

    Args:
        value_and_grad: ``zeta (K,) float64 -> (log p, grad (K,))`` on the host.
        zeta0: (K,) starting point.
        max_steps: iteration bound.
        grad_rtol: the relative test's tolerance.
        abs_tol: > 0: stop when max_k |grad_k| <= abs_tol; 0: when ||grad|| <=
            ``grad_rtol`` max(1, |log p|).
        runaway: stop (the test not met) when ||grad|| at the best point is more than
            ``runaway`` times the smallest it was at the best point of an earlier
            iteration (inf: never): the search climbs towards a singularity of the
            density, where no mode is (:data:`RUNAWAY`).
        restart: start once more where a line search met a non-finite value (below);
            False: that value ends the search.

    Returns:
        :class:`HostSearch`. A non-finite value ends SciPy's run (its line search does not
        step back from one: a trial noise scale of e^-51 in float32); where ``restart``,
        the search runs once more from its best point (:func:`_runs`), else it ends there.
    """
    best: dict[str, Any] = {"zeta": np.asarray(zeta0, np.float64), "value": -np.inf,
                            "least": math.inf, "ran_away": False, "nonfinite": False,
                            "stopped": False}

    def loss(zeta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = value_and_grad(zeta)
        value, grad = float(value), np.asarray(grad, np.float64)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            best["nonfinite"] = best["lately"] = True
            return np.inf, np.zeros_like(zeta)
        if value > best["value"]:
            best.update(zeta=zeta.copy(), value=value, grad=grad)
        return -value, -grad

    def small(grad: np.ndarray, value: float) -> bool:
        if abs_tol > 0:
            return bool(np.max(np.abs(grad)) <= abs_tol)
        return bool(np.linalg.norm(grad) <= grad_rtol * max(1.0, abs(value)))

    def stop(intermediate_result: scipy.optimize.OptimizeResult) -> None:
        if "grad" not in best:
            return
        norm = float(np.linalg.norm(best["grad"]))
        met = small(best["grad"], best["value"])
        best["ran_away"] = not met and norm > runaway * best["least"]
        if met or best["ran_away"]:
            best["stopped"] = True
            raise StopIteration
        best["least"] = min(best["least"], norm)

    steps = _runs(loss, stop, best, max_steps, restart)
    if "grad" not in best:
        return HostSearch(best["zeta"], False, steps, nonfinite=best["nonfinite"])
    return HostSearch(best["zeta"], small(best["grad"], best["value"]), steps,
                      best["ran_away"], best["nonfinite"])

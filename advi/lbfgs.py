"""The Laplace start's L-BFGS searches: on the host (SciPy) and compiled (optax).

:func:`find_mode` runs SciPy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995) on the host in
float64, calling the compiled log density and gradient; the Laplace start uses it up to
:data:`advi.laplace.HESSIAN_MAX_DIM`, where the compile of a search would cost more than a
whole fit and float32 iterates cannot meet the exact-mode test of a formed Hessian.

:func:`mode_search` is the search above that size, where the start spends its time in
L-BFGS (1,500 to 1,800 steps on E3, K = 25,250; 3,300 to 4,000 on E4): there SciPy's own
work and the host round trips cost 30% of each step, while compiled (``optax.lbfgs``, Liu &
Nocedal 1989, with optax's zoom line search for the strong Wolfe conditions, Nocedal &
Wright 2006, Algorithm 3.5, inside one ``jax.lax.while_loop``) the step is the evaluation
alone (benchmarks/README.md, "Measurements behind the library's defaults"). It maximises
log p(base + scale * u) over u from u = 0, so that a stage whitened by one common scale
(:func:`advi.laplace.common_scale`) runs in the same compiled function.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.optimize
from jax import Array

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
"""Iterations over which the search's gain in log p is taken for its stall test."""


class Search(NamedTuple):
    """What :func:`mode_search`'s function returns (arrays on the device).

    Attributes:
        u: (K,) the best point found, in the search's coordinates (zeta = base + scale u).
        log_p: () log p there (nats), -inf where no finite point was found.
        grad: (K,) grad_zeta log p there.
        steps: () int32, L-BFGS iterations run.
        converged: () bool, the stopping test holds at ``u``.
    """

    u: Array
    log_p: Array
    grad: Array
    steps: Array
    converged: Array


def mode_search(log_density: Callable[[Array, Any], Array], grad_rtol: float,
                gain_rtol: float = 0.0) -> Callable[..., Search]:
    """A jittable L-BFGS search ``(base (K,), scale (), max_steps () int32, abs_tol (), data)
    -> Search`` maximising ``log_density(base + scale u, data)`` from u = 0.

    It stops after ``max_steps`` iterations, at a non-finite value or gradient (returning
    the best finite point, as the host search does), or when the test holds: with
    ``abs_tol`` > 0, every whitened gradient coordinate |scale grad_k| <= abs_tol; with
    ``abs_tol`` = 0, ||grad|| <= ``grad_rtol`` max(1, |log p|) (the tests of
    :func:`find_mode`), or when the search has stalled: log p rose by less
    than ``gain_rtol`` |log p| over the last :data:`GAIN_WINDOW` iterations (0: never; a
    stall does not count as the test met).
    """

    def search(base: Array, scale: Array, max_steps: Array, abs_tol: Array, data: Any
               ) -> Search:
        def negative(u: Array) -> Array:
            return -log_density(base + scale * u, data)

        optimizer = optax.lbfgs(memory_size=LBFGS_MEMORY)
        value_and_grad = optax.value_and_grad_from_state(negative)

        def met(value: Array, grad: Array) -> Array:
            absolute = jnp.max(jnp.abs(scale * grad)) <= abs_tol
            relative = jnp.linalg.norm(grad) <= grad_rtol * jnp.maximum(1.0, jnp.abs(value))
            return jnp.where(abs_tol > 0, absolute, relative)

        def body(carry: tuple) -> tuple:
            u, state, best, mark, _ = carry
            value, grad_u = value_and_grad(u, state=state)
            log_p, grad = -value, -grad_u / scale
            finite = jnp.isfinite(log_p) & jnp.all(jnp.isfinite(grad))
            better = finite & (log_p > best.log_p)
            best = jax.tree_util.tree_map(
                lambda new, old: jnp.where(better, new, old),
                best._replace(u=u, log_p=log_p, grad=grad, converged=met(log_p, grad)), best)
            due = best.steps % GAIN_WINDOW == 0
            stalled = due & (best.steps > 0) & (best.log_p - mark
                                                < gain_rtol * jnp.abs(best.log_p))
            mark = jnp.where(due, best.log_p, mark)
            stop = ~finite | best.converged | stalled | (best.steps >= max_steps)
            update, next_state = optimizer.update(grad_u, state, u, value=value, grad=grad_u,
                                                  value_fn=negative)
            u = jnp.where(stop, u, optax.apply_updates(u, update))
            best = best._replace(steps=best.steps + jnp.where(stop, 0, 1))
            return u, next_state, best, mark, stop

        u0 = jnp.zeros_like(base)
        best = Search(u0, jnp.asarray(-jnp.inf, base.dtype), u0, jnp.zeros((), jnp.int32),
                      jnp.zeros((), bool))
        carry = (u0, optimizer.init(u0), best, best.log_p, jnp.zeros((), bool))
        return jax.lax.while_loop(lambda c: ~c[4], body, carry)[2]

    return search


class HostSearch(NamedTuple):
    """What :func:`find_mode` returns (on the host).

    Attributes:
        zeta: (K,) float64, the best point found.
        converged: bool, the gradient test holds there.
        steps: int, L-BFGS iterations run.
        ran_away: bool, the runaway test ended the search.
    """

    zeta: np.ndarray
    converged: bool
    steps: int
    ran_away: bool = False


def find_mode(
    value_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    zeta0: np.ndarray,
    max_steps: int,
    grad_rtol: float,
    abs_tol: float = 0.0,
    runaway: float = math.inf,
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

    Returns:
        :class:`HostSearch`. Non-finite values end the search at the last finite point.
    """
    best: dict[str, Any] = {"zeta": np.asarray(zeta0, np.float64), "value": -np.inf,
                            "least": math.inf, "ran_away": False}

    def loss(zeta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = value_and_grad(zeta)
        value, grad = float(value), np.asarray(grad, np.float64)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
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
            raise StopIteration
        best["least"] = min(best["least"], norm)

    out = scipy.optimize.minimize(
        loss, best["zeta"], jac=True, method="L-BFGS-B", callback=stop,
        options={"maxiter": max_steps, "gtol": 0.0, "ftol": 0.0, "maxls": 40},
    )
    if "grad" not in best:
        return HostSearch(best["zeta"], False, int(out.nit))
    return HostSearch(best["zeta"], small(best["grad"], best["value"]), int(out.nit),
                      best["ran_away"])

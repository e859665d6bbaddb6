"""A compiled L-BFGS search for the Laplace start of large models (optax's L-BFGS).

Above :data:`advi.laplace.HESSIAN_MAX_DIM` the Laplace start spends its time in L-BFGS
(1,500 to 1,800 steps on E3, K = 25,250; 3,300 to 4,000 on E4). On the host (SciPy's
L-BFGS-B) each step costs the log density's value and gradient plus SciPy's own work and
the host round trips, 30% of the step at that size; compiled (``optax.lbfgs``, Liu &
Nocedal 1989, with optax's zoom line search for the strong Wolfe conditions, Nocedal &
Wright 2006, Algorithm 3.5, inside one ``jax.lax.while_loop``) the step is the evaluation
alone, and 1,300 steps reach a higher log p sooner (benchmarks/README.md, "Measurements
behind the library's defaults"). Below that size the host search stays: there the compile
costs more than a whole fit, and float32 iterates cannot meet the exact-mode test of a
formed Hessian.

The search maximises log p(base + scale * u) over u from u = 0, so that a stage whitened by
one common scale (:func:`advi.laplace.common_scale`) runs in the same compiled function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array

LBFGS_MEMORY = 10
"""Correction pairs kept by the compiled L-BFGS (SciPy's L-BFGS-B default ``maxcor``)."""

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
    :func:`advi.laplace.find_mode`), or when the search has stalled: log p rose by less
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

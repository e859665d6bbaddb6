"""A Laplace start for ADVI: q centred at the mode of the log joint, scaled by its curvature.

The mode of log p(X, T^-1(zeta)) + log|det J| in zeta-space is found by L-BFGS
(``optax.lbfgs`` with its zoom line search, at most ``max_steps`` iterations), as
Pathfinder (Zhang, Carpenter, Gelman & Vehtari 2022, JMLR 23) starts its variational
search. With H the Hessian there:

- mean-field: mu = mode, sigma_k = 1 / sqrt(-H_kk). For a Gaussian posterior this *is* the
  optimum of the mean-field family (the KL(q || p)-optimal mean-field Gaussian of
  N(m, Lambda^-1) has mean m and variances 1 / Lambda_kk; Bishop 2006, Section 10.1.2);
- full-rank: mu = mode, L = cholesky((-H)^-1), the Laplace approximation itself.

The Hessian is formed exactly (``jax.hessian``) for K <= ``hessian_max_dim``; above that
the scales stay at 1 (omega = 0) and only the mean moves to the mode. The start is refused
(``ok`` False, and the caller falls back to its usual start) when L-BFGS does not reach a
stationary point within ``max_steps`` (a mode that runs off to a boundary, as in a
hierarchical funnel where the density grows without bound as a scale goes to 0), or when
the curvature there is not negative on every coordinate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array

from .families import Family, FullRankParams, MeanFieldParams

LAPLACE_MAX_STEPS = 1000
"""L-BFGS iterations allowed for the mode (each one gradient plus a line search). The
mixture of Figure 1 (a Dirichlet(10,000) weight makes it stiff) needs about 400."""

HESSIAN_MAX_DIM = 2000
"""Largest K whose Hessian is formed for the initial scales (K^2 floats, K gradients)."""

GRAD_RTOL = 1e-3
"""The mode is accepted when ||grad|| <= GRAD_RTOL * max(1, |log p|)."""


class LaplaceStart(NamedTuple):
    """What :func:`laplace_start` returns (all JAX arrays).

    Attributes:
        params: the family's parameters at the Laplace start (valid only where ``ok``).
        ok: () bool, True when the mode was found and its curvature is usable.
        steps: () int32, L-BFGS iterations used.
        grad_norm: () float, ||grad log p|| at the returned point.
    """

    params: Any
    ok: Array
    steps: Array
    grad_norm: Array


def find_mode(
    log_density: Callable[[Array], Array], zeta0: Array, max_steps: int = LAPLACE_MAX_STEPS
) -> tuple[Array, Array, Array, Array]:
    """Maximise ``log_density`` (zeta (K,) -> ()) by L-BFGS from ``zeta0``.

    Returns:
        (zeta (K,), converged () bool, steps () int32, grad_norm () float).
    """
    solver = optax.lbfgs()

    def loss(zeta: Array) -> Array:
        return -log_density(zeta)

    value_and_grad = optax.value_and_grad_from_state(loss)

    def small(state: Any) -> Array:
        grad_norm = optax.tree.norm(optax.tree.get(state, "grad"))
        value = optax.tree.get(state, "value")
        return grad_norm <= GRAD_RTOL * jnp.maximum(1.0, jnp.abs(value))

    def cond(carry: tuple[Array, Any, Array]) -> Array:
        zeta, state, k = carry
        finite = jnp.all(jnp.isfinite(zeta))
        return (k == 0) | ((k < max_steps) & finite & ~small(state))

    def body(carry: tuple[Array, Any, Array]) -> tuple[Array, Any, Array]:
        zeta, state, k = carry
        value, grad = value_and_grad(zeta, state=state)
        updates, state = solver.update(
            grad, state, zeta, value=value, grad=grad, value_fn=loss
        )
        return optax.apply_updates(zeta, updates), state, k + 1

    start = (zeta0, solver.init(zeta0), jnp.zeros((), jnp.int32))
    zeta, state, steps = jax.lax.while_loop(cond, body, start)
    grad_norm = optax.tree.norm(jax.grad(loss)(zeta))
    value = loss(zeta)
    converged = (
        jnp.all(jnp.isfinite(zeta))
        & jnp.isfinite(value)
        & (grad_norm <= GRAD_RTOL * jnp.maximum(1.0, jnp.abs(value)))
    )
    return zeta, converged, steps, grad_norm


def laplace_start(
    log_density: Callable[[Array], Array],
    family: Family,
    zeta0: Array,
    *,
    max_steps: int = LAPLACE_MAX_STEPS,
    hessian_max_dim: int = HESSIAN_MAX_DIM,
) -> LaplaceStart:
    """The Laplace start of the module docstring (jit-compatible).

    Args:
        log_density: ``zeta (K,) -> ()``, the target's log density (with its Jacobian).
        family: the variational family whose parameters to build.
        zeta0: (K,) float, where L-BFGS starts.
        max_steps: L-BFGS iteration bound.
        hessian_max_dim: above this K the scales are left at 1.

    Returns:
        :class:`LaplaceStart`.
    """
    mode, converged, steps, grad_norm = find_mode(log_density, zeta0, max_steps)
    dim = zeta0.shape[-1]
    if dim > hessian_max_dim:
        if family.name == "fullrank":
            return LaplaceStart(FullRankParams(mode, jnp.eye(dim)), converged, steps, grad_norm)
        return LaplaceStart(MeanFieldParams(mode, jnp.zeros_like(mode)), converged, steps,
                            grad_norm)
    precision = -jax.hessian(log_density)(mode)
    diag = jnp.diagonal(precision)
    ok = converged & jnp.all(jnp.isfinite(diag) & (diag > 0))
    omega = -0.5 * jnp.log(jnp.where(diag > 0, diag, 1.0))
    if family.name == "fullrank":
        L = jnp.linalg.cholesky(jnp.linalg.inv(precision))
        L = jnp.where(jnp.all(jnp.isfinite(L)), L, jnp.diag(jnp.exp(omega)))
        return LaplaceStart(FullRankParams(mode, L), ok, steps, grad_norm)
    return LaplaceStart(MeanFieldParams(mode, omega), ok, steps, grad_norm)

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
(``ok`` False, and the caller falls back to its usual start) when the curvature is not
negative on every coordinate, or when the point L-BFGS reached is more than
:data:`MODE_SD_TOL` of the Laplace standard deviation from the mode along some coordinate
(|g_k| / sqrt(-H_kk), a scale-free test: a raw gradient norm is not, and fails on
ill-conditioned posteriors in float32). A mode that runs off to a boundary, as in a
hierarchical funnel where the density grows without bound as a scale goes to 0, fails both.
Above ``hessian_max_dim`` the test is L-BFGS's own: ||grad|| <= GRAD_RTOL max(1, |log p|).
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
"""L-BFGS stops when ||grad|| <= GRAD_RTOL * max(1, |log p|)."""

LAPLACE_STAGES = 2
"""L-BFGS restarts, each preconditioned by the curvature where the last ended."""

MODE_SD_TOL = 0.1
"""The mode is accepted when every |g_k| / sqrt(-H_kk) (a Newton step in Laplace standard
deviations) is below this."""


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
    log_density: Callable[[Array], Array],
    zeta0: Array,
    max_steps: int = LAPLACE_MAX_STEPS,
    abs_tol: float | Array = 0.0,
) -> tuple[Array, Array, Array, Array]:
    """Maximise ``log_density`` (zeta (K,) -> ()) by L-BFGS from ``zeta0``.

    Stops when ||grad|| <= GRAD_RTOL max(1, |log p|), or, where ``abs_tol`` > 0, when
    max_k |grad_k| <= ``abs_tol`` instead (for coordinates scaled to unit curvature).

    Returns:
        (zeta (K,), converged () bool, steps () int32, grad_norm () float).
    """
    solver = optax.lbfgs()

    def loss(zeta: Array) -> Array:
        return -log_density(zeta)

    value_and_grad = optax.value_and_grad_from_state(loss)

    def small_grad(grad: Array, value: Array) -> Array:
        relative = optax.tree.norm(grad) <= GRAD_RTOL * jnp.maximum(1.0, jnp.abs(value))
        absolute = jnp.max(jnp.abs(grad)) <= abs_tol
        return jnp.where(abs_tol > 0, absolute, relative)

    def small(state: Any) -> Array:
        return small_grad(optax.tree.get(state, "grad"), optax.tree.get(state, "value"))

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
    value, grad = jax.value_and_grad(loss)(zeta)
    converged = jnp.all(jnp.isfinite(zeta)) & jnp.isfinite(value) & small_grad(grad, value)
    return zeta, converged, steps, optax.tree.norm(grad)


def _staged_mode(log_density: Callable[[Array], Array], zeta0: Array, max_steps: int
                 ) -> tuple[Array, Array, Array]:
    """L-BFGS in :data:`LAPLACE_STAGES` stages, each in coordinates scaled by the curvature
    the previous stage ended at (a Jacobi preconditioner; the first stage unscaled, stopping
    on the relative gradient norm; the later ones stopping when every gradient coordinate is
    below MODE_SD_TOL / 2, i.e. a Newton step of at most that many standard deviations): in
    float32 L-BFGS cannot reach the mode of a posterior whose scales span 1e-3..1e4 unscaled.

    Returns:
        (mode (K,), precision -H (K, K) there, total L-BFGS steps).
    """

    def stage(index: Array, carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        zeta, precision, steps = carry
        diag = jnp.diagonal(precision)
        scale = jnp.where(jnp.isfinite(diag) & (diag > 0), jax.lax.rsqrt(diag), 1.0)
        abs_tol = jnp.where(index > 0, MODE_SD_TOL / 2, 0.0)  # scaled stages: in sds
        shift, _, used, _ = find_mode(lambda u: log_density(zeta + scale * u),
                                      jnp.zeros_like(zeta), max_steps // LAPLACE_STAGES,
                                      abs_tol)
        zeta = zeta + scale * shift
        return zeta, -jax.hessian(log_density)(zeta), steps + used

    start = (zeta0, jnp.eye(zeta0.shape[-1], dtype=zeta0.dtype), jnp.zeros((), jnp.int32))
    return jax.lax.fori_loop(0, LAPLACE_STAGES, stage, start)


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
        max_steps: L-BFGS iteration bound (over all stages).
        hessian_max_dim: above this K the scales are left at 1.

    Returns:
        :class:`LaplaceStart`.
    """
    dim = zeta0.shape[-1]
    if dim > hessian_max_dim:
        mode, converged, steps, grad_norm = find_mode(log_density, zeta0, max_steps)
        if family.name == "fullrank":
            return LaplaceStart(FullRankParams(mode, jnp.eye(dim)), converged, steps, grad_norm)
        return LaplaceStart(MeanFieldParams(mode, jnp.zeros_like(mode)), converged, steps,
                            grad_norm)
    mode, precision, steps = _staged_mode(log_density, zeta0, max_steps)
    grad = jax.grad(log_density)(mode)
    diag = jnp.diagonal(precision)
    curved = jnp.all(jnp.isfinite(diag) & (diag > 0))
    newton_sd = jnp.abs(grad) / jnp.sqrt(jnp.where(diag > 0, diag, 1.0))
    ok = curved & jnp.all(jnp.isfinite(newton_sd)) & (jnp.max(newton_sd) < MODE_SD_TOL)
    grad_norm = jnp.linalg.norm(grad)
    omega = -0.5 * jnp.log(jnp.where(diag > 0, diag, 1.0))
    if family.name == "fullrank":
        L = jnp.linalg.cholesky(jnp.linalg.inv(precision))
        L = jnp.where(jnp.all(jnp.isfinite(L)), L, jnp.diag(jnp.exp(omega)))
        return LaplaceStart(FullRankParams(mode, L), ok, steps, grad_norm)
    return LaplaceStart(MeanFieldParams(mode, omega), ok, steps, grad_norm)

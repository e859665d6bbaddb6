"""Full-rank steps in the coordinates whitened by q itself, and the check of a fitted L.

The robust preset's full-rank steps (``precondition=True``). With q = N(mu, L L^T), write
the parameters near the current ones as mu' = mu + L a and L' = L B (B lower triangular,
B = I now): in (a, B) the posterior is about N(0, I) once q is close, whatever the scales
and correlations of the model's parameters, so one step size fits every coordinate and no
per-coordinate scaling (Adam) is needed. Along the gradient in those coordinates,
(u_a, u_B) (:func:`advi.elbo.whitened_elbo_grad`), a step is

    mu' = mu + eta L u_a,      L' = L (strict_tril(eta u_B) + diag(exp(eta diag(u_B)))),

so the diagonal of L' is L_kk exp(eta u_kk): it keeps its sign and cannot reach 0 (a
log-parameterised diagonal; eta u_kk is clipped to +-:data:`MAX_LOG_DIAG_STEP`, so that
neither can exp overflow or underflow far from the optimum). The rest of the step, the mean's
eta u_a and L's strictly lower eta u_B, is a trust region: scaled down, as one vector, to a
norm of at most :data:`MAX_WHITENED_STEP` (in q's own standard deviations: the KL divergence
of q' from q is 1/2 ||a||^2 + O(||B - I||^2)). Near the optimum the steps are far inside it;
far from it (a random start, L = I, on a posterior whose sds are 1e-3: the whitened gradient
L^T grad log p reaches 1e5-1e8) an unbounded step sent mu and L to non-finite values in
one iteration, at every eta down to the robust preset's smallest, where mean-field's Adam
steps (bounded by construction) fit. The fixed points are those of the plain gradient (L
is invertible). This is a natural-gradient step (Amari 1998) in
the cheapest exact form: the frame moves with q, and the Laplace start
(L = cholesky((-H)^-1), :mod:`advi.laplace`) begins already whitened.

Why: the diagonal scaling the mean-field family uses (:func:`advi.step.precondition_by_scale`)
scaled row k of L's Adam steps by the marginal sd of zeta_k, while L_kk is the
*conditional* sd, orders of magnitude smaller on correlated posteriors: on a correlated,
badly scaled regression those steps took L from the exact Laplace factor to entries many
orders of magnitude too large, where whitened steps end at the optimum (measurements:
benchmarks/README.md, "Measurements behind the library's defaults").
"""

from __future__ import annotations

import dataclasses
import warnings

import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.typing import ArrayLike

from .families import FullRankParams
from .result import ADVIError, ADVIResult

MAX_LOG_DIAG_STEP = 1.0
"""The most one step may change log L_kk: L's diagonal moves by at most a factor e."""

MAX_WHITENED_STEP = 1.0
"""The largest norm of one step's mean and off-diagonal part, (eta u_a, strict_tril(eta u_B)),
in q's own standard deviations (whitened coordinates): a trust region that only binds far
from the optimum, where q is many of its sds away from the posterior."""


def whitened_step(params: FullRankParams, grad: FullRankParams, eta: float | Array,
                  grad_samples: int) -> FullRankParams:
    """One natural-gradient step along the whitened gradient (u_a, u_B) of
    :func:`advi.elbo.whitened_elbo_grad` (the module docstring's update with u = grad).

    The step size is eta / (1 + (K + 1) / M): the noise of a whitened gradient is
    multiplicative (each draw's term is a rank-one eps eps^T times the distance to the
    optimum, with E||eps||^2 = K), and, as for the normalised LMS filter (Nagumo & Noda
    1967), steps larger than about 2 / (1 + (K + 1) / M) make the iterates diverge, as a
    plain eta = 0.1 does at M = 1 once K is a few tens (measurements: benchmarks/README.md,
    "Measurements behind the library's defaults").

    Args:
        params: full-rank parameters, mu (K,), L (K, K).
        grad: the whitened gradient, same shapes.
        eta: step-size scale (the robust preset's 0.1).
        grad_samples: M, the draws averaged in ``grad``.

    Returns:
        the new ``FullRankParams``; L stays lower triangular with the signs of its diagonal;
        the step's mean and off-diagonal part lie in the trust region of
        :func:`trust_region`.
    """
    eta = eta / (1.0 + (params.mu.shape[-1] + 1.0) / grad_samples)
    L = jnp.tril(params.L)
    log_diag = jnp.clip(eta * jnp.diagonal(grad.L), -MAX_LOG_DIAG_STEP, MAX_LOG_DIAG_STEP)
    shift, rotate = trust_region(eta * grad.mu, jnp.tril(eta * grad.L, -1))
    step = rotate + jnp.diag(jnp.exp(log_diag))
    return FullRankParams(params.mu + L @ shift, L @ step)


def trust_region(shift: ArrayLike, rotate: ArrayLike) -> tuple[Array, Array]:
    """``(shift, rotate)`` scaled by min(1, :data:`MAX_WHITENED_STEP` / ||(shift, rotate)||).

    Args:
        shift: (K,) the mean's step in whitened coordinates (q's sds), eta u_a.
        rotate: (K, K) the strictly lower part of L's step, strict_tril(eta u_B).

    Returns:
        both, scaled by the same factor in (0, 1]; unchanged where the norm is within the
        bound (non-finite ones stay non-finite, for the caller's check).
    """
    shift, rotate = jnp.asarray(shift), jnp.asarray(rotate)
    # the norm as largest entry x the norm of the entries over it: squares of entries
    # beyond 1e19 would overflow float32 and make the scale 0, a step that never moves
    big = jnp.maximum(jnp.max(jnp.abs(shift)), jnp.max(jnp.abs(rotate), initial=0.0))
    unit = jnp.where(big > 0, big, 1.0)
    norm = big * jnp.sqrt(jnp.sum((shift / unit)**2) + jnp.sum((rotate / unit)**2))
    scale = MAX_WHITENED_STEP / jnp.maximum(norm, MAX_WHITENED_STEP)
    return shift * scale, rotate * scale


def fullrank_problem(params: FullRankParams) -> str | None:
    """What is wrong with a fitted full-rank q, or None when it can be drawn from.

    Checked on the host: every entry of mu and L finite, L's diagonal nonzero, and the
    marginal sds sqrt(sum_j L_kj^2) finite and positive (a float overflow there makes every
    draw of that coordinate infinite).

    Args:
        params: ``FullRankParams``, mu (K,), L (K, K).

    Returns:
        a sentence naming the first problem found, with the offending values, or None.
    """
    mu = np.asarray(params.mu, np.float64)
    L = np.tril(np.asarray(params.L, np.float64))
    if not np.all(np.isfinite(mu)):
        return f"{int(np.sum(~np.isfinite(mu)))} of {mu.size} entries of mu are not finite"
    if not np.all(np.isfinite(L)):
        return f"{int(np.sum(~np.isfinite(L)))} entries of L are not finite"
    diag = np.abs(np.diagonal(L))
    if np.any(diag == 0):
        return f"L's diagonal has {int(np.sum(diag == 0))} zero entries (q is singular)"
    sd = np.sqrt(np.sum(L**2, axis=1))
    if not np.all(sd < np.finfo(np.asarray(params.L).dtype).max):
        return f"q's marginal sds overflow (largest {np.max(sd):.3g})"
    return None



def checked_fullrank(result: ADVIResult, start: FullRankParams | None) -> ADVIResult:
    """``result`` when its q is usable (:func:`fullrank_problem`), else the fit's start.

    Args:
        result: a full-rank fit's result.
        start: the Laplace start's parameters, or None where the fit did not start there.

    Returns:
        ``result``, or (with a ``RuntimeWarning`` naming the problem, also kept in
        ``result.warnings``) a copy whose q is the Laplace start, ``converged`` False and
        ``convergence_reason`` "fallback to the Laplace start".

    Raises:
        ADVIError: when q is unusable and there is no usable Laplace start; ``err.result``
            holds the unusable result.
    """
    problem = fullrank_problem(result.params)
    if problem is None:
        return result
    if start is None or fullrank_problem(start) is not None:
        raise ADVIError(f"the fitted full-rank q cannot be drawn from: {problem}; there is no "
                        "Laplace start to fall back to (use preset='robust', or "
                        "family='meanfield')", result)
    note = (f"the fitted full-rank q cannot be drawn from ({problem}) after "
            f"{result.num_iterations} iterations; returning the Laplace start instead")
    warnings.warn(note, RuntimeWarning, stacklevel=3)
    approximation = result.approximation._replace(params=start)
    return dataclasses.replace(result, approximation=approximation, converged=False,
                               convergence_reason="fallback to the Laplace start",
                               warnings=(*result.warnings, note), khat_weights_fn=None)

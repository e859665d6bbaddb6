"""The curvature -H of a log density as the Laplace start uses it (:mod:`advi.laplace`): the
whitening C with C C^T = (-H)^-1 (its Cholesky factor where -H is positive definite, the
saddle-free |-H|^-1/2 where it is not), the Newton step in Laplace standard deviations,
and -H itself by central differences of a compiled gradient. NumPy and SciPy on the host,
in float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg

from .aot import Lazy

EIGEN_FLOOR = 1e-12
"""Where -H is not positive definite, its eigenvalues' magnitudes are floored at this share of
the largest before they whiten a search (:func:`saddle_free`)."""

DIFFERENCES_MAX_FLOPS = 5e8
"""Up to this many floating-point operations in the 2K gradients of one differenced -H (XLA's
estimate for the compiled gradient, times 2K) the Laplace start forms every -H by
:func:`central_differences` and never compiles the exact Hessian (:func:`cheaper_precision`):
about a tenth of a second of calls on a CPU core, the least that compiling an exact Hessian
took on the validation suite. Every suite target but item response theory (K = 501) is below
it, as is E2; E1 is above (benchmarks/README.md, "Measurements behind the library's
defaults")."""


def whitening(precision: np.ndarray | None, dim: int) -> tuple[np.ndarray, bool]:
    """The whitening of a search by ``precision`` (-H, (K, K) float64, symmetric, or None).

    Returns:
        (C, definite): where precision is positive definite, C (K, K) lower triangular with
        C C^T = precision^-1 (from its Cholesky factor) and True; where it is not,
        :func:`saddle_free`'s C (K, K) and False; where it is None, not finite or zero (a
        gradient that did not change across its differences: flat, or below the float
        type's resolution, as float32 at data near 1e8), ones (K,) (a diagonal C: no
        whitening) and False.
    """
    if precision is None or not np.all(np.isfinite(precision)) or not np.any(precision):
        return np.ones(dim), False
    try:
        chol = np.linalg.cholesky(precision)
        return scipy.linalg.solve_triangular(chol, np.eye(dim), lower=True).T, True
    except np.linalg.LinAlgError:
        return saddle_free(precision), False


def saddle_free(precision: np.ndarray) -> np.ndarray:
    """C (K, K) = V |Lambda|^-1/2 for precision (K, K) = V Lambda V^T: C C^T =
    |precision|^-1, the saddle-free Newton metric (Dauphin et al. 2014), which whitens an
    ill-conditioned ridge whatever the sign of its curvature. Eigenvalues are floored at
    :data:`EIGEN_FLOOR` of the largest (a flat direction gets the largest scale allowed)."""
    eigenvalues, vectors = np.linalg.eigh(precision)
    size = np.abs(eigenvalues)
    size = np.maximum(size, EIGEN_FLOOR * max(float(np.max(size)), np.finfo(float).tiny))
    return vectors / np.sqrt(size)


def times(whiten: np.ndarray, u: np.ndarray, transpose: bool = False) -> np.ndarray:
    """C u (``transpose``: C^T u), (K,), for a whitening C given as a (K, K) matrix or as its
    (K,) diagonal, and u (K,)."""
    return ((whiten.T if transpose else whiten) @ u) if whiten.ndim == 2 else whiten * u


def newton_sd(precision: np.ndarray, grad: np.ndarray
              ) -> tuple[bool, np.ndarray, np.ndarray]:
    """Whether ``precision`` (-H, (K, K)) is positive definite, the Newton step
    |((-H)^-1 grad)_k| in Laplace sds, and those sds sqrt((-H)^-1_kk), both (K,) float64
    (inf where -H is not positive definite); ``grad`` (K,) is log p's gradient."""
    whiten, definite = whitening(precision, grad.size)
    if not definite:
        return False, np.full(grad.shape, np.inf), np.full(grad.shape, np.inf)
    cov = whiten @ whiten.T
    marginal = np.sqrt(np.diagonal(cov))
    with np.errstate(all="ignore"):
        return True, np.abs(cov @ grad) / marginal, marginal


def central_differences(grad: Callable[[np.ndarray], Any], zeta: np.ndarray,
                        dtype: Any) -> np.ndarray:
    """-H at ``zeta`` by central differences of the gradient: (K, K) float64, symmetrised.

    Column k is -(g(zeta + h_k e_k) - g(zeta - h_k e_k)) / (z+ - z-), with g = ``grad`` (a
    function of a (K,) NumPy array of ``dtype`` returning log p's gradient (K,) as any
    array NumPy can read: a compiled JAX function's result, which it returns before it
    has run, so that all 2K calls are dispatched before the first is read), h_k =
    eps^(1/3) max(1, |zeta_k|) for eps of ``dtype`` (the step that balances truncation and
    rounding error; Nocedal & Wright 2006, Section 8.1) and z+ - z- the step as taken,
    after rounding to ``dtype``. 2K calls of an already compiled gradient, where the exact
    Hessian (reverse over reverse) is a program of its own to compile: on the Lorenz bridge
    of the validation suite 8.4 s of compilation against 0.07 s of calls. In float32 the
    two agree to 1e-6 relative (Frobenius) on the suite's Laplace starts, down to the sign
    of an eigenvalue 1e-11 of the largest, and to 7e-4 on E2 (10,000 terms in each
    gradient; benchmarks/README.md). A non-finite gradient gives non-finite entries
    (:func:`whitening` then whitens nothing).
    """
    fall, step = _differences(grad, zeta, np.eye(np.size(zeta)), dtype)
    with np.errstate(all="ignore"):
        precision = fall.T / np.diagonal(step)
    return 0.5 * (precision + precision.T)


def hutchinson_diagonal(grad: Callable[[np.ndarray], Any], zeta: np.ndarray,
                        probes: np.ndarray, dtype: Any) -> np.ndarray:
    """Hutchinson's (1990) estimate of the diagonal of -H at ``zeta`` (K,), (K,) float64:
    the mean over the probes v_p (rows of ``probes``, (P, K) of +-1) of -(Hs_p)_k / s_pk,
    where H s_p = g(zeta + s_p / 2) - g(zeta - s_p / 2) is a central difference of the
    gradient g = ``grad`` (as :func:`central_differences`) along s_p = 2 h D v_p, D =
    diag(max(1, |zeta_k|)) and h = eps^(1/3) of ``dtype`` (s_p as taken, after rounding).
    Its expectation over random signs is -H_kk (the off-diagonal terms
    H_kj s_pj / s_pk average out), as for the estimate from exact Hessian-vector products
    (Bekas, Kokiopoulou & Saad 2007); it costs 2P calls of an already compiled gradient,
    where those products are a forward-over-reverse program of their own to compile
    (0.77 s of a cold 11-s fit at K = 2,519: benchmarks/README.md)."""
    fall, step = _differences(grad, zeta, probes, dtype)
    with np.errstate(all="ignore"):
        return np.mean(fall / step, axis=0)


def differences_suffice(value_and_grad: Any, dim: int) -> bool:
    """Whether the 2 ``dim`` calls of ``value_and_grad`` that :func:`central_differences`
    makes cost at most :data:`DIFFERENCES_MAX_FLOPS` (:func:`calls_suffice`)."""
    return calls_suffice(value_and_grad, 2 * dim)


def calls_suffice(compiled: Any, calls: int) -> bool:
    """Whether ``calls`` calls of ``compiled`` (a compiled JAX program,
    ``jax.stages.Compiled``) cost at most :data:`DIFFERENCES_MAX_FLOPS` by XLA's estimate
    (``cost_analysis()``: the same on every run of a program), less than compiling another
    program would take; False where XLA gives none (a program not yet compiled)."""
    cost = compiled.cost_analysis() if hasattr(compiled, "cost_analysis") else None
    if isinstance(cost, list | tuple):  # one dict per device program in older JAX releases
        cost = cost[0] if cost else None
    flops = cost.get("flops") if isinstance(cost, dict) else None
    return flops is not None and 0 <= calls * float(flops) <= DIFFERENCES_MAX_FLOPS


def cheaper_precision(value_and_grad: Any, exact: Callable[[Any, Any], Any] | None, dim: int
                      ) -> Callable[[Any, Any], Any] | None:
    """The Laplace start's ``precision`` (:class:`advi.laplace.LogDensityFunctions`), ``(zeta
    (K,) NumPy array, data) -> -H (K, K)``, or None where ``exact`` is None (no Hessian
    formed): ``exact`` (the jitted reverse-over-reverse Hessian), compiled on its first call
    (:class:`advi.aot.Lazy`), or, where :func:`differences_suffice` for the compiled
    ``value_and_grad(zeta, data) -> (log p (), grad (K,))``, :func:`central_differences` of
    that gradient in zeta's dtype (float64), which compile nothing; ``dim`` is K."""
    if exact is None or not differences_suffice(value_and_grad, dim):
        return None if exact is None else Lazy(exact)

    def differenced(zeta: Any, data: Any) -> np.ndarray:
        zeta = np.asarray(zeta)
        return central_differences(lambda z: value_and_grad(z, data)[1], zeta, zeta.dtype)

    return differenced


def _differences(grad: Callable[[np.ndarray], Any], zeta: np.ndarray, directions: np.ndarray,
                 dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """(g(zeta - u_p) - g(zeta + u_p), (zeta + u_p) - (zeta - u_p)), both (P, K) float64,
    for u_p = h D v_p with v_p the rows of ``directions`` (P, K), h = eps^(1/3) of ``dtype``
    and D = diag(max(1, |zeta_k|)); the points are rounded to ``dtype`` (the steps are as
    taken), and all 2P gradients are dispatched before the first is read."""
    zeta = np.asarray(zeta, np.float64)
    half = np.finfo(dtype).eps ** (1 / 3) * np.maximum(1.0, np.abs(zeta)) * directions
    up, down = np.asarray(zeta + half, dtype), np.asarray(zeta - half, dtype)
    grads = [(grad(a), grad(b)) for a, b in zip(up, down, strict=True)]
    step = np.asarray(up, np.float64) - np.asarray(down, np.float64)
    with np.errstate(all="ignore"):
        fall = np.stack([np.asarray(b, np.float64) - np.asarray(a, np.float64)
                         for a, b in grads])
    return fall, step

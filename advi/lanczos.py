"""Whether a log density curves upward somewhere at a point, from a few gradients: the
Laplace start's cheaper refusal test (:mod:`advi.laplace`).

A whitened stage of the start that stopped short of its test is refused where -H is not
positive definite there. Forming -H by central differences costs 2K gradients; Lanczos
(Paige 1972; Golub & Van Loan 2013, Section 10.1) on the whitened curvature
A = C^T (-H) C, with C the whitening the stage ran in, needs one product A q per step,
each a central difference of the gradient along C q (two gradients). Its smallest Ritz
value is the least Rayleigh quotient of A over the Krylov space built so far, so once it
is negative A is not positive definite; whitened, A's spectrum is far narrower than -H's
and a funnel's upward direction appears within a few steps (E2, K = 90: 5 to 12 steps from
the whitened gradient, against 180 gradients for -H). The direction found is confirmed by
one more difference along it, as taken in the float type (its sign does not rest on the
Lanczos recurrence's rounding). A search that finds none within its steps says nothing:
the caller forms -H as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .curvature import times

LANCZOS_MAX_STEPS = 20
"""Lanczos steps of :func:`curves_upward` at most (and at most K / 4, so that a search that
finds nothing costs at most a quarter of the 2K gradients of a differenced -H)."""


def lanczos_steps(dim: int) -> int:
    """Steps :func:`curves_upward` may take at dimension ``dim`` (0: not worth trying)."""
    return min(LANCZOS_MAX_STEPS, dim // 4)


def curves_upward(grad: Callable[[np.ndarray], Any], zeta: np.ndarray, whiten: np.ndarray,
                  dtype: Any, steps: int | None = None) -> bool:
    """Whether log p curves upward at ``zeta`` along some direction d: d^T (-H) d < 0, so
    that -H is not positive definite (module docstring).

    Args:
        grad: log p's gradient, ``(K,) NumPy array of dtype -> (K,)`` (any array NumPy can
            read: a compiled JAX function's result, dispatched before it is read).
        zeta: (K,) the point.
        whiten: the whitening C, (K, K) or its (K,) diagonal (:func:`advi.curvature.
            whitening`), in whose coordinates the search runs.
        dtype: the float type the gradient is evaluated in (its rounding sets the steps).
        steps: at most this many Lanczos steps (2 gradients each), from the whitened
            gradient C^T grad (the direction the stage was climbing; 1 gradient), plus 2
            gradients for the confirmation; None: :func:`lanczos_steps` of K.

    Returns:
        True where a Ritz vector's direction, differenced once more, has d^T (-H) d < 0;
        False where none was found (including a zero or non-finite gradient, and a K too
        small for the search to cost less than -H: ``steps`` 0).
    """
    zeta = np.asarray(zeta, np.float64)
    steps = lanczos_steps(zeta.size) if steps is None else steps
    if steps <= 0:
        return False
    start = times(whiten, np.asarray(grad(np.asarray(zeta, dtype)), np.float64),
                  transpose=True)
    norm = float(np.linalg.norm(start))
    if not (np.isfinite(norm) and norm > 0):
        return False
    basis, alpha, beta = [np.asarray(start, np.float64) / norm], [], list[float]()
    for _ in range(steps):
        product = _whitened_product(grad, zeta, whiten, dtype, basis[-1])
        if product is None:
            return False
        alpha.append(float(basis[-1] @ product))
        vectors = np.array(basis)
        for _ in range(2):  # full reorthogonalisation, twice (K is at most a few thousand)
            product = product - vectors.T @ (vectors @ product)
        values, ritz = np.linalg.eigh(np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1))
        if values[0] < 0:
            return _confirmed(grad, zeta, times(whiten, vectors.T @ ritz[:, 0]), dtype)
        size = float(np.linalg.norm(product))
        if not size > 1e-12 * max(abs(values[-1]), 1e-300):  # the Krylov space is invariant
            return False
        beta.append(size)
        basis.append(product / size)
    return False


def _difference(grad: Callable[[np.ndarray], Any], zeta: np.ndarray, direction: np.ndarray,
                dtype: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(g(zeta - s) - g(zeta + s), (zeta + s) - (zeta - s)) in float64 for s along
    ``direction``, its largest coordinate step eps^(1/3) max(1, |zeta_k|) of ``dtype`` (as
    :func:`advi.curvature.central_differences`), the points rounded to ``dtype``; None where
    the direction or a gradient is not finite, or the step rounds to nothing."""
    reach = np.max(np.abs(direction) / np.maximum(1.0, np.abs(zeta)))
    if not (np.isfinite(reach) and reach > 0):
        return None
    half = np.finfo(dtype).eps ** (1 / 3) / reach * direction
    up, down = np.asarray(zeta + half, dtype), np.asarray(zeta - half, dtype)
    above, below = grad(up), grad(down)  # both dispatched before either is read
    step = np.asarray(up, np.float64) - np.asarray(down, np.float64)
    fall = np.asarray(below, np.float64) - np.asarray(above, np.float64)
    if not (np.all(np.isfinite(fall)) and np.any(step)):
        return None
    return fall, step


def _whitened_product(grad: Callable[[np.ndarray], Any], zeta: np.ndarray,
                      whiten: np.ndarray, dtype: Any, q: np.ndarray) -> np.ndarray | None:
    """A q = C^T (-H) C q by one central difference along C q (None where it fails)."""
    direction = times(whiten, q)
    found = _difference(grad, zeta, direction, dtype)
    if found is None:
        return None
    fall, step = found
    # the step as taken is 2 t C q up to rounding: -H C q = fall / (2 t)
    scale = float(step @ direction) / float(direction @ direction)
    return times(whiten, fall / scale, transpose=True)


def _confirmed(grad: Callable[[np.ndarray], Any], zeta: np.ndarray, direction: np.ndarray,
               dtype: Any) -> bool:
    """Whether one central difference along ``direction`` gives d^T (-H) d < 0 for the step
    d as taken."""
    found = _difference(grad, zeta, direction, dtype)
    return found is not None and float(found[1] @ found[0]) < 0

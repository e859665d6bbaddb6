"""The curvature -H of a log density as the Laplace start uses it (:mod:`advi.laplace`): the
whitening C with C C^T = (-H)^-1 (its Cholesky factor where -H is positive definite, the
saddle-free |-H|^-1/2 where it is not), -H's condition, and the Newton step in Laplace
standard deviations. NumPy and SciPy on the host, in float64."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

EIGEN_FLOOR = 1e-12
"""Where -H is not positive definite, its eigenvalues' magnitudes are floored at this share of
the largest before they whiten a search (:func:`saddle_free`)."""


def whitening(precision: np.ndarray | None, dim: int) -> tuple[np.ndarray, bool]:
    """The whitening of a search by ``precision`` (-H, (K, K) float64, symmetric, or None).

    Returns:
        (C, definite): where precision is positive definite, C (K, K) lower triangular with
        C C^T = precision^-1 (from its Cholesky factor) and True; where it is not,
        :func:`saddle_free`'s C (K, K) and False; where it is None or not finite, ones (K,)
        (a diagonal C: no whitening) and False.
    """
    if precision is None or not np.all(np.isfinite(precision)):
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


def condition_number(precision: np.ndarray) -> float:
    """max |eigenvalue| / |smallest eigenvalue| of a symmetric (K, K) matrix (inf where
    singular, nan where not finite): :attr:`advi.laplace.LaplaceStart.condition`."""
    if not np.all(np.isfinite(precision)):
        return math.nan
    eigenvalues = np.linalg.eigvalsh(precision)
    least = abs(float(eigenvalues[0]))
    return float(np.max(np.abs(eigenvalues))) / least if least > 0 else math.inf


def newton_sd(precision: np.ndarray, grad: np.ndarray) -> tuple[bool, np.ndarray]:
    """Whether ``precision`` (-H, (K, K)) is positive definite, and the Newton step
    |((-H)^-1 grad)_k| in Laplace sds sqrt((-H)^-1_kk), (K,) float64 (inf where -H is not
    positive definite); ``grad`` (K,) is log p's gradient."""
    whiten, definite = whitening(precision, grad.size)
    if not definite:
        return False, np.full(grad.shape, np.inf)
    cov = whiten @ whiten.T
    with np.errstate(all="ignore"):
        return True, np.abs(cov @ grad) / np.sqrt(np.diagonal(cov))

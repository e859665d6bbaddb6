"""The draws of q behind the end-of-fit gradient check (:mod:`advi.checks`), and the
moments of their scaled gradients: on the host in NumPy, the log density and its gradient
by the fit's own compiled function, one draw at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import Array
from jax.typing import ArrayLike

from .families import host_standard_normal

GRAD_DRAWS = 200
"""Draws of q behind the end-of-fit gradient check."""

MINIBATCH_GRAD_DRAWS = 1000
"""Draws of q behind the gradient check of a minibatched fit, a minibatch of its own for
each antithetic pair (:mod:`advi.checks`): five times :data:`GRAD_DRAWS`, to make up part of
the power the minibatch noise takes (benchmarks/README.md, "Minibatched fits' gradient
check")."""

CHECK_SALT = 0x636B
"""Seeds, with the key the end-of-fit checks are given, their draws of q."""


def gradient_moments(scaled_grads: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and standard error over draws of per-draw gradients, non-finite rows dropped,
    on the host in float64.

    Args:
        scaled_grads: (S, K) per-draw gradients ``sd_k * d log p / d zeta_k`` at draws of q
            (any units; NumPy or JAX).

    Returns:
        (mean (K,), se (K,), n): float64 arrays, the mean over the n finite rows and its
        standard error ``std / sqrt(n)`` (ddof 1); nan where n < 2 (the mean itself where
        n = 1).
    """
    x = np.asarray(scaled_grads, np.float64)
    x = x[np.all(np.isfinite(x), axis=-1)]
    n = x.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(0) / n
        se = np.sqrt(np.square(x - mean).sum(0) / (n - 1) / n)
    return mean, se, n


def host_draws(params: Any, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(zeta, std, log_q)`` of a mean-field or full-rank q on the host, in NumPy (no
    program to compile: a compiled one took 0.07-0.09 s of a small model's cold fit,
    benchmarks/README.md): ``zeta = T(params, eps)`` (S, K) in the parameters' dtype for
    standard normal ``eps`` (S, K), q's marginal standard deviations (K,) and ``log
    q(zeta)`` (S,), both float64 (the closed forms of :mod:`advi.families`)."""
    mu, eps = np.asarray(jax.device_get(params.mu), np.float64), np.asarray(eps, np.float64)
    if hasattr(params, "omega"):
        log_sd = np.asarray(jax.device_get(params.omega), np.float64)
        std, log_det = np.exp(log_sd), float(np.sum(log_sd))
        zeta = mu + eps * std
    else:
        L = np.tril(np.asarray(jax.device_get(params.L), np.float64))
        std, log_det = np.sqrt(np.sum(L**2, axis=-1)), float(np.sum(np.log(np.abs(np.diag(L)))))
        zeta = mu + eps @ L.T
    log_q = -0.5 * np.sum(eps**2, -1) - log_det - 0.5 * mu.size * math.log(2 * math.pi)
    return zeta.astype(np.dtype(params.mu.dtype)), std, log_q


def scaled_gradients(value_and_grad: Callable[[np.ndarray, Any], tuple[Any, Any]],
                     params: Any, rng_key: Array, data: Any, salt: int = CHECK_SALT,
                     minibatched: bool = False) -> tuple[tuple, tuple, np.ndarray]:
    """The gradient check's moments: ``(gradient_moments(g), gradient_moments(c + 1),
    log_weights)`` of ``g = sd_k * d log p / d zeta_k`` at the draws ``zeta = T(params, eps)``
    (:func:`host_draws`), ``eps`` (S, K: :data:`GRAD_DRAWS`, or
    :data:`MINIBATCH_GRAD_DRAWS` where ``minibatched``) from ``rng_key``
    and ``salt`` (:func:`advi.families.host_standard_normal`), in antithetic pairs (eps,
    -eps), whose means are the units of both moments (``n`` counts pairs): a gradient
    linear in eps (a Gaussian posterior's) then carries no Monte Carlo noise into the
    location's mean, where q's own spread hid a mean-field q's offset along a correlated
    posterior's ridge (25 predictors, the Stan preset: 1.46 sd off at a z-score of 1.9).
    The mean of ``g`` is ``sd * dELBO/dmu`` (the entropy does not depend on mu); ``c`` are
    the terms of the sample covariance of ``g`` and ``eps`` (:func:`_covariance_terms`),
    whose mean plus 1 is ``dELBO/domega`` for a mean-field q (omega = log sd; E[g eps] =
    Cov(g, eps) as E[eps] = 0). Centred, the estimate carries no noise from g's mean: a q
    far from its optimum adds ``mean(g) * eps`` to each raw term ``g * eps``, which hid a q
    at a sixth of its optimum's sd (its offset then read within one optimum sd, its
    narrowness within the noise). ``log_weights`` ((S,) float64, ``log p(zeta) -
    log q(zeta)`` of the same draws, the values that came with the gradients) are what
    the k-hat check tests.

    The log density is evaluated one draw at a time by ``value_and_grad(zeta (K,), data)
    -> (log p (), grad (K,))``, a compiled function the fit already has (the Laplace
    start's), every draw dispatched before the first wait: a check that compiled the log
    density again, for a batch of draws, took longer to compile than a small model's whole
    fit (measurements: benchmarks/README.md, "Measurements behind the library's
    defaults").

    ``minibatched``: ``data`` is ``(key, arrays)`` of a minibatched log density, and each
    pair's two draws get a key of their own (split from ``data``'s key and ``salt``), so
    the pairs' minibatches are independent: the moments' standard errors then count the
    minibatch noise, where one minibatch for every draw would bias all of them alike.
    """
    draws = MINIBATCH_GRAD_DRAWS if minibatched else GRAD_DRAWS
    half = host_standard_normal(rng_key, (draws // 2, params.mu.shape[-1]),
                                params.mu.dtype, salt)
    eps = np.concatenate([half, -half])  # antithetic pairs: row i and row i + S/2
    zeta, std, log_q = host_draws(params, eps)
    args = [data] * len(zeta)
    if minibatched:  # data = (key, arrays): a minibatch of its own for each pair
        keys = np.asarray(jax.random.split(jax.random.fold_in(data[0], salt), len(half)))
        args = [(keys[i % len(half)], data[1]) for i in range(len(zeta))]  # host rows
    values, grads = zip(*jax.device_get([value_and_grad(row, arg)
                                         for row, arg in zip(zeta, args, strict=True)]),
                        strict=True)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows are dropped
        scaled = np.stack(grads).astype(np.float64) * std
        log_weights = np.asarray(values, np.float64) - log_q
        spread = _covariance_terms(scaled, eps) + 1
        return (gradient_moments(_pair_means(scaled)), gradient_moments(_pair_means(spread)),
                log_weights)


def _pair_means(x: np.ndarray) -> np.ndarray:
    """(S/2, K): the mean of rows i and i + S/2 of ``x`` (S, K), an antithetic pair's (a
    non-finite member makes the pair's row non-finite)."""
    half = x.shape[0] // 2
    return 0.5 * (x[:half] + x[half:2 * half])


def _covariance_terms(scaled: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """(S, K) float64 terms whose mean over the finite rows is the sample covariance
    (ddof 1) of ``scaled`` (S, K) and ``eps`` (S, K), coordinate by coordinate:
    ``(g - mean g) (eps - mean eps) n / (n - 1)``, each mean over the n finite rows of
    ``scaled`` (non-finite rows stay non-finite)."""
    finite = np.all(np.isfinite(scaled), axis=-1)
    n = int(finite.sum())
    if n < 2:
        return scaled * eps
    eps = np.asarray(eps, np.float64)
    centred = (scaled - scaled[finite].mean(0)) * (eps - eps[finite].mean(0))
    return centred * (n / (n - 1))

"""Gaussian variational families over the unconstrained space zeta in R^K.

Paper Section 2.3 (mean-field) and the journal version's full-rank family, with Stan's
parameterisation (``stan/variational/families/normal_meanfield.hpp``, ``normal_fullrank.hpp``):

- mean-field: q(zeta) = N(mu, diag(exp(omega))^2), parameters ``mu`` (K,), ``omega`` (K,),
  omega the log standard deviation;
- full-rank: q(zeta) = N(mu, L L^T), parameters ``mu`` (K,), ``L`` (K, K) lower triangular
  (entries above the diagonal are ignored, so their gradient is zero).

Both are written as an affine map of a standard normal, zeta = T(eps; params) (the elliptical
standardisation of Section 2.5), so the ELBO gradient code is shared.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

INIT_SCHEMES = ("random", "zero", "stan")
_LOG_2PI_E = math.log(2.0 * math.pi) + 1.0


def standard_normal(rng_key: Array, shape: tuple[int, ...], dtype: Any = float) -> Array:
    """Standard normal draws eps of ``shape``, the same values as
    ``jax.random.normal(rng_key, shape, dtype)`` (with JAX's partitionable threefry, the
    default).

    They are drawn as one flat vector and reshaped because XLA's CPU compiler is several
    times slower over the threefry of a 2-D shape, which was most of a small model's compile
    time (measurements: benchmarks/README.md, "Measurements behind the library's
    defaults").

    Args:
        rng_key: a JAX PRNG key.
        shape: the draws' shape, e.g. (M, K).
        dtype: their float type.

    Returns:
        an array of ``shape`` and ``dtype`` with N(0, 1) entries (dimensionless).
    """
    return jax.random.normal(rng_key, (math.prod(shape),), dtype).reshape(shape)


def host_standard_normal(rng_key: Array | np.ndarray, shape: tuple[int, ...], dtype: Any,
                         salt: int | tuple[int, ...] = 0) -> np.ndarray:
    """Standard normal draws of ``shape`` and ``dtype`` on the host, from NumPy's generator
    seeded by the bits of ``rng_key`` (a raw key, uint32 (2,)) and ``salt`` (one or more
    integers in [0, 2**32)): the same draws for the same key and salt, and no program to
    compile (the threefry and inverse error function of :func:`standard_normal` took
    0.1-0.3 s of a cold fit's compilation each time a small program drew them:
    benchmarks/README.md)."""
    bits = np.asarray(jax.device_get(rng_key)).ravel().tolist()
    words = [salt] if isinstance(salt, int) else list(salt)
    wide = np.dtype(dtype) != np.float32  # NumPy draws float32 itself (twice as fast)
    rng = np.random.default_rng([*bits, *words])
    return rng.standard_normal(shape, np.float64 if wide else np.float32).astype(dtype)


def narrowed(params: Any, factor: float) -> Any:
    """A mean-field or full-rank q's parameters with every scale times ``factor`` (omega +
    log factor, or L times factor) and the same mean."""
    if hasattr(params, "omega"):
        return params._replace(omega=params.omega + math.log(factor))
    return params._replace(L=params.L * factor)


def computed_once(zeta: Array | np.ndarray) -> Array:
    """``zeta`` (draws of q, any shape) computed once before the log density reads it:
    ``jax.lax.optimization_barrier``, which stops XLA from fusing the draws' computation
    (the normal generator's bits and inverse error function, the transform) into the
    log density's own loops. Fused, the draws are recomputed for every element those loops
    produce: a hierarchical model's gather of group effects for each observation recomputes
    them once per observation, a gradient several times its cost at a fixed point
    (measurements: benchmarks/README.md, "Measurements behind the library's defaults").
    The values are unchanged; the barrier is differentiable (the identity).

    Args:
        zeta: an array, e.g. (M, K) draws.

    Returns:
        the same array.
    """
    return jax.lax.optimization_barrier(zeta)


class MeanFieldParams(NamedTuple):
    """Mean-field Gaussian parameters.

    Attributes:
        mu: (K,) float, the mean of q in zeta-space.
        omega: (K,) float, log standard deviations (paper: omega = log sigma).
    """

    mu: Array | np.ndarray
    omega: Array | np.ndarray


class FullRankParams(NamedTuple):
    """Full-rank Gaussian parameters.

    Attributes:
        mu: (K,) float, the mean of q in zeta-space.
        L: (K, K) float, Cholesky factor of the covariance; only the lower triangle is used.
    """

    mu: Array | np.ndarray
    L: Array | np.ndarray


class Family(NamedTuple):
    """A variational family as pure functions (BlackJAX style).

    Attributes:
        name: "meanfield" or "fullrank".
        init: ``init(rng_key, dim, scheme) -> params``: JAX arrays of the default float
            type for a JAX key, NumPy float64 arrays for a ``numpy.random.Generator``
            (made on the host, with no program to compile: :mod:`advi.compiled`).
        transform: ``transform(params, eps) -> zeta``; eps (..., K) standard normal draws,
            zeta (..., K) draws from q.
        entropy: ``entropy(params) -> ()``, closed-form differential entropy of q in nats.
        log_q: ``log_q(params, zeta) -> (...)``, log density of q at zeta (..., K).
        std: ``std(params) -> (K,)``, marginal standard deviations of q.
    """

    name: str
    init: Callable
    transform: Callable
    entropy: Callable
    log_q: Callable
    std: Callable


def _init_mu(rng_key: Array | np.random.Generator, dim: int, scheme: str) -> Any:
    if scheme == "zero":  # Algorithm 1 of the paper
        return _xp(rng_key).zeros((dim,))
    if isinstance(rng_key, np.random.Generator):
        if scheme in ("random", "stan"):
            return (rng_key.standard_normal(dim) if scheme == "random" else
                    rng_key.uniform(-2.0, 2.0, dim))
    elif scheme == "random":  # the paper's empirical study: "a draw from a standard Gaussian"
        return jax.random.normal(rng_key, (dim,))
    elif scheme == "stan":  # Stan's default random inits, uniform(-2, 2)
        return jax.random.uniform(rng_key, (dim,), minval=-2.0, maxval=2.0)
    raise ValueError(f"init={scheme!r} is not a valid initialisation; use one of {INIT_SCHEMES}")


def _xp(rng_key: Array | np.random.Generator) -> Any:
    """NumPy for a NumPy generator (the parameters made on the host), else jax.numpy."""
    return np if isinstance(rng_key, np.random.Generator) else jnp


def _meanfield_init(rng_key: Array | np.random.Generator, dim: int, scheme: str = "random"
                    ) -> MeanFieldParams:
    return MeanFieldParams(_init_mu(rng_key, dim, scheme), _xp(rng_key).zeros((dim,)))


def _meanfield_transform(params: MeanFieldParams, eps: Array) -> Array:
    return jnp.asarray(params.mu) + jnp.exp(params.omega) * eps


def _meanfield_entropy(params: MeanFieldParams) -> Array:
    dim = params.mu.shape[-1]
    return 0.5 * dim * _LOG_2PI_E + jnp.sum(params.omega)


def _meanfield_log_q(params: MeanFieldParams, zeta: Array) -> Array:
    z = (zeta - params.mu) * jnp.exp(-params.omega)
    dim = params.mu.shape[-1]
    return -0.5 * jnp.sum(z**2, -1) - jnp.sum(params.omega) - 0.5 * dim * jnp.log(2 * jnp.pi)


def _meanfield_std(params: MeanFieldParams) -> Array:
    return jnp.exp(params.omega)


def _fullrank_init(rng_key: Array | np.random.Generator, dim: int, scheme: str = "random"
                   ) -> FullRankParams:
    return FullRankParams(_init_mu(rng_key, dim, scheme), _xp(rng_key).eye(dim))


def _fullrank_transform(params: FullRankParams, eps: Array) -> Array:
    return jnp.asarray(params.mu) + eps @ jnp.tril(params.L).T


def _log_abs_diag(params: FullRankParams) -> Array:
    return jnp.sum(jnp.log(jnp.abs(jnp.diagonal(params.L))))


def _fullrank_entropy(params: FullRankParams) -> Array:
    dim = params.mu.shape[-1]
    return 0.5 * dim * _LOG_2PI_E + _log_abs_diag(params)


def _fullrank_log_q(params: FullRankParams, zeta: Array) -> Array:
    L = jnp.tril(params.L)
    diff = jnp.moveaxis(zeta - params.mu, -1, 0)
    z = jax.scipy.linalg.solve_triangular(L, diff, lower=True)
    dim = params.mu.shape[-1]
    return -0.5 * jnp.sum(z**2, 0) - _log_abs_diag(params) - 0.5 * dim * jnp.log(2 * jnp.pi)


def _fullrank_std(params: FullRankParams) -> Array:
    return jnp.sqrt(jnp.sum(jnp.tril(params.L) ** 2, axis=-1))


MEANFIELD = Family(
    "meanfield",
    _meanfield_init,
    _meanfield_transform,
    _meanfield_entropy,
    _meanfield_log_q,
    _meanfield_std,
)
FULLRANK = Family(
    "fullrank",
    _fullrank_init,
    _fullrank_transform,
    _fullrank_entropy,
    _fullrank_log_q,
    _fullrank_std,
)
FAMILIES = {"meanfield": MEANFIELD, "fullrank": FULLRANK}


def get_family(name: str) -> Family:
    """Return the family called ``name``.

    Raises:
        ValueError: if ``name`` is not "meanfield" or "fullrank".
    """
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"family={name!r} is not a variational family; use one of {tuple(FAMILIES)}"
        ) from None

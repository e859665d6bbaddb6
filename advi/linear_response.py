"""Covariances of a fitted q: its own, or the linear-response correction of a mean-field q.

A mean-field q's variances are too small wherever the posterior is correlated (the
KL(q || p)-optimal mean-field Gaussian of N(m, Lambda^-1) has variances 1 / Lambda_kk, not
(Lambda^-1)_kk; Bishop 2006, Section 10.1.2). Linear response (Giordano, Broderick & Jordan
2018, "Covariances, robustness, and variational Bayes", JMLR 19(51), Eq. 9 and Section 3)
recovers the covariance from how q's mean moves when the log density is tilted: with
eta = (mu, omega) the mean-field parameters and E_q[zeta] = mu,

    Cov_LR = [(-d^2 ELBO / d eta d eta^T)^-1]_{mu, mu},

the mu-block of the inverse negative Hessian of the ELBO. For a Gaussian posterior
N(m, Lambda^-1) the ELBO's Hessian is block diagonal with mu-block -Lambda, so Cov_LR is
the exact posterior covariance (the (I - V H)^-1 V form of the paper is the same block,
written with V = Cov_q and H the Hessian with respect to the mean parameters).

The Hessian is that of the ELBO estimated at fixed draws eps_1..eps_S (the sample-average
objective of DADVI, Giordano, Ingram & Broderick 2024, JMLR 25(18), which reports linear
response covariances the same way), with antithetic pairs (eps, -eps): the mu-omega block
then vanishes exactly for a quadratic log density, so Cov_LR is exact on Gaussian
posteriors whatever S. The omega-omega block is not taken from the fixed draws: there its
entries carry the sample correlations of the eps (~1/sqrt(S)) times precision entries that
dwarf the diagonal on correlated posteriors, and at S = 32 that noise made the block
indefinite on a 26-parameter regression. By Price's theorem (Price 1958; Opper & Archambeau
2009), d^2 E_q[log p] / d omega_k^2 = 2 sigma_k^2 E_q[d^2 log p / d zeta_k^2] + sigma_k^4
E_q[d^4 log p / d zeta_k^4]; the block is taken as diagonal, 2 sigma_k^2 times the mu-block's
diagonal (the fourth-derivative term and the off-diagonal entries are zero on a Gaussian
posterior). The mu-block of the inverse is then the inverse of the Schur complement
-H_mumu - H_muomega D^-1 H_omegamu (D that diagonal block), formed in float64 on the host
after a unit-diagonal scaling.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .families import FullRankParams, MeanFieldParams, standard_normal

LR_DRAWS = 32
"""Draws (16 antithetic pairs) in the fixed-draw ELBO whose Hessian gives Cov_LR."""

METHODS = ("meanfield", "fullrank", "linear_response")


def _elbo_hessian(approximation: Any, rng_key: Array, num_draws: int) -> np.ndarray:
    """-Hessian (2K, 2K) float64 of the fixed-draw mean-field ELBO at (mu, omega)."""
    target, params = approximation.target, approximation.params
    if target.full_log_density_fn is not None:
        log_density = target.full_log_density_fn
    elif target.num_data is None:
        key = jax.random.PRNGKey(0)  # unused: the target does not subsample

        def log_density(zeta: Array, data: Any) -> Array:
            return target.log_density_fn(zeta, key, data)
    else:
        raise ValueError("method='linear_response' needs the full-data log density, which "
                         "this minibatched target does not keep")
    dim = params.mu.shape[-1]
    half = standard_normal(rng_key, (num_draws // 2, dim), params.mu.dtype)
    eps = jnp.concatenate([half, -half])

    def elbo(eta: Array, data: Any) -> Array:
        mu, omega = eta[:dim], eta[dim:]
        values = jax.vmap(log_density, in_axes=(0, None))(mu + jnp.exp(omega) * eps, data)
        return jnp.mean(values) + jnp.sum(omega)

    eta = jnp.concatenate([params.mu, params.omega])
    hessian = jax.jit(jax.hessian(elbo))(eta, target.data)
    hessian = -np.asarray(hessian, np.float64)
    return 0.5 * (hessian + hessian.T)


def linear_response_covariance(approximation: Any, rng_key: Array | None = None,
                               num_draws: int = LR_DRAWS) -> np.ndarray:
    """The linear-response covariance of a mean-field q (module docstring), in zeta-space.

    Args:
        approximation: an :class:`advi.Approximation` of the mean-field family.
        rng_key: key of the fixed draws (default ``PRNGKey(0)``).
        num_draws: S, even, >= 2: draws of the fixed-draw ELBO.

    Returns:
        (K, K) float64 covariance of zeta.

    Raises:
        ValueError: for a full-rank q, an odd or too small ``num_draws``, a minibatched
            target without a full-data log density, or when q is not at a maximum of the
            ELBO (the fit did not converge): E_q of a second derivative of log p >= 0, or
            a Schur complement that is not positive definite (naming its smallest
            eigenvalue).
    """
    if not isinstance(approximation.params, MeanFieldParams):
        raise ValueError("method='linear_response' corrects a mean-field q; this q is "
                         f"{approximation.family.name} (use method='fullrank')")
    if isinstance(num_draws, bool) or not isinstance(num_draws, int) or num_draws < 2 or (
            num_draws % 2):
        raise ValueError(f"num_draws={num_draws!r} must be an even integer >= 2")
    key = jax.random.PRNGKey(0) if rng_key is None else rng_key
    hessian = _elbo_hessian(approximation, key, num_draws)
    dim = approximation.params.mu.shape[-1]
    a, b = hessian[:dim, :dim], hessian[:dim, dim:]
    d = 2 * np.exp(2 * np.asarray(approximation.params.omega, np.float64)) * np.diagonal(a)
    if not np.all(d > 0):
        raise ValueError(
            f"E_q of the log density's second derivative is >= 0 along {int(np.sum(d <= 0))}"
            " coordinates: q is not at a maximum of the ELBO, so its linear response is "
            "undefined; refit to convergence")
    precision = a - (b / d) @ b.T  # the Schur complement: the mu-block of the inverse
    scale = np.sqrt(np.abs(np.diagonal(precision)))
    scale = np.where(scale > 0, scale, 1.0)
    try:
        chol = np.linalg.cholesky(precision / np.outer(scale, scale))
    except np.linalg.LinAlgError:
        smallest = float(np.min(np.linalg.eigvalsh(precision / np.outer(scale, scale))))
        raise ValueError(
            "the negative Hessian of the ELBO at q is not positive definite (smallest "
            f"eigenvalue {smallest:.3g} after unit-diagonal scaling): q is not at a maximum "
            "of the ELBO, so its linear response is undefined; refit to convergence"
        ) from None
    inverse = np.linalg.inv(chol)
    cov = (inverse.T @ inverse) / np.outer(scale, scale)
    return 0.5 * (cov + cov.T)


def covariance(approximation: Any, method: str | None = None, rng_key: Array | None = None,
               num_draws: int = LR_DRAWS) -> np.ndarray:
    """The covariance of zeta under ``method`` (see ``docs/library/accuracy.md``).

    Args:
        approximation: an :class:`advi.Approximation`.
        method: "meanfield" (diag(exp(2 omega)) of a mean-field q), "fullrank" (L L^T of a
            full-rank q), "linear_response" (:func:`linear_response_covariance`, mean-field
            q only), or None for q's own ("meanfield" or "fullrank").
        rng_key, num_draws: for "linear_response".

    Returns:
        (K, K) float64.

    Raises:
        ValueError: for an unknown method or one that does not apply to q's family.
    """
    params = approximation.params
    own = "fullrank" if isinstance(params, FullRankParams) else "meanfield"
    method = own if method is None else method
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; use one of {METHODS}")
    if method == "linear_response":
        return linear_response_covariance(approximation, rng_key, num_draws)
    if method != own:
        raise ValueError(f"method={method!r} does not apply to a {own} q; use "
                         f"method={own!r}" + (" or 'linear_response'" if own == "meanfield"
                                               else ""))
    if own == "fullrank":
        L = np.tril(np.asarray(params.L, np.float64))
        return L @ L.T
    return np.diag(np.exp(2 * np.asarray(params.omega, np.float64)))

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
dwarf the diagonal on correlated posteriors, enough at S = :data:`LR_DRAWS` to make the
block indefinite on a correlated regression. By Price's theorem (Price 1958; Opper &
Archambeau 2009), d^2 E_q[log p] / d omega_k^2 = 2 sigma_k^2 E_q[d^2 log p / d zeta_k^2] + sigma_k^4
E_q[d^4 log p / d zeta_k^4]; the block is taken as diagonal, 2 sigma_k^2 times the mu-block's
diagonal (the fourth-derivative term and the off-diagonal entries are zero on a Gaussian
posterior). The mu-block of the inverse is then the inverse of the Schur complement
-H_mumu - H_muomega D^-1 H_omegamu (D that diagonal block), formed in float64 on the host
after a unit-diagonal scaling.

Where it fails, it says so (:class:`LinearResponseWarning`). Write A = -H_mumu, C =
H_muomega D^-1 H_omegamu, so that Cov_LR = (A - C)^-1 = (I - A^-1 C)^-1 A^-1: A^-1 is the
covariance linear response would give without the coupling of q's mean to its variances,
and (I - A^-1 C)^-1 is the correction that coupling makes. By Stein's lemma H_muomega[j, k]
= sigma_k^2 E_q[d^3 log p / d zeta_j d zeta_k^2]: C is zero wherever log p is quadratic
(Cov_LR = A^-1, exact) and grows with the third derivatives, the posterior's departure from
a Gaussian. The paper's justification of Cov_LR is its condition that q's means follow the
posterior's means when log p is tilted (its Section 3, "Our key condition is that the MFVB
approximation provides good estimates of a select subset of posterior means"); where C is
large, a tilt moves q's mean mostly through q's variances, which is the non-Gaussian shape
q cannot follow, and the correction is near-singular: its size is set by D, whose diagonal
Price form above is exact only where log p is quadratic, and a relative error in D reaches
the variances multiplied by up to rho / (1 - rho) (rho < 1 the largest eigenvalue of A^-1
C: about 0 on Gaussian posteriors, large on hierarchical funnels such as eight schools). So
the diagnostic is the variance inflation of each coordinate by the coupling,
[Cov_LR]_kk / [A^-1]_kk (at most 1 / (1 - rho); 1 on a Gaussian posterior); above
:data:`LR_INFLATION_MAX` the coordinate is named in a warning. Where rho >= 1 (A - C
not positive definite while A is: Neal's funnel, the centred eight schools at about half
of its converged fits' seeds) there is no covariance to return, and the error names the
coordinates of the cancelled direction. On the
cases of ``benchmarks/bench_covariance.py`` the inflation stays near 1 wherever Cov_LR
matches the reference posterior and is several times larger for eight schools' log tau,
where it does not (measurements: benchmarks/README.md, "Measurements behind the library's
defaults"). The ratio of Cov_LR to q's own variances is no such test: it is large on
correlated posteriors where Cov_LR is exact (Bishop 2006, Section 10.1.2).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .families import FullRankParams, MeanFieldParams, standard_normal

LR_DRAWS = 32
"""Draws (16 antithetic pairs) in the fixed-draw ELBO whose Hessian gives Cov_LR."""

METHODS = ("meanfield", "fullrank", "linear_response")

LR_INFLATION_MAX = 1.5
"""Warn where the coupling of q's mean to its variances multiplies a coordinate's
linear-response variance by more than this (a ratio of variances; module docstring; 1 on
Gaussian posteriors): between the cases where Cov_LR is right and those where it is not
(measurements: benchmarks/README.md, "Measurements behind the library's defaults")."""

MAX_NAMED = 5
"""Coordinates named in a :class:`LinearResponseWarning` (the worst first)."""


class LinearResponseWarning(RuntimeWarning):
    """Linear response is unreliable for the coordinates named: the posterior is far from
    Gaussian there (module docstring of :mod:`advi.linear_response`)."""


class LinearResponse(NamedTuple):
    """What :func:`linear_response` returns (float64 numpy arrays, zeta-space).

    Attributes:
        covariance: (K, K) Cov_LR.
        uncoupled_variance: (K,) diag(A^-1), the variances without the mean-variance
            coupling (equal to Cov_LR's diagonal on a Gaussian posterior).
        inflation: (K,) diag(Cov_LR) / diag(A^-1) >= 1 (up to rounding), the diagnostic.
        names: (K,) str, each coordinate's name ("tau", "theta[3]") where every latent
            site's unconstrained size is its constrained size, else "zeta[k]".
    """

    covariance: np.ndarray
    uncoupled_variance: np.ndarray
    inflation: np.ndarray
    names: tuple[str, ...]


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


def _scaled(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``matrix`` scaled to a unit diagonal, and the scales (sqrt |diagonal|; 1 where the
    diagonal is zero)."""
    scale = np.sqrt(np.abs(np.diagonal(matrix)))
    scale = np.where(scale > 0, scale, 1.0)
    return matrix / np.outer(scale, scale), scale


def _definite(matrix: np.ndarray) -> bool:
    """Whether a symmetric float64 matrix is positive definite (Cholesky after scaling)."""
    try:
        np.linalg.cholesky(_scaled(matrix)[0])
    except np.linalg.LinAlgError:
        return False
    return True


def _coupling_message(schur: np.ndarray, names: tuple[str, ...]) -> str:
    """The error where -H's mu-block is positive definite but its Schur complement is not:
    the coupling of q's mean to its variances cancels the curvature along the direction of
    the latter's smallest eigenvalue (the correction's rho >= 1, module docstring), named
    by its largest components."""
    values, vectors = np.linalg.eigh(_scaled(schur)[0])
    weights = vectors[:, 0] ** 2
    top = [k for k in np.argsort(-weights)[:MAX_NAMED] if weights[k] >= 0.05]
    named = ", ".join(f"{_label(names, k)} {weights[k]:.0%}" for k in top)
    return (
        "the linear-response covariance is undefined for this q: the ELBO's curvature in q's "
        "means is cancelled by their coupling to q's variances along a direction made mostly "
        f"of {named} (smallest eigenvalue {values[0]:.3g} of the Schur complement after "
        "unit-diagonal scaling, where the mu-block alone is positive definite): either q is "
        "not at a maximum of the ELBO along it, or the posterior is too far from Gaussian "
        "there (e.g. a funnel's scale) for q's means to follow a tilt of it, which refitting "
        "does not mend; use a full-rank q (family=\"fullrank\"), a non-centred "
        "parameterisation, or MCMC")


def _label(names: tuple[str, ...], k: int) -> str:
    """Coordinate k's name, with its place in zeta where the name is a site's."""
    return names[k] if names[k] == f"zeta[{k}]" else f"{names[k]} (zeta[{k}])"


def _inverse(matrix: np.ndarray, what: str) -> np.ndarray:
    """The inverse of a symmetric positive definite float64 matrix, after a unit-diagonal
    scaling; ValueError (naming ``what`` and the smallest eigenvalue) when it is not."""
    scaled, scale = _scaled(matrix)
    try:
        chol = np.linalg.cholesky(scaled)
    except np.linalg.LinAlgError:
        smallest = float(np.min(np.linalg.eigvalsh(scaled)))
        raise ValueError(
            f"{what} is not positive definite (smallest eigenvalue {smallest:.3g} after "
            "unit-diagonal scaling): q is not at a maximum of the ELBO, so its linear "
            "response is undefined; refit to convergence"
        ) from None
    inverse = np.linalg.inv(chol)
    cov = (inverse.T @ inverse) / np.outer(scale, scale)
    return 0.5 * (cov + cov.T)


def _coordinate_names(target: Any) -> tuple[str, ...]:
    """Names of zeta's coordinates: latent sites in sorted order (the order in which
    :func:`advi.from_numpyro` ravels them), each raveled, when their constrained sizes add
    up to K; else "zeta[k]"."""
    dim = int(target.dim)
    fallback = tuple(f"zeta[{k}]" for k in range(dim))
    try:
        shapes = jax.eval_shape(target.constrain_fn, jnp.zeros(dim), target.data)
    except Exception:  # noqa: BLE001 - names are a courtesy; any failure falls back
        return fallback
    if not isinstance(shapes, dict):
        return fallback
    names: list[str] = []
    for site in sorted(shapes):
        shape = tuple(shapes[site].shape)
        names += [site] if shape == () else [
            f"{site}[{', '.join(map(str, idx))}]" for idx in np.ndindex(shape)]
    return tuple(names) if len(names) == dim else fallback


def linear_response(approximation: Any, rng_key: Array | None = None,
                    num_draws: int = LR_DRAWS) -> LinearResponse:
    """Cov_LR of a mean-field q and its diagnostic (module docstring), in zeta-space.

    Args:
        approximation: an :class:`advi.Approximation` of the mean-field family.
        rng_key: key of the fixed draws (default ``PRNGKey(0)``).
        num_draws: S, even, >= 2: draws of the fixed-draw ELBO.

    Returns:
        :class:`LinearResponse`: Cov_LR (K, K), diag(A^-1) (K,), the inflation (K,) and
        the coordinates' names.

    Raises:
        ValueError: for a full-rank q, an odd or too small ``num_draws``, a minibatched
            target without a full-data log density, or when q is not at a maximum of the
            ELBO (the fit did not converge): E_q of a second derivative of log p >= 0, or
            a mu-block of -H that is not positive definite (naming its smallest
            eigenvalue); and where the mu-block is but its Schur complement is not (the
            coupling of q's mean to its variances cancels the curvature: rho >= 1 in the
            module docstring, a funnel's scale), naming the coordinates of that direction
            and the remedies.
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
    uncoupled = np.diagonal(_inverse(a, "the mu-block of the negative ELBO Hessian")).copy()
    names = _coordinate_names(approximation.target)
    schur = a - (b / d) @ b.T  # the Schur complement: the mu-block of the inverse
    if not _definite(schur):
        raise ValueError(_coupling_message(schur, names))
    cov = _inverse(schur, "the negative Hessian of the ELBO at q")
    return LinearResponse(cov, uncoupled, np.diagonal(cov) / uncoupled, names)


def linear_response_covariance(approximation: Any, rng_key: Array | None = None,
                               num_draws: int = LR_DRAWS) -> np.ndarray:
    """The linear-response covariance of a mean-field q (module docstring), in zeta-space,
    with a :class:`LinearResponseWarning` where it is unreliable.

    Args:
        approximation: an :class:`advi.Approximation` of the mean-field family.
        rng_key: key of the fixed draws (default ``PRNGKey(0)``).
        num_draws: S, even, >= 2: draws of the fixed-draw ELBO.

    Returns:
        (K, K) float64 covariance of zeta.

    Warns:
        LinearResponseWarning: when the coupling of q's mean to its variances multiplies
            some coordinate's variance by more than :data:`LR_INFLATION_MAX` (a posterior
            far from Gaussian there, e.g. a funnel's scale), naming the worst
            :data:`MAX_NAMED` coordinates with their sds with and without the coupling and
            q's own.

    Raises:
        ValueError: as :func:`linear_response`.
    """
    lr = linear_response(approximation, rng_key, num_draws)
    flagged = np.flatnonzero(lr.inflation > LR_INFLATION_MAX)
    if flagged.size:
        worst = flagged[np.argsort(-lr.inflation[flagged])][:MAX_NAMED]
        own = np.exp(np.asarray(approximation.params.omega, np.float64))
        parts = [f"{_label(lr.names, k)}: sd {np.sqrt(lr.covariance[k, k]):.3g}, "
                 f"{np.sqrt(lr.uncoupled_variance[k]):.3g} without the coupling (variance "
                 f"x{lr.inflation[k]:.3g}), q's own {own[k]:.3g}" for k in worst]
        more = f" and {flagged.size - worst.size} more" if flagged.size > worst.size else ""
        warnings.warn(
            "the linear-response covariance is unreliable where the coupling of q's mean to "
            f"its variances inflates a variance more than {LR_INFLATION_MAX:g}x (1 on a "
            "Gaussian posterior; the posterior is far from Gaussian there, e.g. a funnel); "
            "sds of zeta, the unconstrained coordinates: "
            + "; ".join(parts) + more, LinearResponseWarning,
            stacklevel=4)  # the caller of ADVIResult.covariance
    return lr.covariance


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

    Warns:
        LinearResponseWarning: "linear_response" where it is unreliable
            (:func:`linear_response_covariance`).

    Raises:
        ValueError: for an unknown method or one that does not apply to q's family, and
            as :func:`linear_response` for "linear_response".
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

"""Full-rank steps whitened by q (advi.whitening, advi.elbo.whitened_elbo_grad): the robust
full-rank fit recovers an ill-conditioned Gaussian posterior exactly, with finite draws."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import advi
from advi.elbo import whitened_elbo_grad
from advi.whitening import (
    MAX_LOG_DIAG_STEP,
    checked_fullrank,
    fullrank_problem,
    whitened_step,
)

KEY = jax.random.PRNGKey(0)


def _ill_conditioned_gaussian(dim: int, seed: int = 0):
    """N(m, S): equicorrelated (0.95) coordinates at scales 1e-3 .. 1e3 (condition number
    ~1e14), the shape that drove the old full-rank steps to non-finite values."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-3, 3, dim)
    corr = 0.95 * np.ones((dim, dim)) + 0.05 * np.eye(dim)
    cov = corr * np.outer(scales, scales)
    mean = rng.normal(size=dim) * scales
    precision = np.linalg.inv(corr) / np.outer(scales, scales)
    return mean, cov, precision


def _target(mean, precision):
    m, P = jnp.asarray(mean, jnp.float32), jnp.asarray(precision, jnp.float32)

    def log_density(z):
        d = z - m
        return -0.5 * d @ (P @ d)

    return advi.from_log_density(log_density, m.size)


def test_whitened_gradient_vanishes_when_q_is_the_posterior():
    mean, cov, precision = _ill_conditioned_gaussian(8)
    target = _target(mean, precision)
    exact = advi.FullRankParams(jnp.asarray(mean, jnp.float32),
                                jnp.asarray(np.linalg.cholesky(cov), jnp.float32))
    est = whitened_elbo_grad(lambda z, _: target.log_density_fn(z, None, target.data), exact,
                             KEY, 4)
    # each draw's term is L^T grad log p + eps = 0: float32 rounding only, although L's
    # condition number is ~1e6 and the plain gradient's entries reach 1e6
    assert float(jnp.max(jnp.abs(est.grad.mu))) < 1e-2
    assert float(jnp.max(jnp.abs(est.grad.L))) < 1e-2


def test_whitened_step_keeps_the_diagonal_positive_and_l_triangular():
    params = advi.FullRankParams(jnp.zeros(3), jnp.eye(3))
    grad = advi.FullRankParams(jnp.ones(3), jnp.full((3, 3), -1e4))
    new = whitened_step(params, grad, 0.1, 1)
    L = np.asarray(new.L)
    assert np.all(np.diagonal(L) > 0) and np.all(np.isfinite(L))
    assert np.all(np.triu(L, 1) == 0)
    assert np.allclose(np.diagonal(L), np.exp(-MAX_LOG_DIAG_STEP))


def test_robust_fullrank_recovers_an_ill_conditioned_gaussian_with_finite_draws():
    dim = 30
    mean, cov, precision = _ill_conditioned_gaussian(dim)
    result = advi.fit(_target(mean, precision), rng_key=KEY, preset="robust",
                      family="fullrank", khat_samples=0)
    L = np.tril(np.asarray(result.params.L, np.float64))
    sd = np.sqrt(np.diag(cov))
    assert np.max(np.abs(np.asarray(result.params.mu) - mean) / sd) < 0.1
    assert np.max(np.abs(np.log(np.sqrt(np.sum(L**2, 1)) / sd))) < 0.1
    # the correlations too (the full covariance, in each coordinate's own sd)
    fitted = (L @ L.T) / np.outer(sd, sd)
    assert np.max(np.abs(fitted - cov / np.outer(sd, sd))) < 0.05
    draws = np.asarray(result.approximation.sample_zeta(KEY, 1000))
    assert np.all(np.isfinite(draws))
    assert fullrank_problem(result.params) is None


@pytest.mark.parametrize("params, problem", [
    (advi.FullRankParams(jnp.array([0.0, jnp.nan]), jnp.eye(2)), "mu"),
    (advi.FullRankParams(jnp.zeros(2), jnp.array([[1.0, 0.0], [jnp.inf, 1.0]])), "L"),
    (advi.FullRankParams(jnp.zeros(2), jnp.diag(jnp.array([1.0, 0.0]))), "zero"),
    (advi.FullRankParams(jnp.zeros(2), jnp.array([[3e38, 0.0], [3e38, 3e38]])), "overflow"),
])
def test_fullrank_problem_names_what_makes_q_unusable(params, problem):
    assert problem in fullrank_problem(params)


def test_an_unusable_fullrank_q_falls_back_to_the_laplace_start_or_raises():
    mean, cov, precision = _ill_conditioned_gaussian(3)
    result = advi.fit(_target(mean, precision), rng_key=KEY, preset="robust",
                      family="fullrank", khat_samples=0, max_iter=50)
    start = result.params
    broken = result.params._replace(L=result.params.L.at[1, 1].set(jnp.nan))
    bad = dataclasses.replace(result, approximation=result.approximation._replace(
        params=broken))
    with pytest.warns(RuntimeWarning, match="entries of L are not finite.*Laplace start"):
        fallback = checked_fullrank(bad, start)
    assert fallback.params is start and not fallback.converged
    assert fallback.convergence_reason == "fallback to the Laplace start"
    assert "Laplace start" in fallback.warnings[-1]
    with pytest.raises(advi.ADVIError, match="cannot be drawn from") as err:
        checked_fullrank(bad, None)
    assert err.value.result is bad

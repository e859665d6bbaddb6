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
    MAX_WHITENED_STEP,
    checked_fullrank,
    fullrank_problem,
    trust_region,
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


def test_the_trust_region_bounds_far_steps_and_leaves_near_ones():
    shift, rotate = jnp.array([3e6, -4e6]), jnp.array([[0.0, 0.0], [1e25, 0.0]])
    far = trust_region(shift, rotate)
    norm = np.sqrt(sum(np.sum(np.asarray(x, np.float64)**2) for x in far))
    assert np.all(np.isfinite(far[0])) and np.isclose(norm, MAX_WHITENED_STEP, rtol=1e-5)
    near = trust_region(jnp.array([0.3, -0.4]), 0.5 * rotate / 1e25)
    assert np.array_equal(near[0], np.float32([0.3, -0.4])) and float(near[1][1, 0]) == 0.5


def _polynomial_regression(X, y):
    """y ~ N(a + X b, s), b ~ N(0, 1), a ~ Student-t(3, 0, 10), s ~ HalfNormal(1)."""
    import numpyro
    import numpyro.distributions as dist

    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    a = numpyro.sample("a", dist.StudentT(3.0, 0.0, 10.0))
    s = numpyro.sample("s", dist.HalfNormal(1.0))
    numpyro.sample("y", dist.Normal(a + X @ b, s), obs=y)


@pytest.mark.parametrize("options", [{}, {"start": "init", "dtype": None}])
def test_robust_fullrank_fits_a_polynomial_regression_from_a_random_start(options):
    # x, ..., x^5 on U(0, 3) in float32 (X^T X's condition number 4e7, like posteriordb's
    # diamonds): at this seed float32's Hessian gives no usable Laplace start (6 seeds of
    # 10), and from the random start (L = I, posterior sds ~1e-2) the unbounded whitened
    # step sent q to non-finite values at iteration 0 at every eta down to 1e-4
    # (ADVIError), where mean-field fits
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 3.0, 2000)
    X = np.stack([x**k for k in range(1, 6)], 1)
    y = 1.0 + X @ (rng.normal(size=5) / X.std(0)) + 0.1 * rng.normal(size=x.size)
    result = advi.fit(_polynomial_regression, X.astype(np.float32), y.astype(np.float32),
                      rng_key=jax.random.PRNGKey(0), preset="robust", family="fullrank",
                      khat_samples=0, **options)
    if options:  # by default the start depends on the platform's float32 Hessian (JAX 0.12
        # refuses it at this seed, JAX 0.10 accepts it): the fit must hold either way
        assert result.start.startswith("init=random")
    # the exact posterior of (a, b) given s = 0.1 (a's Student-t prior as N(0, 10^2))
    Z = np.column_stack([np.ones(x.size), X])
    precision = Z.T @ Z / 0.01 + np.diag([0.01] + [1.0] * 5)
    mean = np.linalg.solve(precision, Z.T @ y / 0.01)
    sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    off = np.abs(np.asarray(result.params.mu, np.float64)[:6] - mean) / sd
    assert np.max(off) < 0.1, off
    assert fullrank_problem(result.params) is None


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


def _eight_schools(y, sigma):
    """Non-centred eight schools: zeta = (mu, log tau, theta_tilde[0..7])."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("schools", y.shape[0]):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)


# The full-rank optimum of that posterior (zeta's means and sds), from a fixed-draw ELBO with
# 40,000 antithetic draws maximised by L-BFGS in float64 (three draw sets and starts agree to
# 0.003 in the means, 0.01 in the sds; docs/library/accuracy.md).
EIGHT_SCHOOLS_OPTIMUM_MEAN = np.array(
    [4.481, 0.851, 0.283, 0.086, -0.078, 0.054, -0.155, -0.069, 0.328, 0.066])
EIGHT_SCHOOLS_OPTIMUM_SD = np.array(
    [3.213, 0.727, 0.977, 0.940, 0.974, 0.941, 0.919, 0.941, 0.948, 0.977])


def test_robust_fullrank_reaches_the_family_optimum_on_eight_schools():
    # with M = 1 this seed drifted into the funnel: log tau's mean -15, 22 optimum sds off
    y = jnp.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    result = advi.fit(_eight_schools, y, sigma, rng_key=jax.random.PRNGKey(2),
                      preset="robust", family="fullrank", khat_samples=0)
    assert result.converged
    mean = np.asarray(result.params.mu, np.float64)
    sd = np.sqrt(np.diag(result.covariance()))
    off = np.abs(mean - EIGHT_SCHOOLS_OPTIMUM_MEAN) / EIGHT_SCHOOLS_OPTIMUM_SD
    assert np.max(off) < 0.15, off
    assert np.max(np.abs(np.log(sd / EIGHT_SCHOOLS_OPTIMUM_SD))) < 0.1


def test_the_robust_preset_picks_grad_samples_by_family():
    from advi.presets import FULLRANK_GRAD_SAMPLES, resolve

    assert advi.PRESETS["robust"].grad_samples is None
    assert resolve("robust", {}).grad_samples == 1
    assert resolve("robust", {"family": "fullrank"}).grad_samples == FULLRANK_GRAD_SAMPLES
    assert resolve("robust", {"family": "fullrank", "grad_samples": 1}).grad_samples == 1
    assert resolve("stan", {"family": "fullrank"}).grad_samples == 1

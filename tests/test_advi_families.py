"""Variational families: entropy and log q against closed forms and scipy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import advi


def test_meanfield_entropy_and_log_q_match_scipy():
    params = advi.MeanFieldParams(jnp.array([0.5, -1.0, 2.0]), jnp.array([0.1, -0.7, 0.3]))
    sd = np.exp(np.asarray(params.omega))
    ref = stats.multivariate_normal(np.asarray(params.mu), np.diag(sd**2))
    assert float(advi.MEANFIELD.entropy(params)) == pytest.approx(ref.entropy(), rel=1e-5)
    zeta = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 3.0]], np.float32)
    np.testing.assert_allclose(advi.MEANFIELD.log_q(params, zeta), ref.logpdf(zeta), rtol=1e-5)


def test_fullrank_entropy_log_q_and_draws_match_covariance():
    L = jnp.array([[1.0, 0.0], [0.8, 0.5]])
    params = advi.FullRankParams(jnp.array([1.0, -1.0]), L)
    cov = np.asarray(L @ L.T)
    ref = stats.multivariate_normal(np.asarray(params.mu), cov)
    assert float(advi.FULLRANK.entropy(params)) == pytest.approx(ref.entropy(), rel=1e-5)
    zeta = np.array([[0.3, 0.2], [2.0, -3.0]], np.float32)
    np.testing.assert_allclose(advi.FULLRANK.log_q(params, zeta), ref.logpdf(zeta), rtol=1e-5)
    eps = jax.random.normal(jax.random.PRNGKey(0), (200_000, 2))
    draws = np.asarray(advi.FULLRANK.transform(params, eps))
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.02)


@pytest.mark.parametrize("family", [advi.MEANFIELD, advi.FULLRANK])
def test_an_init_drawn_on_the_host_follows_its_scheme(family):
    """With a NumPy generator (how a fit draws its initial q: no program to compile) the
    schemes hold as with a JAX key: "random" N(0, 1) means, "stan" uniform(-2, 2), "zero"
    zeros; unit scales; NumPy arrays; the same generator seed, the same q."""
    dim = 20_000 if family is advi.MEANFIELD else 2_000  # full-rank: L is dim x dim
    tol = 5 / np.sqrt(dim)
    draws = {scheme: family.init(np.random.default_rng(0), dim, scheme)
             for scheme in ("random", "stan", "zero")}
    for params in draws.values():
        assert all(isinstance(x, np.ndarray) for x in params)
        scale = params.omega if family is advi.MEANFIELD else params.L[:3, :3] - np.eye(3)
        assert not np.any(scale)
    assert abs(draws["random"].mu.mean()) < tol and abs(draws["random"].mu.std() - 1) < tol
    stan = draws["stan"].mu
    assert stan.min() >= -2 and stan.max() <= 2 and abs(stan.std() - 4 / np.sqrt(12)) < tol
    assert not np.any(draws["zero"].mu)
    np.testing.assert_array_equal(family.init(np.random.default_rng(0), dim, "random").mu,
                                  draws["random"].mu)
    with pytest.raises(ValueError, match="init='ones' is not a valid"):
        family.init(np.random.default_rng(0), 3, "ones")


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="family='gaussian'.*meanfield"):
        advi.get_family("gaussian")


def test_pareto_khat_separates_good_and_heavy_tailed_weights():
    rng = np.random.default_rng(0)
    z = rng.normal(size=2000)  # draws from q = N(0, 1)
    same = stats.norm(0, 1.05).logpdf(z) - stats.norm.logpdf(z)
    wide = stats.norm(0, 3.0).logpdf(z) - stats.norm.logpdf(z)  # p much wider than q
    assert advi.pareto_khat(same) < 0.5
    assert advi.pareto_khat(wide) > 0.7

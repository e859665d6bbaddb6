"""The reparameterisation gradient: finite differences, the paper's Eq. for mu and omega,
and the minibatch estimator's unbiasedness."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi


def _gaussian_target(m, s):
    return advi.from_log_density(lambda z: -0.5 * jnp.sum(((z - m) / s) ** 2), dim=m.shape[0])


def test_gradient_matches_finite_differences_of_the_same_draws():
    target = advi.from_log_density(
        lambda z: -jnp.sum(jnp.log1p(z**2)) + jnp.sin(z[0] * z[1]), dim=2
    )
    params = advi.MeanFieldParams(jnp.array([0.3, -0.4]), jnp.array([-0.2, 0.1]))
    key = jax.random.PRNGKey(3)
    with jax.enable_x64(True):
        params64 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), params)

        def elbo(p):
            return advi.elbo_grad(target.log_density, advi.MEANFIELD, p, key, 5).elbo

        grad = advi.elbo_grad(target.log_density, advi.MEANFIELD, params64, key, 5).grad
        h = 1e-6
        for field in ("mu", "omega"):
            for i in range(2):
                bump = jnp.zeros(2, jnp.float64).at[i].set(h)
                up = params64._replace(**{field: getattr(params64, field) + bump})
                down = params64._replace(**{field: getattr(params64, field) - bump})
                fd = (elbo(up) - elbo(down)) / (2 * h)
                np.testing.assert_allclose(getattr(grad, field)[i], fd, rtol=1e-5, atol=1e-7)


def test_expected_gradient_is_the_papers_equation():
    # Gaussian target N(m, s^2): E[grad_mu] = -(mu - m)/s^2, E[grad_omega] = 1 - sigma^2/s^2.
    m, s = jnp.array([1.0, -2.0]), jnp.array([0.5, 2.0])
    target = _gaussian_target(m, s)
    params = advi.MeanFieldParams(jnp.array([0.0, 0.0]), jnp.array([0.2, -0.3]))
    M = 20_000
    est = advi.elbo_grad(target.log_density, advi.MEANFIELD, params, jax.random.PRNGKey(0), M)
    sigma = np.exp(np.asarray(params.omega))
    mu_expected = -(np.asarray(params.mu) - np.asarray(m)) / np.asarray(s) ** 2
    omega_expected = 1.0 - sigma**2 / np.asarray(s) ** 2
    shift = np.asarray(params.mu) - np.asarray(m)
    var = np.asarray(s) ** 2
    se_mu = sigma / var / np.sqrt(M)
    se_omega = np.sqrt((shift * sigma / var) ** 2 + 2 * (sigma**2 / var) ** 2) / np.sqrt(M)
    assert np.all(np.abs(np.asarray(est.grad.mu) - mu_expected) < 5 * se_mu)
    assert np.all(np.abs(np.asarray(est.grad.omega) - omega_expected) < 5 * se_omega)


def _regression(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("data", x.shape[0]) as idx:
        numpyro.sample("y", dist.Normal(w * x[idx], sigma), obs=y[idx])


def test_minibatch_log_density_is_unbiased_for_the_full_one():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=200), jnp.float32)
    y = 2.0 * x + jnp.asarray(rng.normal(size=200), jnp.float32)
    full = advi.from_numpyro(_regression, (x, y))
    mini = advi.from_numpyro(_regression, (x, y), minibatch_size=20)
    assert mini.num_data == 200
    zeta = jnp.array([1.5, 0.1])
    keys = jax.random.split(jax.random.PRNGKey(1), 20_000)
    values = np.asarray(jax.vmap(mini.log_density, in_axes=(None, 0))(zeta, keys))
    exact = float(full.full_log_density(zeta))
    se = values.std() / np.sqrt(values.size)
    assert abs(values.mean() - exact) < 4 * se
    assert values.std() > 0  # it really subsamples


def test_elbo_of_a_minibatched_target_in_batches_is_one_estimate_whatever_the_batch():
    """Drawn in batches, each draw is made from its own key: batches of 1, 5 and 12 give the
    same estimate and log weights; all at once draws differently, and over 1,000 draws the
    two agree within their Monte Carlo error."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=200), jnp.float32)
    y = 2.0 * x + jnp.asarray(rng.normal(size=200), jnp.float32)
    mini = advi.from_numpyro(_regression, (x, y), minibatch_size=20)
    family = advi.get_family("meanfield")
    params = family.init(jax.random.PRNGKey(0), mini.dim, "random")

    def log_density(zeta, key):
        return mini.log_density(zeta, key)

    key = jax.random.PRNGKey(4)
    first = advi.elbo.elbo_estimate(log_density, family, params, key, 12, 1)
    for batch_size in (5, 12):
        batched = advi.elbo.elbo_estimate(log_density, family, params, key, 12, batch_size)
        np.testing.assert_allclose(batched.elbo, first.elbo, rtol=1e-5)
        np.testing.assert_allclose(batched.log_weights, first.log_weights, rtol=1e-5,
                                   atol=1e-3)
    assert bool(first.ok) and np.unique(np.asarray(first.log_weights)).size == 12
    many = [advi.elbo.elbo_estimate(log_density, family, params, key, 1000, batch_size)
            for batch_size in (None, 10)]
    spread = np.std(np.asarray(many[0].log_weights)) / np.sqrt(1000)
    assert abs(float(many[0].elbo) - float(many[1].elbo)) < 4 * np.sqrt(2) * spread


def test_log_weights_are_log_z_where_q_is_the_posterior():
    """log p(zeta) = log Z + log N(zeta; m, Sigma) and q = N(m, Sigma): every draw's log
    weight log p - log q is log Z, for both families, all at once and in batches (whose
    log q comes from the draws' eps)."""
    log_z, m = 3.0, jnp.array([0.5, -1.0, 2.0])
    chol = jnp.array([[1.5, 0.0, 0.0], [0.6, 0.4, 0.0], [-0.3, 0.2, 0.8]])
    correlated = advi.from_log_density(lambda z: log_z + jax.scipy.stats.multivariate_normal
                                       .logpdf(z, m, chol @ chol.T), dim=3)
    sd = jnp.array([0.7, 2.0, 0.3])
    independent = advi.from_log_density(
        lambda z: log_z + jnp.sum(jax.scipy.stats.norm.logpdf(z, m, sd)), dim=3)
    cases = ((independent, advi.MEANFIELD, advi.MeanFieldParams(m, jnp.log(sd))),
             (correlated, advi.FULLRANK, advi.FullRankParams(m, chol)))
    for target, family, params in cases:
        for batch_size in (None, 4):
            est = advi.elbo.elbo_estimate(target.log_density, family, params,
                                          jax.random.PRNGKey(1), 20, batch_size)
            np.testing.assert_allclose(est.log_weights, log_z, atol=2e-4)
            # the ELBO, mean log p + H[q], is log Z only on average: log p's sd is sqrt(3/2)
            assert abs(float(est.elbo) - log_z) < 4 * np.sqrt(1.5 / 20)


def test_non_finite_draws_are_redrawn_within_a_budget():
    # log density -inf where z_0 > 0: half of q's draws are redrawn until all are finite;
    # a density that is nowhere finite spends the budget of 10 M redraws and says so
    half = advi.from_log_density(
        lambda z: jnp.where(z[0] > 0, -jnp.inf, -0.5 * jnp.sum(z**2)), dim=2)
    nowhere = advi.from_log_density(lambda z: -jnp.inf * jnp.sum(z**2), dim=2)
    params = advi.MeanFieldParams(jnp.zeros(2), jnp.zeros(2))
    redraws = []
    for seed in range(5):
        est = advi.elbo_grad(half.log_density, advi.MEANFIELD, params, jax.random.PRNGKey(seed), 8)
        assert bool(est.ok) and np.isfinite(float(est.elbo))
        assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(est.grad))
        redraws.append(int(est.redraws))
    assert 5 * 8 * 0.5 * 0.5 < sum(redraws) < 5 * 8 * 3  # about M per estimate
    est = advi.elbo_grad(nowhere.log_density, advi.MEANFIELD, params, jax.random.PRNGKey(0), 4)
    assert not bool(est.ok) and int(est.redraws) == 10 * 4


def test_without_the_elbo_the_gradient_is_the_same_and_only_non_finite_gradients_redraw():
    """``with_elbo=False`` computes the gradient only: the same draws give the same gradient,
    and, as Stan's calc_grad, a draw is redrawn only where its gradient is not finite (a
    -inf slab of zero gradient is kept; a NaN-gradient slab is redrawn)."""
    params = advi.MeanFieldParams(jnp.array([0.2, -0.1]), jnp.array([0.1, -0.3]))
    smooth = _gaussian_target(jnp.array([1.0, 2.0]), jnp.array([0.5, 3.0]))
    key = jax.random.PRNGKey(4)
    both = advi.elbo_grad(smooth.log_density, advi.MEANFIELD, params, key, 6)
    grad_only = advi.elbo_grad(smooth.log_density, advi.MEANFIELD, params, key, 6,
                               with_elbo=False)
    assert grad_only.elbo is None and np.isfinite(float(both.elbo))
    for a, b in zip(jax.tree.leaves(both.grad), jax.tree.leaves(grad_only.grad), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    minus_inf = advi.from_log_density(
        lambda z: jnp.where(z[0] > 0, -jnp.inf, -0.5 * jnp.sum(z**2)), dim=2)
    nan_grad = advi.from_log_density(  # z_0 > 0: sqrt of a negative, NaN value and gradient
        lambda z: -0.5 * jnp.sum(z**2) + jnp.sqrt(-z[0]), dim=2)
    zero = advi.MeanFieldParams(jnp.zeros(2), jnp.zeros(2))
    for target, redrawn_without in ((minus_inf, False), (nan_grad, True)):
        counts = {with_elbo: sum(int(advi.elbo_grad(
            target.log_density, advi.MEANFIELD, zero, jax.random.PRNGKey(s), 8,
            with_elbo=with_elbo).redraws) for s in range(5)) for with_elbo in (True, False)}
        assert counts[True] > 5
        assert (counts[False] > 5) if redrawn_without else counts[False] == 0


@pytest.mark.parametrize("batch_size", [None, 8])
def test_the_elbo_estimate_counts_its_redraws(batch_size):
    """A sixth of q's mass at -inf (z_0 > 1): about 8 redraws for 40 draws (p / (1 - p)
    each), within the budget of 40, all at once or in batches; a log density finite
    nowhere spends the budget and says so."""
    params = advi.MeanFieldParams(jnp.zeros(2), jnp.zeros(2))
    tail = advi.from_log_density(
        lambda z: jnp.where(z[0] > 1, -jnp.inf, -0.5 * jnp.sum(z**2)), dim=2)
    est = advi.elbo.elbo_estimate(tail.log_density, advi.MEANFIELD, params,
                                  jax.random.PRNGKey(0), 40, batch_size)
    assert bool(est.ok) and np.isfinite(float(est.elbo))
    assert 2 < int(est.redraws) < 20
    assert est.log_weights.shape == (40,) and np.all(np.isfinite(est.log_weights))
    nowhere = advi.from_log_density(lambda z: -jnp.inf * jnp.sum(z**2), dim=2)
    est = advi.elbo.elbo_estimate(nowhere.log_density, advi.MEANFIELD, params,
                                  jax.random.PRNGKey(0), 40, batch_size)
    assert not bool(est.ok)

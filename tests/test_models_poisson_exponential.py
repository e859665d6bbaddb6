"""E0: the conjugate posterior, the model's log joint, held-out scoring and the data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import initialize_model, log_density
from scipy import integrate, stats

from advi_repro.models import poisson_exponential as pe

COUNTS = np.array([2, 5, 3, 1, 4])


def test_exact_posterior_matches_numerical_integration():
    shape, rate = pe.exact_posterior(COUNTS)

    def joint(lam):
        return stats.expon.pdf(lam) * np.prod(stats.poisson.pmf(COUNTS, lam))

    evidence, _ = integrate.quad(joint, 0, np.inf)
    mean, _ = integrate.quad(lambda lam: lam * joint(lam) / evidence, 0, np.inf)
    second, _ = integrate.quad(lambda lam: lam**2 * joint(lam) / evidence, 0, np.inf)
    gamma = stats.gamma(shape, scale=1 / rate)
    np.testing.assert_allclose(mean, gamma.mean(), rtol=1e-6)
    np.testing.assert_allclose(second - mean**2, gamma.var(), rtol=1e-6)
    for lam in (0.5, 2.5, 6.0):
        np.testing.assert_allclose(joint(lam) / evidence, gamma.pdf(lam), rtol=1e-6)


def test_model_log_joint_is_exponential_prior_times_poisson_likelihood():
    x = jnp.asarray(COUNTS, dtype=jnp.int32)
    lam = 2.7
    value, _ = log_density(pe.model, (), {"x": x}, {"lam": lam})
    expected = stats.expon.logpdf(lam) + stats.poisson.logpmf(COUNTS, lam).sum()
    np.testing.assert_allclose(value, expected, rtol=1e-5)


def test_unconstrained_density_is_the_gamma_posterior_in_log_space():
    x = jnp.asarray(COUNTS, dtype=jnp.int32)
    info = initialize_model(jax.random.PRNGKey(0), pe.model, model_kwargs={"x": x})
    shape, rate = pe.exact_posterior(COUNTS)
    zetas = np.array([-1.0, 0.3, 1.2, 2.0])
    potential = np.array([info.potential_fn({"lam": jnp.float32(z)}) for z in zetas])
    log_q = stats.gamma.logpdf(np.exp(zetas), shape, scale=1 / rate) + zetas
    difference = -potential - log_q
    np.testing.assert_allclose(difference, difference[0], atol=1e-4)


def test_log_likelihood_is_pointwise_poisson():
    x = jnp.asarray(COUNTS, dtype=jnp.int32)
    lam = np.array([0.5, 3.0, 7.5], dtype=np.float32)
    values = pe.log_likelihood({"lam": jnp.asarray(lam)}, x)
    assert values.shape == (3, COUNTS.size)
    expected = stats.poisson.logpmf(COUNTS[None, :], lam[:, None])
    np.testing.assert_allclose(values, expected, rtol=1e-5)


def test_load_simulates_seeded_counts_of_the_asked_sizes():
    first = pe.load(seed=3, n_train=10, n_heldout=20)
    again = pe.load(None, seed=3, n_train=10, n_heldout=20)
    other = pe.load(seed=4, n_train=10, n_heldout=20)
    assert first.train["x"].shape == (10,) and first.heldout["x"].shape == (20,)
    assert first.num_heldout == 20 and first.train["x"].dtype == jnp.int32
    np.testing.assert_array_equal(first.heldout["x"], again.heldout["x"])
    assert not np.array_equal(
        np.concatenate([first.train["x"], first.heldout["x"]]),
        np.concatenate([other.train["x"], other.heldout["x"]]),
    )


def test_load_refuses_a_path():
    with pytest.raises(ValueError, match="counts.txt"):
        pe.load("counts.txt", seed=0)

"""E3 and E4: the ordered Gamma prior, the masked Poisson likelihood, held-out entries."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.infer.util import log_density
from scipy import integrate, special, stats

from advi_repro.models import _poisson_factorisation as factorisation
from advi_repro.models import dirichlet_exponential_nmf, gamma_poisson_nmf
from advi_repro.planning.datasets.fetch import default_mirror

RNG = np.random.default_rng(0)
U, P, K, S = 6, 9, 3, 4
COUNTS = RNG.poisson(20.0, size=(U, P)).astype(np.float32)
MASK = RNG.uniform(size=(U, P)) > 0.2
THETA = np.sort(RNG.gamma(1.0, size=(U, K)), axis=-1).astype(np.float32)
BETA = RNG.gamma(2.0, size=(P, K)).astype(np.float32)
MIRROR = default_mirror()


def plain_poisson_log_lik(theta, beta, y, mask):
    """sum over entries with mask of log Poisson(y_ui | theta_u . beta_i), NumPyro's way."""
    rate = jnp.einsum("uk,ik->ui", theta, beta)
    return jnp.sum(dist.Poisson(rate).mask(mask).log_prob(y))


def test_ordered_gamma_is_a_normalised_density_on_the_ordered_cone():
    ordered = gamma_poisson_nmf.OrderedGamma(2.0, 1.5, num_factors=2)
    assert ordered.support is gamma_poisson_nmf.stan_positive_ordered

    def density(b, a):
        return math.exp(ordered.log_prob(jnp.array([a, b])))

    total, _ = integrate.dblquad(density, 0, 30, lambda a: a, lambda a: 30)
    np.testing.assert_allclose(total, 1.0, rtol=1e-4)


def test_ordered_gamma_draws_are_sorted_order_statistics():
    ordered = gamma_poisson_nmf.OrderedGamma(1.0, 1.0, num_factors=3, batch_shape=(2,))
    draws = ordered.sample(jax.random.PRNGKey(0), (4000,))
    assert draws.shape == (4000, 2, 3)
    assert jnp.all(jnp.diff(draws, axis=-1) > 0) and jnp.all(draws > 0)
    # the smallest of 3 iid Exponential(1) is Exponential(3): mean 1/3
    np.testing.assert_allclose(draws[..., 0].mean(), 1 / 3, atol=4 * (1 / 3) / np.sqrt(8000))


@pytest.mark.parametrize("precomputed", [True, False])
def test_gamma_poisson_log_joint_matches_the_plain_form(precomputed):
    data = {"y": COUNTS, "mask": MASK}
    if precomputed:
        data["log_y_factorial"] = jax.scipy.special.gammaln(COUNTS + 1.0)
    params = {"theta": THETA, "beta": BETA}
    value, _ = log_density(gamma_poisson_nmf.model, (), {**data, "K": K}, params)
    expected = (
        stats.gamma.logpdf(THETA, 1.0).sum() + U * math.log(math.factorial(K))
        + stats.gamma.logpdf(BETA, 1.0).sum()
        + plain_poisson_log_lik(THETA, BETA, COUNTS, MASK)
    )
    np.testing.assert_allclose(value, expected, rtol=1e-5)


def test_dirichlet_exponential_log_joint_matches_the_plain_form():
    theta = (THETA / THETA.sum(-1, keepdims=True)).astype(np.float32)
    params = {"theta": theta, "beta": BETA}
    data = {"y": COUNTS, "mask": MASK, "K": K, "alpha0": 1000.0, "lambda0": 0.1}
    value, _ = log_density(dirichlet_exponential_nmf.model, (), data, params)
    expected = (
        sum(stats.dirichlet.logpdf(row / row.sum(), np.full(K, 1000.0))
            for row in theta.astype(np.float64))
        + stats.expon.logpdf(BETA, scale=10.0).sum()
        + plain_poisson_log_lik(theta, BETA, COUNTS, MASK)
    )
    np.testing.assert_allclose(value, expected, rtol=1e-5)


@pytest.mark.parametrize("num_draws", [S, 19])
def test_log_likelihood_matches_a_loop_over_draws(num_draws):
    frame, pixel = np.nonzero(~MASK)
    samples = {
        "theta": jnp.asarray(RNG.gamma(1.0, size=(num_draws, U, K)), dtype=jnp.float32),
        "beta": jnp.asarray(RNG.gamma(2.0, size=(num_draws, P, K)), dtype=jnp.float32),
    }
    y = jnp.asarray(COUNTS[frame, pixel])
    values = gamma_poisson_nmf.log_likelihood(samples, y, jnp.asarray(frame), jnp.asarray(pixel))
    assert values.shape == (num_draws, frame.size)
    for s in range(num_draws):
        rate = samples["theta"][s] @ samples["beta"][s].T
        expected = dist.Poisson(rate[frame, pixel]).log_prob(y)
        np.testing.assert_allclose(values[s], expected, rtol=1e-5)


def test_load_holds_out_a_seeded_fraction_of_entries(tmp_path):
    path = tmp_path / "faces.npy"
    counts = RNG.integers(8, 239, size=(30, 20)).astype(np.uint8)
    np.save(path, counts)
    problem = gamma_poisson_nmf.load(path, seed=1, num_frames=25, heldout_fraction=0.1)
    mask = np.asarray(problem.train["mask"])
    frame, pixel = np.asarray(problem.heldout["frame"]), np.asarray(problem.heldout["pixel"])
    assert mask.shape == (25, 20) and problem.num_heldout == 50 == frame.size
    assert not mask[frame, pixel].any() and mask.sum() == 25 * 20 - 50
    assert len(set(zip(frame, pixel, strict=True))) == 50
    np.testing.assert_array_equal(problem.heldout["y"], counts[frame, pixel])
    np.testing.assert_array_equal(problem.train["y"], counts[:25])
    np.testing.assert_allclose(
        problem.train["log_y_factorial"], special.gammaln(counts[:25] + 1.0), rtol=1e-6
    )
    again = dirichlet_exponential_nmf.load(path, seed=1, num_frames=25)
    other = gamma_poisson_nmf.load(path, seed=2, num_frames=25)
    np.testing.assert_array_equal(again.train["mask"], mask)
    assert not np.array_equal(other.train["mask"], mask)


def test_load_names_bad_sizes(tmp_path):
    path = tmp_path / "faces.npy"
    np.save(path, np.ones((4, 5), dtype=np.uint8))
    with pytest.raises(ValueError, match="num_frames must be in 1..4, got 9"):
        gamma_poisson_nmf.load(path, seed=0, num_frames=9)
    with pytest.raises(ValueError, match="heldout_fraction must be in"):
        gamma_poisson_nmf.load(path, seed=0, heldout_fraction=1.5)


def test_model_names_a_bad_number_of_factors():
    with pytest.raises(ValueError, match="'K': 0"):
        log_density(gamma_poisson_nmf.model, (), {"y": COUNTS, "mask": MASK, "K": 0}, {})


@pytest.mark.skipif(MIRROR is None or not (MIRROR / "frey_faces").is_dir(),
                    reason="no data mirror")
def test_load_the_real_faces():
    problem = dirichlet_exponential_nmf.load(MIRROR / "frey_faces" / "frey_rawface.npy", seed=0)
    assert problem.train["y"].shape == (1965, 560)
    assert problem.num_heldout == round(0.1 * 1965 * 560)


def test_held_out_scoring_and_training_factor_agree():
    """Scoring the training entries as if held out sums to the model's likelihood factor."""
    frame, pixel = np.nonzero(MASK)
    samples = {"theta": jnp.asarray(THETA)[None], "beta": jnp.asarray(BETA)[None]}
    pointwise = factorisation.log_likelihood(
        samples, jnp.asarray(COUNTS[frame, pixel]), jnp.asarray(frame), jnp.asarray(pixel)
    )
    np.testing.assert_allclose(
        pointwise.sum(), plain_poisson_log_lik(THETA, BETA, COUNTS, MASK), rtol=1e-5
    )

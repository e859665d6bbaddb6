"""E5 and E6: the matrix-product likelihood, subsampling, held-out scoring, memory-mapped data."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density
from scipy import stats

from advi_repro.models import gmm

RNG = np.random.default_rng(0)
N, D, K = 50, 7, 4
X = RNG.normal(size=(N, D)).astype(np.float32)
THETA = RNG.dirichlet(np.ones(K)).astype(np.float32)
MU = RNG.normal(0.0, 0.5, size=(K, D)).astype(np.float32)
SIGMA = RNG.lognormal(0.0, 0.3, size=(K, D)).astype(np.float32)


def plain_row_log_likelihood(x, theta, mu, sigma):
    """The same quantity through NumPyro's mixture distribution, which broadcasts (N, K, D)."""
    components = dist.Normal(mu, sigma).to_event(1)
    return dist.MixtureSameFamily(dist.Categorical(probs=theta), components).log_prob(x)


def test_matrix_product_likelihood_equals_the_plain_mixture():
    fast = gmm.row_log_likelihood(X, THETA, MU, SIGMA)
    assert fast.shape == (N,)
    np.testing.assert_allclose(fast, plain_row_log_likelihood(X, THETA, MU, SIGMA), rtol=1e-5)


def test_model_log_joint_matches_the_written_densities():
    params = {"theta": THETA, "mu": MU, "sigma": SIGMA}
    data = {"x": X, "K": K, "alpha0": 50.0, "sigma_mu": 0.1, "sigma_sigma": 1.0}
    value, trace = log_density(gmm.model, (), data, params)
    expected = (
        stats.dirichlet.logpdf(THETA.astype(np.float64) / THETA.sum(dtype=np.float64),
                               np.full(K, 50.0))
        + stats.norm.logpdf(MU, 0.0, 0.1).sum()
        + stats.lognorm.logpdf(SIGMA, 1.0).sum()
        + plain_row_log_likelihood(X, THETA, MU, SIGMA).sum()
    )
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    latent = [n for n, s in trace.items() if s["type"] == "sample" and not s["is_observed"]]
    assert sorted(latent) == sorted(gmm.SITES)


def test_subsampled_likelihood_reads_the_selected_rows_scaled_by_n_over_b():
    idx = jnp.array([1, 8, 30, 44, 45])
    params = {"theta": THETA, "mu": MU, "sigma": SIGMA}
    model = handlers.substitute(gmm.model, data={"data": idx})
    _, trace = log_density(model, (), {"x": X, "K": K}, params)
    site = trace["x"]
    assert site["fn"].batch_shape == (idx.size,)
    log_lik = site["scale"] * jnp.sum(site["fn"].log_prob(site["value"]))
    expected = N / idx.size * plain_row_log_likelihood(X[np.asarray(idx)], THETA, MU, SIGMA).sum()
    np.testing.assert_allclose(log_lik, expected, rtol=1e-5)


@pytest.mark.parametrize("num_draws", [3, 11])
def test_log_likelihood_matches_a_loop_over_draws(num_draws):
    samples = {
        "theta": jnp.asarray(RNG.dirichlet(np.ones(K), size=num_draws), dtype=jnp.float32),
        "mu": jnp.asarray(RNG.normal(size=(num_draws, K, D)), dtype=jnp.float32),
        "sigma": jnp.asarray(RNG.lognormal(0.0, 0.3, size=(num_draws, K, D)), dtype=jnp.float32),
    }
    values = gmm.log_likelihood(samples, X)
    assert values.shape == (num_draws, N)
    for s in range(num_draws):
        expected = plain_row_log_likelihood(X, *(samples[n][s] for n in gmm.SITES))
        np.testing.assert_allclose(values[s], expected, rtol=1e-5)


def write_rows(tmp_path, num_rows=40, dim=3):
    path = tmp_path / "rows.npy"
    rows = np.arange(num_rows * dim, dtype=np.float32).reshape(num_rows, dim)
    np.save(path, rows)
    return path, rows


def test_load_all_training_rows_in_file_order(tmp_path):
    path, rows = write_rows(tmp_path)
    problem = gmm.load(path, seed=0, n_train=30, n_heldout=10)
    np.testing.assert_array_equal(problem.train["x"], rows[:30])
    np.testing.assert_array_equal(problem.heldout["x"], rows[30:])
    assert problem.num_heldout == 10 and problem.train["x"].dtype == jnp.float32


def test_load_with_stream_keeps_the_training_rows_in_the_memory_map(tmp_path):
    path, rows = write_rows(tmp_path)
    problem = gmm.load(path, seed=0, n_train=30, n_heldout=10, stream=True)
    train = problem.train["x"]
    assert isinstance(train, np.memmap) and Path(train.filename) == path.resolve()
    np.testing.assert_array_equal(train, rows[:30])
    np.testing.assert_array_equal(problem.heldout["x"], rows[30:])
    with pytest.raises(ValueError, match="n_train must be all 30 rows"):
        gmm.load(path, seed=0, n_train=12, n_heldout=10, stream=True)


def test_load_a_seeded_random_subset_of_the_training_pool(tmp_path):
    path, rows = write_rows(tmp_path)
    problem = gmm.load(path, seed=4, n_train=12, n_heldout=10)
    chosen = np.asarray(problem.train["x"])[:, 0] // 3
    assert chosen.size == 12 and np.unique(chosen).size == 12
    assert np.all(np.diff(chosen) > 0) and chosen.max() < 30
    np.testing.assert_array_equal(problem.heldout["x"], rows[30:])
    again = gmm.load(path, seed=4, n_train=12, n_heldout=10)
    other = gmm.load(path, seed=5, n_train=12, n_heldout=10)
    np.testing.assert_array_equal(again.train["x"], problem.train["x"])
    assert not np.array_equal(other.train["x"], problem.train["x"])


def test_load_names_bad_sizes_and_dtypes(tmp_path):
    path, _ = write_rows(tmp_path)
    with pytest.raises(ValueError, match="n_train must be in 1..30"):
        gmm.load(path, seed=0, n_train=31, n_heldout=10)
    with pytest.raises(ValueError, match="n_heldout must be in 1..39, got 40"):
        gmm.load(path, seed=0, n_train=1, n_heldout=40)
    np.save(tmp_path / "f64.npy", np.zeros((5, 2)))
    with pytest.raises(ValueError, match="float64"):
        gmm.load(tmp_path / "f64.npy", seed=0, n_train=2, n_heldout=1)


def test_model_names_bad_hyperparameters():
    with pytest.raises(ValueError, match="'sigma_mu': -1"):
        handlers.trace(handlers.seed(gmm.model, 0)).get_trace(X, K=2, sigma_mu=-1.0)


def test_fast_likelihood_is_differentiable_like_the_plain_one():
    def fast(mu):
        return gmm.row_log_likelihood(X, THETA, mu, SIGMA).sum()

    def plain(mu):
        return plain_row_log_likelihood(X, THETA, mu, SIGMA).sum()

    np.testing.assert_allclose(jax.grad(fast)(MU), jax.grad(plain)(MU), rtol=1e-4, atol=1e-5)

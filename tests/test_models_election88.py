"""E2: the hierarchical structure, the supports, held-out scoring and the seeded split."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.distributions import constraints
from numpyro.infer.util import log_density
from numpyro.infer.util import log_likelihood as numpyro_log_likelihood
from scipy import stats

from advi_repro.models import election88
from advi_repro.planning.datasets.fetch import default_mirror

MIRROR = default_mirror()
needs_mirror = pytest.mark.skipif(
    MIRROR is None or not (MIRROR / "election88").is_dir(), reason="no data mirror"
)
SIGMAS = ("sigma_age", "sigma_edu", "sigma_age_edu", "sigma_state", "sigma_region")


def small_data(num_rows=60, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "y": jnp.asarray(rng.integers(0, 2, num_rows), dtype=jnp.int32),
        "female": jnp.asarray(rng.integers(0, 2, num_rows), dtype=jnp.float32),
        "black": jnp.asarray(rng.integers(0, 2, num_rows), dtype=jnp.float32),
        "age": jnp.asarray(rng.integers(0, 4, num_rows), dtype=jnp.int32),
        "edu": jnp.asarray(rng.integers(0, 4, num_rows), dtype=jnp.int32),
        "state": jnp.asarray(rng.integers(0, 51, num_rows), dtype=jnp.int32),
        "state_region": jnp.asarray(rng.integers(0, 5, 51), dtype=jnp.int32),
        "state_v_prev": jnp.asarray(rng.uniform(0.15, 0.75, 51), dtype=jnp.float32),
    }


def prior_draws(data, num_draws, seed=0):
    """(num_draws, ...) draws of every latent site from the model's prior."""
    draws = []
    for key in jax.random.split(jax.random.PRNGKey(seed), num_draws):
        trace = handlers.trace(handlers.seed(election88.model, key)).get_trace(**data)
        draws.append({name: trace[name]["value"] for name in election88.SITES})
    return jax.tree.map(lambda *values: jnp.stack(values), *draws)


def test_prior_supports_and_sites():
    data = small_data()
    trace = handlers.trace(handlers.seed(election88.model, 0)).get_trace(**data)
    latent = [
        name for name, site in trace.items() if site["type"] == "sample" and not site["is_observed"]
    ]
    assert sorted(latent) == sorted(election88.SITES)
    for name in SIGMAS:
        support = trace[name]["fn"].support
        assert isinstance(support, constraints.interval)
        assert (support.lower_bound, support.upper_bound) == (0.0, 100.0)
    draws = prior_draws(data, 50)
    for name in SIGMAS:
        assert jnp.all((draws[name] > 0) & (draws[name] < 100))
    assert trace["beta"]["value"].shape == (4,) and trace["a_age_edu"]["value"].shape == (4, 4)


def test_log_joint_matches_the_written_model():
    data = small_data()
    params = prior_draws(data, 1, seed=1)
    params = {name: value[0] for name, value in params.items()}
    value, _ = log_density(election88.model, (), data, params)
    p = {name: np.asarray(v, dtype=np.float64) for name, v in params.items()}
    d = {name: np.asarray(v) for name, v in data.items()}
    log_prior = (
        stats.norm.logpdf(p["beta"], 0, 100).sum()
        + stats.norm.logpdf(p["beta_v_prev"], 0, 100)
        + sum(stats.uniform.logpdf(p[name], 0, 100) for name in SIGMAS)
        + stats.norm.logpdf(p["a_age"], 0, p["sigma_age"]).sum()
        + stats.norm.logpdf(p["a_edu"], 0, p["sigma_edu"]).sum()
        + stats.norm.logpdf(p["a_age_edu"], 0, p["sigma_age_edu"]).sum()
        + stats.norm.logpdf(p["a_region"], 0, p["sigma_region"]).sum()
    )
    state_mean = p["a_region"][d["state_region"]] + p["beta_v_prev"] * d["state_v_prev"]
    log_prior += stats.norm.logpdf(p["a_state"], state_mean, p["sigma_state"]).sum()
    b = p["beta"]
    eta = (
        b[0] + b[1] * d["female"] + b[2] * d["black"] + b[3] * d["female"] * d["black"]
        + p["a_age"][d["age"]] + p["a_edu"][d["edu"]] + p["a_age_edu"][d["age"], d["edu"]]
        + p["a_state"][d["state"]]
    )
    log_lik = np.sum(d["y"] * eta - np.logaddexp(0.0, eta))
    np.testing.assert_allclose(value, log_prior + log_lik, rtol=1e-5)


def test_vectorised_log_likelihood_matches_numpyro_per_draw():
    data = small_data(seed=2)
    samples = prior_draws(data, 7, seed=3)
    samples = {name: value * 0.05 if name.startswith(("a_", "beta")) else value
               for name, value in samples.items()}
    heldout = {name: data[name] for name in ("y", "female", "black", "age", "edu", "state")}
    values = election88.log_likelihood(samples, **heldout)
    plain = numpyro_log_likelihood(election88.model, samples, **data)["y"]
    assert values.shape == (7, 60)
    np.testing.assert_allclose(values, plain, rtol=1e-5, atol=1e-6)


def test_split_is_disjoint_complete_and_seeded():
    train, heldout = election88.split_rows(100, n_train=70, seed=5)
    assert train.size == 70 and heldout.size == 30
    assert np.intersect1d(train, heldout).size == 0
    np.testing.assert_array_equal(np.union1d(train, heldout), np.arange(100))
    again, _ = election88.split_rows(100, n_train=70, seed=5)
    other, _ = election88.split_rows(100, n_train=70, seed=6)
    np.testing.assert_array_equal(train, again)
    assert not np.array_equal(train, other)
    with pytest.raises(ValueError, match="100"):
        election88.split_rows(100, n_train=100, seed=0)


@needs_mirror
def test_load_the_real_data():
    problem = election88.load(MIRROR / "election88", seed=0)
    assert problem.num_heldout == 11566 - 10000
    assert problem.train["y"].shape == (10000,) and problem.heldout["y"].shape == (1566,)
    assert problem.train["state_region"].shape == (51,)
    assert int(problem.train["state"].max()) <= 50 and int(problem.train["age"].min()) == 0
    again = election88.load(MIRROR / "election88", seed=0)
    np.testing.assert_array_equal(problem.heldout["state"], again.heldout["state"])
    y_total = int(problem.train["y"].sum() + problem.heldout["y"].sum())
    assert y_total == 6495  # mean 0.5616 of 11,566 (PROVENANCE.md)

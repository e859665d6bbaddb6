"""E1: the ARD prior, the likelihood (full and subsampled), held-out scoring and loading."""

import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density
from scipy import stats

from advi_repro.models import linreg_ard

RNG = np.random.default_rng(0)
N, D, S = 40, 6, 5
X = RNG.normal(size=(N, D)).astype(np.float32)
Y = RNG.normal(size=N).astype(np.float32)
PARAMS = {
    "w": RNG.normal(size=D).astype(np.float32),
    "tau": np.float32(1.7),
    "alpha": RNG.gamma(1.0, size=D).astype(np.float32),
}


def test_model_log_joint_matches_the_written_densities():
    value, trace = log_density(linreg_ard.model, (), {"X": X, "y": Y}, PARAMS)
    w, tau, alpha = PARAMS["w"], PARAMS["tau"], PARAMS["alpha"]
    expected = (
        stats.gamma.logpdf(tau, 1.0)
        + stats.gamma.logpdf(alpha, 1.0).sum()
        + stats.norm.logpdf(w, 0.0, 1.0 / np.sqrt(tau * alpha)).sum()
        + stats.norm.logpdf(Y, X @ w, 1.0 / np.sqrt(tau)).sum()
    )
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    latent = [name for name, site in trace.items() if not site.get("is_observed", True)]
    assert sorted(latent) == sorted(linreg_ard.SITES)


def test_subsampled_likelihood_is_scaled_by_n_over_b():
    idx = jnp.array([3, 17, 25, 31])
    subsampled = handlers.substitute(linreg_ard.model, data={"data": idx})
    _, trace = log_density(subsampled, (), {"X": X, "y": Y}, PARAMS)
    site = trace["y"]
    log_lik = jnp.sum(site["fn"].log_prob(site["value"])) * site["scale"]
    rows = np.asarray(idx)
    expected = N / rows.size * stats.norm.logpdf(
        Y[rows], X[rows] @ PARAMS["w"], 1.0 / np.sqrt(PARAMS["tau"])
    ).sum()
    np.testing.assert_allclose(log_lik, expected, rtol=1e-5)


def test_log_likelihood_matches_a_loop_over_draws():
    samples = {
        "w": RNG.normal(size=(S, D)).astype(np.float32),
        "tau": RNG.gamma(2.0, size=S).astype(np.float32),
    }
    values = linreg_ard.log_likelihood({k: jnp.asarray(v) for k, v in samples.items()}, X, Y)
    assert values.shape == (S, N)
    for s in range(S):
        sd = 1.0 / np.sqrt(samples["tau"][s])
        expected = stats.norm.logpdf(Y, X @ samples["w"][s], sd)
        np.testing.assert_allclose(values[s], expected, rtol=1e-5)


def test_load_reads_a_simulated_file(tmp_path):
    path = tmp_path / "linreg.npz"
    np.savez(path, **linreg_ard.simulate(1, num_train=30, num_heldout=7, num_features=4))
    problem = linreg_ard.load(path, seed=0)
    assert problem.train["X"].shape == (30, 4) and problem.train["y"].shape == (30,)
    assert problem.heldout["X"].shape == (7, 4) and problem.num_heldout == 7
    assert problem.train["X"].dtype == jnp.float32


def test_load_names_inconsistent_arrays(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, X_train=np.zeros((3, 2)), y_train=np.zeros(4),
             X_heldout=np.zeros((1, 2)), y_heldout=np.zeros(1))
    with pytest.raises(ValueError, match=r"\(3, 2\) and \(4,\)"):
        linreg_ard.load(path)


def test_linreg_ard_shapes_truth_and_noise():
    data = linreg_ard.simulate(0, num_train=4000, num_heldout=300, num_features=10)
    assert data["X_train"].shape == (4000, 10) and data["y_train"].shape == (4000,)
    assert data["X_heldout"].shape == (300, 10) and data["y_heldout"].shape == (300,)
    assert all(a.dtype == np.float32 for a in data.values())
    w = data["w"]
    assert np.all(w[5:] == 0) and np.all(w[:5] != 0)
    residual = data["y_train"] - data["X_train"] @ w
    np.testing.assert_allclose(residual.var(), 1 / linreg_ard.NOISE_PRECISION, rtol=0.1)


def test_linreg_ard_is_seeded():
    first = linreg_ard.simulate(3, num_train=20, num_heldout=5, num_features=4)
    again = linreg_ard.simulate(3, num_train=20, num_heldout=5, num_features=4)
    other = linreg_ard.simulate(4, num_train=20, num_heldout=5, num_features=4)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(first["X_train"], other["X_train"])
    with pytest.raises(ValueError, match="'num_features': 0"):
        linreg_ard.simulate(0, num_features=0)

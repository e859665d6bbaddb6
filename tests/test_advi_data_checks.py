"""Degenerate data are named while the target is built, before any compilation."""

import logging
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi

RNG = np.random.default_rng(0)


def location_scale(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def known_scale(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 2.0), obs=y)


def regression(X, y):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("y", dist.Normal(X @ w, 1.0), obs=y)


def shared_scale(y_one, y_many):
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("y_one", dist.Normal(0.0, sigma), obs=y_one)
    with numpyro.plate("data", y_many.shape[0]):
        numpyro.sample("y_many", dist.Normal(0.0, sigma), obs=y_many)


def unplated(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def fit(model, *args, caplog):
    """advi.fit, asserting that it fails before the compilation is logged."""
    with caplog.at_level(logging.INFO, logger="advi"):
        try:
            return advi.fit(model, *args, rng_key=jax.random.PRNGKey(0), max_iter=20)
        finally:
            assert not any("compiling" in r.getMessage() for r in caplog.records)


def test_empty_plate_names_the_empty_argument(caplog):
    with pytest.raises(ValueError, match=r"a numpyro.plate has size 0 .*: a plate needs "
                       r"at least one element.*argument number 1 \(shape \(0,\)\)") as info:
        fit(location_scale, np.zeros(0, np.float32), caplog=caplog)
    assert isinstance(info.value.__cause__, AssertionError)


def test_a_pandas_argument_is_named_before_compiling(caplog):
    """A Series is not an array: left in the model it meets JAX's traced values and fails
    with a tracer error naming neither; it is named first, with what to pass instead."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"y": RNG.normal(size=20)})
    with pytest.raises(ValueError, match=r"argument number 1 is a pandas Series; pass its "
                       r"values as an array \(\.to_numpy\(\)"):
        fit(location_scale, frame["y"], caplog=caplog)
    with pytest.raises(ValueError, match=r"argument 'X' is a pandas DataFrame"):
        advi.from_numpyro(regression, (), {"X": frame, "y": frame["y"].to_numpy()})
    # its values fit
    result = advi.fit(location_scale, frame["y"].to_numpy(np.float32),
                      rng_key=jax.random.PRNGKey(0), max_iter=20)
    assert np.isfinite(float(result.params.mu[0]))


def test_empty_design_matrix_is_named_by_keyword():
    with pytest.raises(ValueError, match=r"argument 'X' \(shape \(0, 3\)\)"):
        advi.from_numpyro(regression, (), {"X": jnp.zeros((0, 3)), "y": jnp.zeros(0)})


def test_empty_observed_site_outside_a_plate():
    with pytest.raises(ValueError, match=r"observed site 'y' has shape \(0,\), with no elem"):
        advi.from_numpyro(unplated, (np.zeros(0, np.float32),))


def test_other_assertions_pass_through():
    def asserting(y):
        numpyro.sample("mu", dist.Normal(0.0, 1.0))
        assert y.shape[0] > 3, "the model's own check"

    with pytest.raises(AssertionError, match="the model's own check"):
        advi.from_numpyro(asserting, (np.zeros(2, np.float32),))


def test_single_observation_with_a_latent_scale_warns_before_compiling(caplog):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the warning stops fit where it is
        with pytest.raises(RuntimeWarning, match=r"observed site 'y' \(shape \(1,\)\) is a "
                           r"single observation whose scale depends on the latent "
                           r"site\(s\) \['sigma'\]"):
            fit(location_scale, np.ones(1, np.float32), caplog=caplog)


def test_single_observation_of_a_multivariate_normal_names_scale_tril():
    def mvn(y):
        scale = numpyro.sample("scale", dist.HalfNormal(1.0).expand([2]).to_event(1))
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(2), scale_tril=jnp.diag(scale)),
                       obs=y)

    with pytest.warns(RuntimeWarning, match=r"'y' \(shape \(1, 2\)\).*scale_tril.*\['scale'\]"):
        advi.from_numpyro(mvn, (np.ones((1, 2), np.float32),))


def test_a_gaussian_process_on_one_vector_of_many_values_does_not_warn():
    """A GP regression: one observed vector of 11 values whose covariance depends on three
    scalar hyperparameters (posteriordb's gp_regr) is one observation, but of more values
    than the scale's parameters."""
    def gp(x, y):
        rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
        alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        cov = alpha**2 * jnp.exp(-0.5 * jnp.square((x[:, None] - x[None, :]) / rho))
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(11), cov + sigma * jnp.eye(11)),
                       obs=y)

    x = np.linspace(-10, 10, 11, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        advi.from_numpyro(gp, (x, np.sin(x / 3)))


@pytest.mark.parametrize("model, args", [
    (known_scale, (np.ones(1, np.float32),)),  # one observation, but the scale is known
    (location_scale, (RNG.normal(size=2).astype(np.float32),)),  # two observations
    (shared_scale, (np.float32(0.3), RNG.normal(size=5).astype(np.float32))),  # shared
])
def test_no_warning_when_the_scale_is_known_or_reaches_more_data(model, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        advi.from_numpyro(model, args)


def test_constant_columns_warn_naming_the_argument_and_columns(caplog):
    X = RNG.normal(size=(6, 4)).astype(np.float32)
    X[:, 0], X[:, 2] = 1.0, 0.0
    with pytest.warns(RuntimeWarning, match=r"argument 'X' \(shape \(6, 4\)\) has constant "
                      r"columns \{0: 1, 2: 0\} \(all-zero columns carry no information; "
                      r"constant columns are collinear\)"):
        advi.from_numpyro(regression, (), {"X": X, "y": np.ones(6, np.float32)})
    X[:, 0] = RNG.normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match=r"argument number 1 .*\{2: 0\} \(all-zero "
                           r"columns carry no information\)"):
            fit(regression, X, np.ones(6, np.float32), caplog=caplog)


def test_one_intercept_column_and_non_float_or_single_row_arrays_pass():
    X = RNG.normal(size=(6, 3)).astype(np.float32)
    X[:, 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        advi.from_numpyro(regression, (X, np.ones(6, np.float32)))
        advi.from_numpyro(regression, (np.zeros((6, 3), np.int32), np.ones(6, np.float32)))
        advi.from_numpyro(regression, (np.zeros((1, 3), np.float32), np.ones(1, np.float32)))


def test_healthy_model_fits_silently(caplog):
    X = RNG.normal(size=(20, 3)).astype(np.float32)
    X[:, 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        advi.from_numpyro(regression, (X, X @ np.ones(3, np.float32)))
        advi.from_numpyro(location_scale, (X[:, 1],))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with caplog.at_level(logging.INFO, logger="advi"):
            advi.fit(regression, X, X @ np.ones(3, np.float32), rng_key=jax.random.PRNGKey(0),
                     max_iter=200, eta=0.1)
    assert not [w for w in caught if "observation whose" in str(w.message)
                or "constant columns" in str(w.message)]
    assert any("compiling" in r.getMessage() for r in caplog.records)

"""advi.spread: a mean-field q's sds against the posterior's marginal ones, and the note of
a fit whose sds are far too small."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi
from advi.spread import (
    AT_MODE,
    SD_INFLATION_MAX,
    SPREAD_NOTE,
    Spread,
    fitted_inflation,
    sd_inflation,
    spread_note,
)


def test_the_inflation_is_the_marginal_over_the_conditional_sd():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    precision = a @ a.T + 0.1 * np.eye(5)
    marginal = np.sqrt(np.diag(np.linalg.inv(precision)))
    conditional = 1 / np.sqrt(np.diag(precision))
    np.testing.assert_allclose(sd_inflation(precision), marginal / conditional, rtol=1e-10)
    rho = 0.99  # two coordinates: 1 / sqrt(1 - rho^2)
    pair = np.array([[1.0, rho], [rho, 1.0]])
    np.testing.assert_allclose(sd_inflation(pair), 1 / np.sqrt(1 - rho**2), rtol=1e-10)
    assert sd_inflation(np.diag([1.0, 1e6])) == pytest.approx([1.0, 1.0])
    assert sd_inflation(np.array([[1.0, 2.0], [2.0, 1.0]])) is None  # indefinite


def test_the_note_names_the_factor_the_sites_and_the_remedies():
    assert spread_note(None) is None
    assert spread_note(Spread(np.array([1.0, SD_INFLATION_MAX]), "q's mean")) is None
    inflation = Spread(np.array([1.0, 3.0, 50.0]), "q's mean")
    note = spread_note(inflation)
    assert note.startswith(SPREAD_NOTE) and "at q's mean" in note
    assert "up to 50 times" in note and "2 of 3 coordinates" in note
    assert "family='fullrank'" in note and "linear_response" in note
    named = spread_note(inflation, lambda z: {"a": z[:1], "b": z[1:]})
    assert "b 50x" in named and "a 1" not in named  # a's factor is below 2: not named
    assert f"at {AT_MODE}" in spread_note(inflation._replace(at=AT_MODE))


def _correlated(rho: float) -> np.ndarray:
    return np.array([[1.0, rho], [rho, 1.0]])


def test_the_curvature_at_q_mean_is_formed_only_where_the_mode_screens_it_in():
    formed = []

    def at_mean(precision):
        return lambda: formed.append(1) or precision

    assert fitted_inflation(None, at_mean(_correlated(0.99))) is None
    assert fitted_inflation(np.array([1.0, SD_INFLATION_MAX]), at_mean(_correlated(0.99))) is None
    assert not formed  # no -H at q's mean where the mode's factor is at most 2
    # a funnel: large at the mode, small at q's mean, which decides
    funnel = fitted_inflation(np.array([1.0, 214.0]), at_mean(_correlated(0.5)))
    assert max(funnel.inflation) < 2 and funnel.at == "q's mean"
    np.testing.assert_allclose(fitted_inflation(np.array([9.0, 1.0]),
                                                at_mean(_correlated(0.99))).inflation,
                               1 / np.sqrt(1 - 0.99**2), rtol=1e-10)
    assert fitted_inflation(np.array([9.0]), at_mean(None)) is None
    # -H at q's mean indefinite: the mode's factors decide
    indefinite = fitted_inflation(np.array([9.0, 1.0]), at_mean(_correlated(2.0)))
    assert indefinite.at == AT_MODE and list(indefinite.inflation) == [9.0, 1.0]
    assert len(formed) == 4


def _sum_of_two(y):
    a = numpyro.sample("a", dist.Normal(0.0, 10.0))
    b = numpyro.sample("b", dist.Normal(0.0, 10.0))
    numpyro.sample("y", dist.Normal(a + b, 1.0), obs=y)


def test_a_mean_field_fit_of_a_ridge_says_its_sds_are_too_small():
    """y ~ N(a + b, 1), a, b ~ N(0, 10): a Gaussian posterior whose a and b are almost
    perfectly anti-correlated. Mean-field's means are right and its sds are the conditional
    ones, about 50 times too small; the fit says so, full-rank's does not need to."""
    y = jnp.asarray(np.random.default_rng(0).normal(3.0, 1.0, 50))
    precision = np.full((2, 2), 50.0) + np.eye(2) / 100.0  # the exact -H
    covariance = np.linalg.inv(precision)
    mean = covariance @ np.full(2, float(np.sum(y)))
    key = jax.random.PRNGKey(0)
    with pytest.warns(advi.SpreadWarning, match=SPREAD_NOTE):
        fit = advi.fit(_sum_of_two, y, rng_key=key, preset="robust", progress_bar=False)
    notes = [n for n in fit.warnings if n.startswith(SPREAD_NOTE)]
    assert len(notes) == 1 and "up to 50 times" in notes[0], fit.warnings
    assert "a 50" in notes[0] and "b 50" in notes[0]  # both sites named
    draws = fit.sample(jax.random.PRNGKey(1), 20_000)
    sd = np.sqrt(np.diag(covariance))
    for k, site in enumerate(("a", "b")):
        assert abs(float(np.mean(draws[site])) - mean[k]) < 0.1 * sd[k]
        assert float(np.std(draws[site])) < sd[k] / 40  # the conditional sd, 50x too small
    full = advi.fit(_sum_of_two, y, rng_key=key, preset="robust", family="fullrank",
                    progress_bar=False)
    assert not any(n.startswith(SPREAD_NOTE) for n in full.warnings), full.warnings


def test_the_note_is_its_own_warning_category():
    """Silenced alone by its category, the note still lands in ``result.warnings``, and
    no other warning is issued on the ridge."""
    precision = jnp.array([[50.01, 50.0], [50.0, 50.01]])
    target = advi.from_log_density(lambda z: -0.5 * z @ precision @ z, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=advi.SpreadWarning)
        fit = advi.fit(target, preset="robust", rng_key=jax.random.PRNGKey(0),
                       progress_bar=False)
    assert len(fit.warnings) == 1 and fit.warnings[0].startswith(SPREAD_NOTE)
    assert issubclass(advi.SpreadWarning, RuntimeWarning)  # caught where RuntimeWarnings are


def test_an_uncorrelated_posterior_gets_no_note():
    def independent(y):
        a = numpyro.sample("a", dist.Normal(0.0, 10.0))
        b = numpyro.sample("b", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(a, 1.0), obs=y)
        numpyro.sample("z", dist.Normal(b, 1.0), obs=y + 1.0)

    y = jnp.asarray(np.random.default_rng(1).normal(size=20))
    fit = advi.fit(independent, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                   progress_bar=False)
    assert not any(n.startswith(SPREAD_NOTE) for n in fit.warnings), fit.warnings


SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def _centred_schools(y, sigma):
    """The Inference Gym's eight schools: centred, log tau ~ N(5, 1)."""
    mu = numpyro.sample("avg_effect", dist.Normal(0.0, 10.0))
    log_tau = numpyro.sample("log_stddev", dist.Normal(5.0, 1.0))
    with numpyro.plate("schools", y.shape[0]):
        theta = numpyro.sample("school_effects", dist.Normal(mu, jnp.exp(log_tau)))
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def _mode_inflation(model, *args) -> np.ndarray:
    """sd_inflation of -H at the mode of ``model``'s unconstrained log density, found by
    SciPy's L-BFGS-B in float64 (NumPyro's potential energy, independent of advi)."""
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import initialize_model
    from scipy.optimize import minimize

    with jax.enable_x64(True):
        info = initialize_model(jax.random.PRNGKey(0), model, model_args=args)
        flat, unravel = ravel_pytree(info.param_info.z)
        energy = jax.jit(lambda z: info.potential_fn(unravel(z)))
        found = minimize(lambda z: float(energy(z)), np.asarray(flat, np.float64),
                         jac=lambda z: np.asarray(jax.grad(energy)(z)), method="L-BFGS-B",
                         options={"maxiter": 5000, "gtol": 1e-9})
        return sd_inflation(np.asarray(jax.hessian(energy)(found.x)))


def test_a_funnels_mode_says_nothing_of_its_spread():
    """Centred eight schools: at the mode (tau small, in the funnel's neck) the school
    effects' marginal sds are 214 times their conditional ones, but not at q's mean, where
    a mean-field q's sds are within 2x of the posterior's (the Inference Gym's ground
    truth, benchmarks/README.md): no note."""
    assert np.max(_mode_inflation(_centred_schools, SCHOOLS_Y, SCHOOLS_SIGMA)) > 100
    fit = advi.fit(_centred_schools, jnp.asarray(SCHOOLS_Y), jnp.asarray(SCHOOLS_SIGMA),
                   rng_key=jax.random.PRNGKey(1), preset="robust", progress_bar=False)
    assert fit.start.startswith("laplace"), fit.start  # the mode was found and screened
    assert not any(n.startswith(SPREAD_NOTE) for n in fit.warnings), fit.warnings



def _latent_ar1(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 3.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([y.shape[0]]).to_event(1))

    def step(previous, innovation):
        state = phi * previous + sigma * innovation
        return state, state

    first = sigma / jnp.sqrt(1.0 - phi**2) * z[0]
    _, rest = jax.lax.scan(step, first, z[1:])
    rate = jnp.exp(mu + jnp.concatenate([first[None], rest]))
    numpyro.sample("y", dist.Poisson(rate).to_event(1), obs=y)


def test_where_q_mean_is_not_concave_the_modes_factors_decide():
    """Counts on a latent AR(1) (phi = 0.9, 100 days), non-centred: -H at the mean-field
    q's mean has a negative eigenvalue, and the note falls back to the Laplace mode's
    factors. It is warranted: the mean-field phi ends more than 5 of a full-rank fit's
    sds below the full-rank fit's (the family cannot hold the states' correlations)."""
    rng = np.random.default_rng(0)
    states = np.zeros(100)
    states[0] = 0.3 / np.sqrt(1 - 0.81) * rng.standard_normal()
    for t in range(1, 100):
        states[t] = 0.9 * states[t - 1] + 0.3 * rng.standard_normal()
    y = rng.poisson(np.exp(1.5 + states)).astype(np.float32)
    key = jax.random.PRNGKey(0)
    with pytest.warns(advi.SpreadWarning, match=re.escape(f"at {AT_MODE}")):
        mean_field = advi.fit(_latent_ar1, y, rng_key=key, preset="robust",
                              progress_bar=False)
    full = advi.fit(_latent_ar1, y, rng_key=key, preset="robust", family="fullrank",
                    max_iter=4000, progress_bar=False)
    phi = [fit.sample(jax.random.PRNGKey(1), 4000)["phi"] for fit in (mean_field, full)]
    assert float(jnp.mean(phi[1]) - jnp.mean(phi[0])) > 5 * float(jnp.std(phi[1]))

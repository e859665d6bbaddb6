"""The validation suite's everyday models (``benchmarks/suite_models.py``): each takes the
data stored for it, and the ones with hand-written pieces (a summed-out change point, the
regularised horseshoe's coefficients) compute what they say, against a direct computation."""

import inspect

import jax
import numpy as np
import pytest
from bench_scripts import load
from numpyro import handlers
from numpyro.infer.util import log_density
from scipy import stats

everyday = load("suite_models")


@pytest.mark.parametrize("name", sorted(everyday.MODELS))
def test_each_model_takes_its_stored_data_and_has_its_reference(name):
    """The stored data are the model's arguments, and the reference has a mean and a
    positive sd per compared quantity (each model's fit is checked by the fast subset of
    ``tests/test_bench_suite.py``)."""
    model, _, _ = everyday.MODELS[name]
    assert tuple(inspect.signature(model).parameters) == tuple(everyday.data(name))
    _, _, _, mean, sd, _ = everyday.problem(name, lambda *parts: parts)
    assert mean.shape == sd.shape and mean.size > 0 and np.all(sd > 0)


def test_the_change_point_sums_the_switch_year_out():
    """log p(y | early, late) = log mean_s prod_t Poisson(y_t | early if t < s else late),
    s over the T years, by a loop over s (SciPy's Poisson)."""
    y = np.array([3.0, 4.0, 2.0, 1.0, 0.0, 1.0, 2.0])
    early, late = 2.5, 0.8
    with jax.enable_x64(True):
        value, _ = log_density(everyday.change_point, (y,), {},
                               {"early": early, "late": late})
        prior = stats.expon(scale=2.0).logpdf([early, late]).sum()
    terms = [stats.poisson(early).logpmf(y[:s]).sum() + stats.poisson(late).logpmf(y[s:]).sum()
             for s in range(y.size)]
    expected = np.logaddexp.reduce(terms) - np.log(y.size) + prior
    assert float(value) == pytest.approx(expected, rel=1e-10)


def test_the_horseshoe_quantities_are_the_coefficients_the_model_uses():
    """The compared beta (tau' lambda~ z, Piironen & Vehtari 2017's regularised horseshoe)
    reproduces the mean of y in a trace of the model, and sigma is the site's."""
    x = np.random.default_rng(0).standard_normal((everyday.HORSESHOE_ROWS, 25))
    y = np.zeros(everyday.HORSESHOE_ROWS)
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(everyday.horseshoe_regression, 3)).get_trace(x, y)
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    quantities = everyday.horseshoe_quantities(draws)[0]
    np.testing.assert_allclose(x @ quantities[:25], np.asarray(trace["y"]["fn"].loc),
                               rtol=1e-9, atol=1e-12)
    assert quantities[25] == draws["sigma"][0]


def test_the_spline_quantities_are_the_weights_the_model_uses():
    """The compared w (w0 plus tau times the cumulated steps) reproduces the mean of y in a
    trace of the model, and tau and sigma are the sites'."""
    holdout = load("suite_holdout")
    basis = holdout.bumps(np.linspace(0.0, 10.0, 30))
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(holdout.spline_random_walk, 4)).get_trace(
            basis, np.zeros(30))
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    quantities = holdout.spline_quantities(draws)[0]
    np.testing.assert_allclose(basis @ quantities[:holdout.BUMPS],
                               np.asarray(trace["y"]["fn"].loc), rtol=1e-9, atol=1e-12)
    assert tuple(quantities[holdout.BUMPS:]) == (draws["tau"][0], draws["sigma"][0])


def test_the_varying_slopes_quantities_are_the_correlation_and_effects_the_model_uses():
    """The compared correlation is the group effects' covariance's, and the effects are
    the ones in y's mean, group-major."""
    holdout = load("suite_holdout")
    group, x = np.repeat(np.arange(5), 3), np.linspace(-1.0, 1.0, 15)
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(holdout.varying_slopes, 5)).get_trace(
            group, x, np.zeros(15))
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    quantities = holdout.varying_slopes_quantities(draws)[0]
    cov = np.asarray(trace["ab"]["fn"].base_dist.covariance_matrix)
    assert quantities[5] == pytest.approx(cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]))
    ab = quantities[6:].reshape(5, 2)
    np.testing.assert_allclose(ab[group, 0] + ab[group, 1] * x,
                               np.asarray(trace["y"]["fn"].loc), rtol=1e-9)


def test_the_occupancy_model_sums_the_occupied_state_out():
    """log p(detections | a0, a1, b0) = sum over sites of log(psi Binomial(d | 4, p) + (1 -
    psi) [d == 0]), by SciPy, site by site."""
    holdout = load("suite_holdout")
    x, detections = np.array([-1.0, 0.0, 0.5, 2.0]), np.array([0.0, 2.0, 0.0, 4.0])
    a0, a1, b0 = 0.3, -0.7, -0.4
    with jax.enable_x64(True):
        value, _ = log_density(holdout.occupancy, (x, detections), {},
                               {"a0": a0, "a1": a1, "b0": b0})
    psi, p = 1 / (1 + np.exp(-(a0 + a1 * x))), 1 / (1 + np.exp(-b0))
    sites = np.log(psi * stats.binom(4, p).pmf(detections) + (1 - psi) * (detections == 0))
    prior = stats.norm(0, 2).logpdf([a0, a1, b0]).sum()
    assert float(value) == pytest.approx(sites.sum() + prior, rel=1e-10)


def test_the_local_level_quantities_are_the_levels_the_model_uses():
    """The compared levels (mu0 plus level_sd times the cumulated innovations) are the mean
    of y in a trace of the model, and the two sds are the sites'."""
    holdout = load("suite_holdout")
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(holdout.local_level, 6)).get_trace(np.zeros(12))
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    quantities = holdout.level_quantities(draws)[0]
    np.testing.assert_allclose(quantities[:12], np.asarray(trace["y"]["fn"].loc), rtol=1e-9)
    assert tuple(quantities[12:]) == (draws["level_sd"][0], draws["noise_sd"][0])

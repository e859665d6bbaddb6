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


def test_the_crossed_effects_quantities_are_the_effects_the_model_uses():
    """The compared subject and item effects (scale times z) give the logits of y in a
    trace of the model, and a and the two scales are the sites'."""
    fourth = load("suite_fourth")
    subject = np.repeat(np.arange(fourth.SUBJECTS), fourth.ITEMS)
    item = np.tile(np.arange(fourth.ITEMS), fourth.SUBJECTS)
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(fourth.crossed_effects, 7)).get_trace(
            subject, item, np.zeros(subject.size))
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    quantities = fourth.crossed_quantities(draws)[0]
    a, effects = quantities[0], quantities[3:]
    logits = a + effects[subject] + effects[fourth.SUBJECTS + item]
    np.testing.assert_allclose(logits, np.asarray(trace["y"]["fn"].logits), rtol=1e-9)
    assert tuple(quantities[1:3]) == (draws["s_subject"][0], draws["s_item"][0])


def test_the_laplace_regression_is_scipys_laplace_likelihood():
    """log p(y | a, b, s) is a sum of SciPy's Laplace log densities at a + x b, plus the
    priors: the model's kinks are where they should be."""
    fourth = load("suite_fourth")
    x, y = np.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]]), np.array([1.0, 4.0, -2.0])
    a, b, s = 0.7, np.array([2.0, -1.0]), 0.6
    with jax.enable_x64(True):
        value, _ = log_density(fourth.laplace_regression, (x, y), {},
                               {"a": a, "b": b, "s": s})
    prior = (stats.norm(0, 5).logpdf([a, *b]).sum() + stats.halfnorm(scale=2.0).logpdf(s))
    expected = stats.laplace(a + x @ b, s).logpdf(y).sum() + prior
    assert float(value) == pytest.approx(expected, rel=1e-10)


def test_the_zero_events_reference_is_the_exact_beta_posterior():
    """Each arm's posterior is Beta(1 + events, 1 + trials - events); NUTS's stored means
    and sds are within its Monte Carlo error of them (0.05 sd; 3%)."""
    stored = everyday.data("zero_events")
    events, trials = np.asarray(stored["events"]), np.asarray(stored["trials"])
    exact = stats.beta(1 + events, 1 + trials - events)
    _, _, _, mean, sd, _ = everyday.problem("zero_events", lambda *parts: parts)
    assert events[1] == 0
    np.testing.assert_array_less(np.abs(mean - exact.mean()) / exact.std(), 0.05)
    np.testing.assert_allclose(sd, exact.std(), rtol=0.03)


def test_the_large_offset_reference_is_centred_on_the_readings_mean():
    """With a N(0, 1e7^2) prior mu's posterior is Student-t about the readings' mean to
    within 1e-9 of its sd, so NUTS's stored mean of mu is within 0.05 sd of it: the mean
    of the readings as every fit and the reference get them, in float32 (0.125 apart at
    1.5e6, which moves their mean by 0.06 sd here)."""
    stored = np.asarray(everyday.data("large_offset")["y"])
    y = stored.astype(np.float32).astype(np.float64)
    assert abs(y.mean() - stored.mean()) > 0.01
    _, _, _, mean, sd, _ = everyday.problem("large_offset", lambda *parts: parts)
    assert abs(mean[0] - y.mean()) < 0.05 * sd[0]
    assert sd[0] == pytest.approx(y.std(ddof=1) / np.sqrt(y.size), rel=0.05)


def test_the_grid_adjacency_is_the_rook_neighbourhood():
    """Area (r, c) of a 4 x 4 grid neighbours exactly (r +- 1, c) and (r, c +- 1) within
    the grid: corners 2, edges 3, the inside 4; the matrix is symmetric."""
    large = load("suite_large")
    adjacency = large.grid_adjacency(4)
    np.testing.assert_array_equal(adjacency, adjacency.T)
    for r in range(4):
        for c in range(4):
            expected = {(r + dr) * 4 + (c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                        if 0 <= r + dr < 4 and 0 <= c + dc < 4}
            assert set(np.flatnonzero(adjacency[r * 4 + c])) == expected


def test_the_car_prior_is_the_gaussian_of_its_precision():
    """log CAR(phi | 0, alpha, tau) in the model is log N(phi | 0, (tau (D - alpha W))^-1)
    by SciPy, D the neighbour counts and W the grid's adjacency."""
    large = load("suite_large")
    adjacency = large.grid_adjacency(large.GRID)
    phi = np.random.default_rng(1).standard_normal(adjacency.shape[0])
    alpha, tau, b0 = 0.7, 1.5, 0.3
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.substitute(
            large.car_poisson, {"b0": b0, "alpha": alpha, "tau": tau, "phi": phi})).get_trace(
            np.ones(adjacency.shape[0]), np.ones(adjacency.shape[0]))
        value = float(trace["phi"]["fn"].log_prob(phi))
    precision = tau * (np.diag(adjacency.sum(1)) - alpha * adjacency)
    expected = stats.multivariate_normal(np.zeros(phi.size), np.linalg.inv(precision)).logpdf(phi)
    assert value == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("name", ["varying_intercepts", "many_groups"])
def test_the_large_models_group_effects_are_the_ones_the_model_uses(name):
    """The compared group effects (scale times z) plus the intercept give the mean of y in
    a trace of the model (x's term added for the varying intercepts)."""
    large = load("suite_large")
    model, quantities, _ = large.MODELS[name]
    if name == "many_groups":
        args = (np.zeros((3000, 4)),)
    else:
        group = np.repeat(np.arange(large.VARYING_GROUPS), 2)
        args = (group, np.linspace(-1.0, 1.0, group.size), np.zeros(group.size))
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(model, 8)).get_trace(*args)
    draws = {s: np.asarray(v["value"])[None] for s, v in trace.items()
             if v["type"] == "sample" and not v["is_observed"]}
    q = quantities(draws)[0]
    loc = np.asarray(trace["y"]["fn"].mean)
    if name == "many_groups":
        np.testing.assert_allclose(q[0] + q[3:], loc[:, 0], rtol=1e-9)
    else:
        np.testing.assert_allclose(q[0] + q[4:][args[0]] + q[1] * args[1], loc, rtol=1e-9)


def _latent_draws(trace):
    return {s: np.asarray(v["value"])[None] for s, v in trace.items()
            if v["type"] == "sample" and not v["is_observed"]}


def test_the_ar_states_are_the_ones_the_model_uses():
    """The compared states (the stationary first state, then phi times the last plus sigma
    times an innovation, by a loop in NumPy) give the model's Poisson rates."""
    sixth = load("suite_sixth")
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(sixth.poisson_ar_states, 9)).get_trace(
            np.zeros(sixth.DAYS))
    q = sixth.ar_quantities(_latent_draws(trace))[0]
    np.testing.assert_allclose(np.exp(q[0] + q[3:]), np.asarray(trace["y"]["fn"].mean),
                               rtol=1e-9)


def test_the_nested_effects_are_the_ones_the_model_uses():
    """mu plus a pupil's district effect and school effect is the mean of its outcome."""
    sixth = load("suite_sixth")
    school = np.arange(sixth.SCHOOLS)
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(sixth.nested_hierarchy, 10)).get_trace(
            school, np.zeros(school.size))
    q = sixth.nested_quantities(_latent_draws(trace))[0]
    district = school // (sixth.SCHOOLS // sixth.DISTRICTS)
    mean = q[0] + q[4:4 + sixth.DISTRICTS][district] + q[4 + sixth.DISTRICTS:][school]
    np.testing.assert_allclose(mean, np.asarray(trace["y"]["fn"].mean), rtol=1e-9)


def _cjs_by_enumeration(history, phi, p):
    """P(history after its first capture) by summing over the occasion of death (alive
    through occasion d, dead after it), a loop in plain Python."""
    occasions = len(history)
    first = history.index(1)
    total = 0.0
    for death in range(first, occasions):  # the last occasion alive
        chance = 1.0
        for t in range(first, death):
            seen = history[t + 1]
            chance *= phi[t] * (p[t] if seen else 1.0 - p[t])
        chance *= (1.0 - phi[death]) if death < occasions - 1 else 1.0
        if any(history[death + 1:]):
            chance = 0.0
        total += chance
    return total


def test_the_capture_recapture_likelihood_sums_the_unseen_states_out():
    """The CJS model's log density at given survival and recapture chances is the sum of
    its priors' (Beta(1, 1): 0) and each history's probability by enumeration of the
    occasion of death."""
    seventh = load("suite_seventh")
    histories = [[1, 0, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 0, 0], [1, 1, 0, 0, 1],
                 [0, 0, 0, 1, 0]]
    phi, p = np.array([0.8, 0.6, 0.7, 0.9]), np.array([0.5, 0.3, 0.6, 0.4])
    with jax.enable_x64(True):
        value, _ = log_density(seventh.cjs_survival, (np.array(histories, np.int32),), {},
                               {"phi": phi, "p": p})
    expected = sum(np.log(_cjs_by_enumeration(h, phi, p)) for h in histories)
    assert float(value) == pytest.approx(expected, rel=1e-10)


def test_the_selection_likelihood_integrates_the_joint_normal():
    """The Heckman model's log density is its priors' plus, per row, the bivariate normal
    of (selection error, outcome error) integrated over the selection error where the row
    is selected (its outcome observed) or not (SciPy's quadrature and normal cdf)."""
    from scipy import integrate

    seventh = load("suite_seventh")
    x, z = np.array([0.5, -1.0, 1.5]), np.array([1.0, 0.2, -0.7])
    selected, y = np.array([1, 0, 1], np.int32), np.array([1.8, 0.0, 0.4])
    b, g, sigma, rho = np.array([1.0, 0.7]), np.array([0.2, 1.0]), 1.5, 0.6
    with jax.enable_x64(True):
        value, _ = log_density(seventh.heckman_selection, (x, z, selected, y), {},
                               {"b": b, "g": g, "sigma": sigma, "rho": rho})
    joint = stats.multivariate_normal([0.0, 0.0], [[1.0, rho * sigma], [rho * sigma, sigma**2]])
    expected = (stats.norm(0, 2.5).logpdf([*b, *g]).sum() + stats.halfnorm(scale=2.0)
                .logpdf(sigma) + np.log(0.5))
    for xi, zi, si, yi in zip(x, z, selected, y, strict=True):
        index = g[0] + g[1] * zi
        if si:
            residual = yi - b[0] - b[1] * xi
            mass, _ = integrate.quad(lambda u, e: joint.pdf([u, e]), -index, np.inf,
                                     args=(residual,), epsabs=1e-13)
            expected += np.log(mass)
        else:
            expected += stats.norm.logcdf(-index)
    assert float(value) == pytest.approx(expected, rel=1e-8)


def test_the_gp_logits_are_the_ones_the_model_uses():
    """The compared f (the Cholesky factor of the kernel, in NumPy, times z) are the
    Bernoulli logits of the model's trace."""
    seventh = load("suite_seventh")
    x = np.linspace(0.0, 10.0, seventh.GP_POINTS)
    with jax.enable_x64(True):
        trace = handlers.trace(handlers.seed(seventh.gp_classification, 11)).get_trace(
            x, np.zeros(x.size))
    q = seventh.gp_quantities(_latent_draws(trace))[0]
    np.testing.assert_allclose(q[2:], np.asarray(trace["y"]["fn"].logits), rtol=1e-9,
                               atol=1e-12)


def test_the_skew_normal_is_scipys_skewnorm():
    """The eighth holdout's skew-normal density, written out through ``numpyro.factor``,
    is SciPy's ``skewnorm`` (Azzalini's), plus the priors; and its simulated data follow
    that distribution at the true (location 1, scale 2, shape 4): a Kolmogorov-Smirnov
    test."""
    eighth = load("suite_eighth")
    y = np.array([0.3, 1.2, 2.9, 5.0, -0.4])
    loc, scale, shape = 0.8, 1.7, 3.5
    with jax.enable_x64(True):
        value, _ = log_density(eighth.skew_normal, (y,), {},
                               {"loc": loc, "scale": scale, "shape": shape})
    prior = (stats.norm(0, 10).logpdf(loc) + stats.halfnorm(scale=5.0).logpdf(scale)
             + stats.norm(0, 5).logpdf(shape))
    expected = stats.skewnorm(shape, loc, scale).logpdf(y).sum() + prior
    assert float(value) == pytest.approx(expected, rel=1e-10)
    drawn = eighth.simulate("skew_normal", np.random.default_rng(0))["y"]
    assert stats.kstest(drawn, stats.skewnorm(4.0, 1.0, 2.0).cdf).pvalue > 0.01

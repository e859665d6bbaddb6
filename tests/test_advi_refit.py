"""advi.refit: the second Laplace start from a fitted q's mean, and advi.fit's choice between
the fit from the refused start and the fit from the second start; and the converse, the fit
from the initial q after a fit from an accepted Laplace start that was stuck or failed."""

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from posteriors import earnings

import advi

MODE = np.array([3.0, -1.0])
COV = np.array([[1.0, 0.999], [0.999, 1.0]])  # a narrow ridge


def _ridge_fns():
    precision = np.linalg.inv(COV)

    def log_density(zeta, data):
        d = zeta - data
        return -0.5 * d @ jnp.asarray(precision, zeta.dtype) @ d

    return advi.log_density_functions(log_density, 2), jnp.asarray(MODE)


def _down_the_ridge():
    """Mean-field parameters 5 marginal sds (about 220 conditional sds) down the ridge, with
    the conditional sds (the mean-field optimum's), as a fit crawling along it ends."""
    conditional_sd = np.sqrt(1 - 0.999**2)
    mu = MODE + 5.0 * np.array([1.0, 1.0])
    return advi.MeanFieldParams(mu, np.full(2, np.log(conditional_sd)))


def test_the_second_start_reaches_the_mode_from_down_the_ridge():
    fns, data = _ridge_fns()
    start = advi.refit.second_start(fns, advi.MEANFIELD, _down_the_ridge(), data, -np.inf)
    assert start is not None and start.ok
    np.testing.assert_allclose(start.params.mu, MODE, atol=1e-6)
    np.testing.assert_allclose(np.exp(start.params.omega), np.sqrt(1 - 0.999**2), rtol=1e-6)


def test_no_second_start_where_the_refused_search_climbed_higher(monkeypatch):
    fns, data = _ridge_fns()
    params = _down_the_ridge()
    here = float(fns.value_and_grad(params.mu, data)[0])
    assert advi.refit.second_start(fns, advi.MEANFIELD, params, data, here + 1.0) is None
    # NaN: the refused search found no finite point, so the second start is tried
    assert advi.refit.second_start(fns, advi.MEANFIELD, params, data, np.nan) is not None
    monkeypatch.setattr(advi.refit, "SEARCH_STEPS", 0)
    assert advi.refit.second_start(fns, advi.MEANFIELD, params, data, -np.inf) is None


def _ranked_elbo(monkeypatch, second_better):
    """CompiledADVI.elbo with the choice's two estimates replaced by a ranking; returns the
    list they are appended to."""
    estimates = []
    real_elbo = advi.compiled.CompiledADVI.elbo

    def elbo(self, params, key, salt, trial=False):
        value, log_weights = real_elbo(self, params, key, salt, trial)
        if salt == advi.refit.ELBO_SALT:  # the choice: the first call is the first fit's
            value = float(len(estimates) == int(second_better))
            estimates.append(value)
        return value, log_weights

    monkeypatch.setattr(advi.compiled.CompiledADVI, "elbo", elbo)
    return estimates


@pytest.mark.parametrize("second_better", [True, False])
def test_the_fit_with_the_larger_elbo_is_returned_with_its_own_warnings(second_better,
                                                                        monkeypatch):
    monkeypatch.setattr(advi.laplace, "LAPLACE_EXTRA_STAGES", 0)
    estimates = _ranked_elbo(monkeypatch, second_better)
    model, height, earn = earnings(1)

    seen = []

    def fit():
        times = iter(np.arange(0.0, 1e6, 0.5))  # a fake clock: every reading 0.5 s on
        return advi.fit(model, height, earn, rng_key=jax.random.PRNGKey(0), preset="robust",
                        dtype="float32", khat_samples=0, clock=lambda: float(next(times)),
                        checkpoint=seen.append)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit()
    assert len(estimates) == 2
    # the hook's last call is the returned q, at the returned time, and only one call is
    # made after the second fit's own last one
    np.testing.assert_array_equal(seen[-1].approximation.params.mu, result.params.mu)
    assert seen[-1].wall_s == result.wall_s
    assert seen[-2].wall_s < seen[-1].wall_s if second_better else (
        seen[-2].wall_s == seen[-1].wall_s and seen[-2].approximation is not result.approximation)
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    if second_better:
        assert result.start.startswith("laplace, again after a fit"), result.start
        assert messages == [] and result.warnings == ()
    else:
        assert result.start.startswith("init=random (no usable mode"), result.start
        assert messages and messages == list(result.warnings)
    # the returned fit's seconds go on past the first fit's, whichever is returned
    monkeypatch.setattr(advi.refit, "SEARCH_STEPS", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = fit()
    assert first.start.startswith("init=random") and len(estimates) == 2
    assert result.wall_s > first.wall_s + 1.0


def _log_gamma(zeta):
    """log p of 10 independent logs of Gamma(0.25, 1) draws: its mode at log 0.25, where the
    Laplace start puts q = N(-1.39, 2^2) per coordinate, 2 sds above the mean-field
    optimum's mean (-3.39; its sd is 2 too): the ELBO's gradient there is
    2 (0.25 - e^(-1.39 + 2)) = -3.2 q-sds per coordinate."""
    return jnp.sum(0.25 * zeta - jnp.exp(zeta))


@pytest.mark.parametrize("second_better", [True, False])
def test_a_fit_stuck_after_the_laplace_start_runs_again_from_the_initial_q(second_better,
                                                                           monkeypatch):
    estimates = _ranked_elbo(monkeypatch, second_better)
    # q's steady crawl away from the mode shows in split R-hat, which holds the ELBO's
    # stop (SETTLED_RHAT_MAX); lifted here, so that the ELBO's rule stops the fit stuck as
    # one whose drift split R-hat cannot see would be
    monkeypatch.setattr(advi.robust, "SETTLED_RHAT_MAX", float("inf"))
    target = advi.from_log_density(_log_gamma, 10)
    seen = []
    times = iter(np.arange(0.0, 1e6, 0.5))  # a fake clock: every reading 0.5 s on
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # steps too small to leave the mode before the ELBO rule (any gain below 100% of
        # the ELBO's size) stops the fit: stuck 2 sds from the optimum
        result = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust",
                          dtype="float32", eta=0.001, tol_rel_obj=1.0, khat_samples=0,
                          checkpoint=seen.append, clock=lambda: float(next(times)))
    assert len(estimates) == 2
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert messages == list(result.warnings)
    if second_better:
        assert result.start.startswith("init=random, again after the fit from the Laplace "
                                       "start ("), result.start
        assert result.start.endswith(" L-BFGS steps) did not reach the optimum")
    else:
        assert result.start.startswith("laplace ("), result.start
        assert result.convergence_reason == "elbo settled"
        assert any(n.startswith(advi.checks.STUCK_NOTE) for n in result.warnings)
        np.testing.assert_allclose(result.params.mu, np.log(0.25), atol=0.3)
    # the hook's last call is the returned q, at the returned time, after both fits
    np.testing.assert_array_equal(seen[-1].approximation.params.mu, result.params.mu)
    assert seen[-1].wall_s == result.wall_s
    # the hook saw the second fit begin again from iteration 0
    assert any(b.iteration < a.iteration for a, b in itertools.pairwise(seen))


def test_no_second_fit_after_the_laplace_start_where_the_fit_reached_the_optimum_or_ran_out(
        monkeypatch):
    estimates = _ranked_elbo(monkeypatch, True)
    target = advi.from_log_density(_log_gamma, 10)
    result = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust", dtype="float32",
                      khat_samples=0)
    assert result.start.startswith("laplace (") and result.warnings == ()
    # within half of the optimum's sd (2) of its mean
    np.testing.assert_allclose(result.params.mu, np.log(0.25) - 2.0, atol=1.0)
    # cut short by max_iter, still at the mode: running longer is the remedy, not a restart
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        short = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust",
                         dtype="float32", max_iter=1, khat_samples=0)
    assert short.start.startswith("laplace (") and short.convergence_reason == "max_iter"
    assert any(str(w.message).startswith(advi.checks.GRADIENT_NOTE) for w in caught)
    assert estimates == []


@pytest.mark.parametrize("recovers", [True, False])
def test_a_fit_failing_after_the_laplace_start_runs_again_from_the_initial_q(recovers,
                                                                            monkeypatch):
    """Every chunk of the fit from the Laplace start fails (non-finite draws, as the small
    stochastic volatility model's full-rank q did): after the restart policy's narrowings
    and smaller etas it raises ADVIError, and the fit runs again from the initial q."""
    compiled = advi.compiled.CompiledADVI
    real_run, real_initial = compiled.run, compiled.initial_state
    fresh = []

    def initial_state(self):
        fresh.append(True)
        return real_initial(self)

    def run(self, state, eta, key, salt, num_steps, trial=False, narrowable=False):
        out = real_run(self, state, eta, key, salt, num_steps, trial, narrowable)
        if fresh and recovers:
            return out
        new, moments = out
        return new._replace(failed=jnp.asarray(True)), moments

    monkeypatch.setattr(compiled, "run", run)
    monkeypatch.setattr(compiled, "initial_state", initial_state)
    mean = jnp.array([3.0, -2.0])
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z - mean) ** 2), 2)
    now = [0.0]

    def clock():  # a fake clock: 100 s a reading until the second fit begins, then 0.5 s
        now[0] += 0.5 if fresh else 100.0
        return now[0]

    def fit():
        return advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust",
                        dtype="float32", khat_samples=0, clock=clock)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the failing fit's restarts
        if not recovers:
            with pytest.raises(advi.ADVIError):
                fit()
            assert fresh == [True]
            return
        result = fit()
    assert fresh == [True]
    assert result.start.startswith("init=random, again after the fit from the Laplace "
                                   "start ("), result.start
    np.testing.assert_allclose(result.params.mu, mean, atol=0.15)
    # its seconds continue the failed fit's (its restarts' chunks: hundreds of seconds on
    # this clock each), not only the Laplace start's
    assert result.wall_s > 500.0


def test_a_second_start_from_where_the_refused_search_ended_near_the_mode():
    fns, data = _ridge_fns()
    params = _down_the_ridge()
    here = float(fns.value_and_grad(params.mu, data)[0])
    near = MODE + np.array([0.01, 0.012])  # the search stopped a few steps short of it
    start = advi.refit.second_start(fns, advi.MEANFIELD, params, data, here + 1.0, near)
    assert start is not None and start.ok
    np.testing.assert_allclose(start.params.mu, MODE, atol=1e-6)


def test_a_fit_far_down_a_valley_starts_again_near_where_the_refused_search_ended():
    """100 measurements near 1e5 with an unknown noise scale: from the random q the fit ends
    86,617 posterior sds off (warned), and the refused search ended above it, a few plain
    L-BFGS steps from the mode: the fit starts again there and ends near the posterior."""
    import numpyro
    import numpyro.distributions as dist

    def measurements(y):
        c = numpyro.sample("c", dist.Normal(0.0, 1e6))
        s = numpyro.sample("s", dist.HalfNormal(10.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(c, s), obs=y)

    y = (1e5 + np.random.default_rng(0).normal(size=100)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = advi.fit(measurements, y, rng_key=jax.random.PRNGKey(2), preset="robust")
    assert result.start.startswith("laplace, again after a fit from init=random"), result.start
    assert not [w for w in caught if w.category is RuntimeWarning], caught
    draws = result.sample(jax.random.PRNGKey(1), 1000)
    sd = np.std(y, ddof=1)
    assert abs(float(np.mean(draws["c"])) - float(np.mean(y))) < 0.5 * sd / 10
    assert abs(float(np.mean(draws["s"])) - sd) < 0.5 * sd / np.sqrt(200)

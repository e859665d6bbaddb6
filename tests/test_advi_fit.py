"""advi.fit end to end: analytic posteriors, eta search, restarts, seeds, errors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi

KEY = jax.random.PRNGKey(0)


def _mvn_target(mean, cov):
    precision = jnp.linalg.inv(cov)
    return advi.from_log_density(
        lambda z: -0.5 * (z - mean) @ precision @ (z - mean), dim=mean.shape[0]
    )


def _tight(**kwargs):
    # Small tolerance, many draws: the fit should sit at the optimum up to SGD noise.
    defaults = dict(rng_key=KEY, grad_samples=10, tol_rel_obj=1e-4, max_iter=4000, eta=1.0)
    defaults.update(kwargs)
    return defaults


def test_meanfield_recovers_a_diagonal_gaussian():
    mean, sd = jnp.array([1.0, -3.0, 10.0]), jnp.array([0.5, 2.0, 1.0])
    with pytest.warns(RuntimeWarning, match="max_iter"):
        result = advi.fit(_mvn_target(mean, jnp.diag(sd**2)), **_tight())
    np.testing.assert_allclose(result.params.mu, mean, atol=0.1)
    np.testing.assert_allclose(jnp.exp(result.params.omega), sd, rtol=0.1)
    assert result.elbo_history.elbo[-1] == pytest.approx(0.5 * 3 * math.log(2 * math.pi), abs=0.5)


def test_fullrank_recovers_a_correlated_gaussian():
    mean = jnp.array([2.0, -1.0])
    cov = jnp.array([[1.0, 0.8], [0.8, 1.0]])
    with pytest.warns(RuntimeWarning, match="max_iter"):
        result = advi.fit(_mvn_target(mean, cov), family="fullrank", **_tight())
    L = jnp.tril(result.params.L)
    np.testing.assert_allclose(result.params.mu, mean, atol=0.1)
    np.testing.assert_allclose(L @ L.T, cov, atol=0.12)


def _poisson_exponential(x):
    lam = numpyro.sample("lam", dist.Exponential(1.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("x", dist.Poisson(lam), obs=x)


def test_poisson_exponential_matches_the_kl_optimal_lognormal():
    # Posterior Gamma(a, b), a = 1 + sum x, b = 1 + n. Over N(m, s^2) on zeta = log lambda,
    # the ELBO is a m - b exp(m + s^2/2) + log s + const, maximised at s^2 = 1/a,
    # m = log(a / b) - 1/(2a): the lognormal closest to the posterior in KL(q || p).
    x = jnp.array([3.0, 2, 4, 5, 1, 3, 2, 6, 3, 4])
    a, b = 1.0 + float(x.sum()), 1.0 + x.shape[0]
    with pytest.warns(RuntimeWarning, match="max_iter"):
        fit_kwargs = _tight(grad_samples=20, max_iter=3000, eta=0.1)
        result = advi.fit(_poisson_exponential, x, **fit_kwargs)
    assert float(result.params.mu[0]) == pytest.approx(math.log(a / b) - 0.5 / a, abs=0.02)
    assert float(jnp.exp(result.params.omega[0])) == pytest.approx(math.sqrt(1 / a), rel=0.1)
    draws = result.sample(jax.random.PRNGKey(1), 4000)
    assert draws["lam"].shape == (4000,)
    assert float(draws["lam"].mean()) == pytest.approx(a / b, rel=0.03)
    assert float(result.mean()["lam"]) == pytest.approx(math.exp(result.params.mu[0]), rel=1e-5)
    assert math.isfinite(result.pareto_khat)


def _normal_mean(x, scale):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10 * scale))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("x", dist.Normal(mu, scale), obs=x)


class _FakeRunner:
    """What :func:`advi.eta_search.adapt_eta` calls: ``run`` moves q to "eta" (the state's
    params), ``elbo`` reads the ELBO there from a table."""

    def __init__(self, elbos):
        self.elbos, self.tried = elbos, []

    def elbo(self, params, key, salt, trial=False):
        return self.elbos[params], None

    def run(self, state, eta, key, salt, num_steps, trial=False):
        assert trial
        self.tried.append(eta)
        return state._replace(params=eta)


def test_the_eta_search_keeps_the_best_eta_before_the_elbo_falls():
    """Stan's rule (advi::adapt_eta): try 100, 10, 1, ... from the initial q; stop at the
    first eta whose ELBO is below the best so far once that best beats the initial ELBO,
    and keep the best."""
    from advi.eta_search import adapt_eta
    from advi.step import ADVIState

    start = ADVIState("init", None, 0, False, 0)
    runner = _FakeRunner({"init": -100.0, 100.0: -200.0, 10.0: -50.0, 1.0: -20.0,
                          0.1: -30.0, 0.01: -10.0})
    assert adapt_eta(runner, start, KEY, 50) == 1.0 and runner.tried == [100.0, 10.0, 1.0, 0.1]
    runner = _FakeRunner({"init": -100.0, 100.0: -float("inf"), 10.0: -150.0, 1.0: -120.0,
                          0.1: -110.0, 0.01: -90.0})
    assert adapt_eta(runner, start, KEY, 50) == 0.01  # the last eta improves: kept
    runner = _FakeRunner({"init": -100.0, **{eta: -200.0 for eta in (100, 10, 1, 0.1, 0.01)}})
    with pytest.raises(advi.ADVIError, match="every eta in .* failed to improve"):
        adapt_eta(runner, start, KEY, 50)
    assert adapt_eta(runner, start, KEY, 50, default=0.1) == 0.1  # a start at the mode
    with pytest.raises(advi.ADVIError, match="initial approximation is not finite"):
        adapt_eta(_FakeRunner({"init": -float("inf")}), start, KEY, 50)


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_eta_none_searches_eta_with_either_preset(preset):
    """``eta=None`` runs Stan's eta search before the main loop, the robust preset's chunks
    (with their moments) included, and the fit reaches the posterior mean."""
    x = jnp.asarray(5.0 + np.random.default_rng(0).normal(size=50), jnp.float32)
    result = advi.fit(_normal_mean, x, 1.0, rng_key=KEY, preset=preset, eta=None,
                      khat_samples=0)
    assert result.eta_adapted and result.eta in (100.0, 10.0, 1.0, 0.1, 0.01)
    exact = float(x.sum()) / (50 + 1e-2)  # prior sd 10, unit noise
    assert abs(float(result.params.mu[0]) - exact) < 3 / np.sqrt(50)


def test_same_key_same_result_bit_for_bit():
    x = jnp.array([3.0, 2, 4, 5, 1])
    kwargs = dict(rng_key=KEY, max_iter=500, checkpoint_every=50, khat_samples=0)
    one = advi.fit(_poisson_exponential, x, **kwargs)
    two = advi.fit(_poisson_exponential, x, **kwargs)
    np.testing.assert_array_equal(one.params.mu, two.params.mu)
    np.testing.assert_array_equal(one.params.omega, two.params.omega)
    np.testing.assert_array_equal(one.elbo_history.elbo, two.elbo_history.elbo)
    assert one.eta == two.eta
    other = advi.fit(_poisson_exponential, x, **{**kwargs, "rng_key": jax.random.PRNGKey(1)})
    assert not np.array_equal(one.params.mu, other.params.mu)


class _FakeClock:
    """Seconds that pass only when a test says so (each reading is 1 s after the last)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def test_checkpoint_hook_time_is_excluded_and_it_can_stop_the_fit():
    clock, seen = _FakeClock(), []

    def hook(info):
        seen.append((info.iteration, info.wall_s,
                     info.sample(jax.random.PRNGKey(2), 3)["lam"].shape))
        clock.now += 1000.0  # a slow hook
        return info.iteration >= 300

    x = jnp.array([3.0, 2, 4, 5, 1])
    result = advi.fit(
        _poisson_exponential, x, rng_key=KEY, eta=0.1, tol_rel_obj=1e-9, checkpoint_every=100,
        checkpoint=hook, khat_samples=0, clock=clock,
    )
    assert [it for it, _, _ in seen] == [100, 200, 300]
    assert seen[0][2] == (3,)
    assert result.convergence_reason == "stopped by checkpoint"
    assert not result.converged
    assert 0 < result.wall_s < 1000.0  # none of the hooks' 3,000 s
    assert result.compile_s < 1000.0 and result.adapt_s <= result.wall_s
    # each hook saw the seconds of the history row at its iteration
    history = dict(zip(result.elbo_history.iteration, result.elbo_history.wall_s, strict=True))
    assert [w for _, w, _ in seen] == [history[it] for it, _, _ in seen]
    assert np.all(np.diff(result.elbo_history.wall_s) > 0)


def _wall_target():
    # log p(z) = -0.5 (z / 0.01)^2 for |z| < 20, NaN outside: eta = 100 overshoots the wall.
    return advi.from_log_density(
        lambda z: jnp.where(jnp.abs(z[0]) < 20.0, -0.5 * (z[0] / 0.01) ** 2, jnp.nan), dim=1
    )


def test_non_finite_draws_restart_with_a_smaller_eta():
    with pytest.warns(RuntimeWarning, match="restarting from the last finite state with eta=10"):
        result = advi.fit(_wall_target(), rng_key=KEY, eta=100.0, init="zero", max_iter=400,
                          khat_samples=0)
    assert result.restarts[0][1:] == (100.0, 10.0)
    assert result.eta < 100.0
    assert np.all(np.isfinite(result.params.mu)) and np.all(np.isfinite(result.params.omega))
    assert np.all(np.isfinite(result.elbo_history.elbo))


def test_failure_at_the_smallest_eta_keeps_the_last_finite_state():
    # log p(z) = z for z < 1, NaN beyond: entropy and log p push q into the NaN region.
    target = advi.from_log_density(lambda z: jnp.where(z[0] < 1.0, z[0], jnp.nan), dim=1)
    with pytest.raises(advi.ADVIError, match="smallest eta") as err:
        advi.fit(target, rng_key=KEY, eta=0.01, init="zero", tol_rel_obj=1e-12,
                 max_iter=100_000, khat_samples=0)
    assert 'remedy: fit in float64 (dtype="float64"' in str(err.value)
    assert "meanfield" not in str(err.value)  # q is mean-field already
    partial = err.value.result
    assert partial is not None and partial.num_iterations > 0
    assert np.all(np.isfinite(partial.params.mu))
    assert len(partial.elbo_history.elbo) > 0 and np.all(np.isfinite(partial.elbo_history.elbo))


def test_every_eta_failing_is_a_clear_error():
    @jax.custom_jvp
    def wrong_way(z):
        return -0.5 * jnp.sum((z / 0.1) ** 2)

    @wrong_way.defjvp
    def _(primals, tangents):
        (z,), (dz,) = primals, tangents
        return wrong_way(z), jnp.sum((z / 0.01 + 5.0) * dz)  # pointing away from the mode

    target = advi.from_log_density(wrong_way, dim=20)
    with pytest.raises(advi.ADVIError, match="every eta"):
        advi.fit(target, rng_key=KEY, init="zero", elbo_samples=2000)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"grad_samples": 0}, "grad_samples=0"),
        ({"elbo_samples": -1}, "elbo_samples=-1"),
        ({"eta": -1.0}, "eta=-1.0"),
        ({"tol_rel_obj": 0}, "tol_rel_obj=0"),
        ({"max_iter": 0}, "max_iter=0"),
        ({"family": "diag"}, "family='diag'"),
        ({"init": "ones"}, "init='ones'"),
        ({"minibatch_size": 0}, "minibatch_size=0"),
        ({"minibatch_size": 11}, "minibatch_size=11 .*N=10"),
        ({"minibatch_size": 2, "minibatch_plate": "rows"}, "no plate named 'rows'"),
    ],
)
def test_bad_arguments_fail_before_any_work(kwargs, match):
    x = jnp.arange(10.0)
    with pytest.raises(ValueError, match=match):
        advi.fit(_poisson_exponential, x, rng_key=KEY, **kwargs)


def _poisson_exponential_subsampled(x):
    lam = numpyro.sample("lam", dist.Exponential(1.0))
    with numpyro.plate("data", x.shape[0]) as idx:
        numpyro.sample("x", dist.Poisson(lam), obs=x[idx])


def test_stochastic_advi_runs_on_a_plate_and_skips_khat():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.poisson(3.0, size=500), jnp.float32)
    result = advi.fit(_poisson_exponential_subsampled, x, rng_key=KEY, minibatch_size=50,
                      eta=0.1, max_iter=2000)
    a, b = 1.0 + float(x.sum()), 501.0
    assert float(jnp.exp(result.params.mu[0])) == pytest.approx(a / b, rel=0.05)
    assert result.pareto_khat is None


def test_progress_bar_shows_iterations_elbo_and_statistic(capsys):
    """progress_bar=True draws tqdm's bar on standard error; None (the default) draws
    nothing where standard error is not a terminal (as under pytest, or a workflow job)."""
    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("data", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    y = jnp.asarray(np.random.default_rng(0).normal(size=50), jnp.float32)
    result = advi.fit(model, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                      progress_bar=True)
    err = capsys.readouterr().err
    assert f"{result.num_iterations}/10000" in err  # the bar reached the last iteration
    assert "elbo" in err and "split R-hat" in err
    advi.fit(model, y, rng_key=jax.random.PRNGKey(0), preset="robust")
    assert capsys.readouterr().err == ""


def test_sample_and_mean_raise_where_constrained_values_are_not_finite():
    """A q whose mean sits at zeta = 100 for a positive site: exp(100) overflows float32,
    and sample() and mean() raise naming the site and the count, instead of returning
    inf."""

    def model(x):
        lam = numpyro.sample("lam", dist.Exponential(1.0))
        with numpyro.plate("data", x.shape[0]):
            numpyro.sample("x", dist.Poisson(lam), obs=x)

    target = advi.from_numpyro(model, (jnp.array([1, 2, 3]),))
    far = advi.Approximation(advi.MEANFIELD, advi.MeanFieldParams(
        jnp.array([100.0], jnp.float32), jnp.zeros(1, jnp.float32)), target)
    with pytest.raises(advi.ADVIError, match=r"'lam': 7 of 7 draws.*float32"):
        far.sample(jax.random.PRNGKey(0), 7)
    with pytest.raises(advi.ADVIError, match=r"'lam': 1 of the values of T\^-1\(mu\)"):
        far.mean()
    near = far.params._replace(mu=jnp.array([0.5], jnp.float32))
    draws = advi.Approximation(advi.MEANFIELD, near, target).sample(jax.random.PRNGKey(0), 7)
    assert np.all(np.isfinite(np.asarray(draws["lam"])))

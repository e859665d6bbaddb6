"""preset="robust": Laplace start, preconditioned steps, stationarity stop, averaging; presets
and options; the step API; compiled functions reused across fits."""

import contextlib
import logging
import math
import re
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi

KEY = jax.random.PRNGKey(0)


def _ill_conditioned_regression():
    """Correlated (0.9) predictors at column scales 1e-3..1e4, known noise: the posterior is
    Gaussian, so the mean-field optimum has the exact posterior means."""
    rng = np.random.default_rng(0)
    scales = np.array([1e-3, 1e-1, 1.0, 1e2, 1e4])
    corr = 0.9 * np.ones((5, 5)) + 0.1 * np.eye(5)
    X = rng.normal(size=(200, 5)) @ np.linalg.cholesky(corr).T * scales
    y = X @ (rng.normal(size=5) / scales) + rng.normal(size=200)
    prior_sd = 10.0 / scales

    def model(X, y):
        w = numpyro.sample("w", dist.Normal(0.0, jnp.asarray(prior_sd, X.dtype)).to_event(1))
        numpyro.sample("y", dist.Normal(X @ w, 1.0), obs=y)

    precision = X.T @ X + np.diag(prior_sd**-2.0)
    cov = np.linalg.inv(precision)
    mean, sd = cov @ X.T @ y, np.sqrt(np.diag(cov))
    data = (jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32))
    return model, data, mean, sd, np.sqrt(1.0 / np.diag(precision))


def test_robust_recovers_ill_conditioned_posterior_means_where_stan_does_not():
    model, data, mean, sd, meanfield_sd = _ill_conditioned_regression()
    errors = {}
    for preset in ("stan", "robust"):
        result = advi.fit(model, *data, rng_key=KEY, preset=preset, khat_samples=0)
        errors[preset] = np.sqrt(np.mean(((np.asarray(result.params.mu) - mean) / sd) ** 2))
    assert errors["robust"] < 0.1
    assert errors["stan"] > 1.0
    # the optimum's scales are 1 / sqrt(Lambda_kk); constant-step noise biases the average
    # of omega low (by about the variance of its iterates), and the window's average keeps
    # some of the iterates' noise: over seeds 0-23 the ratios run 0.82-1.13
    ratio = np.exp(np.asarray(result.params.omega)) / meanfield_sd
    assert np.all((ratio > 0.75) & (ratio < 1.2))
    # stopped by its own rule: the iterates' R-hat, or the ELBO settled across the window
    assert result.converged and result.convergence_reason in ("rhat", "elbo settled")
    assert result.start.startswith("laplace")


def test_robust_fullrank_recovers_a_correlated_gaussian():
    mean = jnp.array([1.0, -2.0, 0.5])
    cov = jnp.array([[1.0, 0.8, 0.0], [0.8, 1.0, 0.3], [0.0, 0.3, 0.5]])
    precision = jnp.linalg.inv(cov)
    target = advi.from_log_density(lambda z: -0.5 * (z - mean) @ precision @ (z - mean), 3)
    result = advi.fit(target, rng_key=KEY, preset="robust", family="fullrank")
    L = jnp.tril(result.params.L)
    np.testing.assert_allclose(result.params.mu, mean, atol=0.1)
    np.testing.assert_allclose(L @ L.T, cov, atol=0.1)


def test_a_funnel_whose_mode_runs_off_falls_back_to_the_random_start(centred_eight_schools):
    result = advi.fit(*centred_eight_schools, rng_key=KEY, preset="robust", khat_samples=0,
                      max_iter=3000)
    assert result.start.startswith("init=random (no usable mode")
    assert np.all(np.isfinite(np.asarray(result.params.mu)))
    assert -5.0 < float(result.mean()["mu"]) < 15.0


def test_explicit_options_override_the_preset_and_unknown_ones_are_named():
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2)
    result = advi.fit(target, rng_key=KEY, preset="robust", max_iter=100, khat_samples=0)
    assert result.num_iterations == 100 and result.eta == advi.PRESETS["robust"].eta
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['K'\].*model_kwargs"):
        advi.fit(target, rng_key=KEY, K=3)
    with pytest.raises(ValueError, match="preset='fast' is unknown"):
        advi.fit(target, rng_key=KEY, preset="fast")
    with pytest.raises(ValueError, match="rng_key=0 is not a JAX PRNG key"):
        advi.fit(target, rng_key=0)


@pytest.mark.parametrize("preset", ["robust", "stan"])
def test_a_typed_key_fits_as_its_raw_key(preset):
    # jax.random.key(seed), JAX's recommended key, gives the fit of jax.random.PRNGKey(seed)
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z - 1.0) ** 2), 2)
    typed = advi.fit(target, rng_key=jax.random.key(3), preset=preset, khat_samples=0)
    raw = advi.fit(target, rng_key=jax.random.PRNGKey(3), preset=preset, khat_samples=0)
    np.testing.assert_array_equal(typed.params.mu, raw.params.mu)
    assert typed.num_iterations == raw.num_iterations


@pytest.mark.parametrize("key, named", [
    (jax.random.key(0, impl="rbg"), "of the 'rbg' PRNG"),
    (jax.random.split(jax.random.key(0), 3), "a key of shape (3,)"),
    (jax.random.split(jax.random.PRNGKey(0), 3), "shape (3, 2) and dtype uint32"),
])
def test_a_key_the_fit_cannot_take_is_named(key, named):
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2)
    with pytest.raises(ValueError, match=re.escape(named)):
        advi.fit(target, rng_key=key)


def test_a_model_keyword_named_like_an_option_reaches_the_model():
    def model(eta):  # a model argument that shares its name with an option
        numpyro.sample("x", dist.Normal(eta, 1.0))

    result = advi.fit(model, rng_key=KEY, preset="robust", model_kwargs={"eta": 3.0},
                      khat_samples=0)
    assert float(result.params.mu[0]) == pytest.approx(3.0, abs=0.15)
    assert result.eta == advi.PRESETS["robust"].eta


def test_a_second_fit_of_the_same_shapes_compiles_nothing():
    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    first = advi.fit(model, jnp.ones(7), rng_key=KEY, preset="robust")
    first.sample(KEY, 10)
    assert first.khat_log_weights.shape == (advi.PRESETS["robust"].khat_samples,)
    other_data, other_key = jnp.full(7, 2.0, jnp.float32), jax.random.PRNGKey(1)
    with _compiles() as compiled:
        second = advi.fit(model, other_data, rng_key=other_key, preset="robust")
        second.sample(KEY, 10)
        assert math.isfinite(second.pareto_khat)
    assert compiled == []
    assert float(second.params.mu[0]) == pytest.approx(2.0, abs=0.1)


@pytest.mark.parametrize("calls_cheap", [True, False])
def test_the_robust_fit_compiles_its_elbo_only_where_khat_needs_it(calls_cheap, monkeypatch):
    # its loop needs no ELBO, and its end-of-fit k-hat check (advi.checks) tests the
    # gradient check's draws: the log weights, drawn once when first asked for, come from
    # the compiled value and gradient where 150 calls are cheap (advi.importance), and
    # from the ELBO, compiled then, where they are not
    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    if not calls_cheap:
        monkeypatch.setattr(advi.curvature, "DIFFERENCES_MAX_FLOPS", 0.0)
    y = jnp.linspace(-1.0, 3.0, 9)
    with _compiles() as compiled:
        result = advi.fit(model, y, rng_key=KEY, preset="robust", khat_samples=150)
        assert [name for name in compiled if name.startswith("elbo")] == []
        weights = result.khat_log_weights
        elbo = [name for name in compiled if name.startswith("elbo")]
        assert elbo == ([] if calls_cheap else ["elbo"])
    assert weights.shape == (150,) and np.all(np.isfinite(weights))
    assert result.khat_log_weights is weights  # drawn once


def test_a_robust_fit_compiles_its_own_functions_and_no_eager_op():
    # the Laplace start (every L-BFGS start, the Hessians, the host-side scales), the
    # stationarity stop and the data's transfer move arrays between host and device without
    # eager XLA ops, each of which would compile a small program for every new shape
    def model(x, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(x @ beta, sigma), obs=y)

    rng = np.random.default_rng(0)
    for dim in (3, 4):  # the first fit warms what any fit compiles once per process
        x, noise = rng.normal(size=(2, 40, dim)).astype(np.float32)
        with _compiles() as compiled:
            result = advi.fit(model, x, x @ np.ones(dim, np.float32) + noise[:, 0],
                              rng_key=KEY, preset="robust", khat_samples=0)
        assert result.start.startswith("laplace")
    # the fresh state, the chunk and the Laplace start's value and gradient: the initial q,
    # the chunk's steps' draws and the end-of-fit gradient check's draws are made on the
    # host (NumPy), and the check evaluates them by that value and gradient (advi.checks),
    # as the host evaluates each chunk's ELBO: the log density is compiled once; -H is
    # formed by differences of that gradient (2K calls of a few hundred operations each),
    # so no Hessian is compiled
    assert sorted(compiled) == ["begin", "chunk", "log_density"]


def test_a_costly_gradient_compiles_the_exact_hessian(monkeypatch):
    # where 2K gradients would cost more than DIFFERENCES_MAX_FLOPS (here: any), -H is the
    # exact Hessian, compiled on first call; either way the fit ends at the posterior
    def model(x, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
        numpyro.sample("y", dist.Normal(x @ beta, 0.5), obs=y)

    rng = np.random.default_rng(1)
    for budget, rows in ((advi.curvature.DIFFERENCES_MAX_FLOPS, 60), (0.0, 61)):
        monkeypatch.setattr(advi.curvature, "DIFFERENCES_MAX_FLOPS", budget)
        x = rng.normal(size=(rows, 6)).astype(np.float32)  # new shapes: compiled anew
        y = (x @ np.linspace(-1.0, 1.0, 6) + 0.5 * rng.normal(size=rows)).astype(np.float32)
        with _compiles() as compiled:
            result = advi.fit(model, x, y, rng_key=KEY, preset="robust", khat_samples=0,
                              laplace_starts=1)
        assert result.start.startswith("laplace")
        assert ("precision" in compiled) == (budget == 0.0)
        # the exact posterior (conjugate, known noise): the mean-field sds 1 / sqrt(Lambda_kk)
        expected = 1 / np.sqrt(np.diag(x.T.astype(np.float64) @ x / 0.25 + np.eye(6)))
        # (the iterate average's sds over seeds 0-7: 0.89-1.03 of these)
        np.testing.assert_allclose(np.exp(np.asarray(result.params.omega)), expected, rtol=0.15)


def test_a_refused_laplace_start_compiles_no_hessian():
    # Neal's funnel has no mode: the start is refused where its curvature, by differences
    # of the compiled gradient, is not positive definite, and the exact Hessian, a program
    # that costs several times the gradient's compilation, is never compiled
    def model():
        v = numpyro.sample("v", dist.Normal(0.0, 3.0))
        numpyro.sample("x", dist.Normal(0.0, jnp.exp(v / 2)).expand([9]).to_event(1))

    with _compiles() as compiled:
        result = advi.fit(model, rng_key=KEY, preset="robust", khat_samples=0,
                          laplace_starts=1)
    assert result.start.startswith("init=random (no usable mode")
    assert "log_density" in compiled and "precision" not in compiled


def test_a_jax_context_around_the_fit_reaches_every_compiled_function():
    # a JAX context manager around advi.fit (here 64-bit floats) reaches every compiled
    # function, and the Laplace start's host arrays take their dtype
    def model(x, y):
        beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
        numpyro.sample("y", dist.Normal(x @ beta, 1.0), obs=y)

    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 2))
    y = x @ np.array([1.0, -2.0]) + rng.normal(size=30)
    with jax.enable_x64(True):
        result = advi.fit(model, x, y, rng_key=KEY, preset="robust", khat_samples=0)
    assert result.params.mu.dtype == jnp.float64 and result.start.startswith("laplace")
    # the exact posterior (conjugate: prior N(0, 100 I), unit noise)
    precision = x.T @ x + np.eye(2) / 100.0
    mean = np.linalg.solve(precision, x.T @ y)
    sd = 1 / np.sqrt(np.diag(precision))  # mean-field optimum: 1 / sqrt(Lambda_kk)
    assert np.max(np.abs(np.asarray(result.params.mu) - mean) / sd) < 0.1
    np.testing.assert_allclose(np.exp(np.asarray(result.params.omega)), sd, rtol=0.1)
    assert result.compile_s >= 0 and result.adapt_s > 0


@contextlib.contextmanager
def _compiles():
    """The names of the functions JAX compiles inside the block."""
    names = []
    handler = logging.Handler()
    handler.emit = lambda r: names.extend(re.findall(r"Compiling jit\((\S+?)\)", r.getMessage()))
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.log_compiles():
            yield names
    finally:
        logging.getLogger("jax").removeHandler(handler)


def test_algorithm_object_runs_a_users_own_loop_with_the_data_as_an_argument():
    def model(y):
        numpyro.sample("y", dist.Normal(numpyro.sample("mu", dist.Normal(0.0, 10.0)), 0.5),
                       obs=y)

    target = advi.from_numpyro(model, (jnp.full(3, 2.0),))
    alg = advi.algorithm(target, optimizer="adam", init="zero", grad_samples=4)
    state = alg.init(KEY)

    @jax.jit
    def run(state, data):
        def body(k, s):
            return alg.step(s, jax.random.fold_in(KEY, k), 0.05, data)[0]

        return jax.lax.fori_loop(0, 2000, body, state)

    # conjugate: precision 1/10^2 + 3/0.5^2 = 12.01, mean (sum y / 0.5^2) / 12.01
    mu, sd = 2.0 * 12.0 / 12.01, 12.01 ** -0.5
    state = run(state, target.data)
    assert int(state.iteration) == 2000 and not bool(state.failed)
    np.testing.assert_allclose(state.params.mu, mu, atol=0.1)  # last iterate, not averaged
    np.testing.assert_allclose(jnp.exp(state.params.omega), sd, atol=0.1)
    # other data of the same shapes: the same compiled loop, the posterior moves with them
    moved = run(alg.init(KEY), (jnp.full(3, -1.0),))
    np.testing.assert_allclose(moved.params.mu, -mu / 2.0, atol=0.1)
    draws = alg.sample(state.params, KEY, 4000)
    assert draws.shape == (4000, 1)
    np.testing.assert_allclose(jnp.std(draws), sd, rtol=0.15)
    _, info = alg.step(state, KEY, 0.05, target.data)
    assert bool(info.ok) and float(info.elbo) > -10.0


def test_algorithm_checks_its_arguments_as_options_do():
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2)
    with pytest.raises(ValueError, match=r"grad_samples=0 must be an integer >= 1"):
        advi.algorithm(target, grad_samples=0)
    with pytest.raises(ValueError, match=r"init='ones' is not valid; use one of"):
        advi.algorithm(target, init="ones")
    with pytest.raises(ValueError, match="optimizer='lbfgs'"):
        advi.algorithm(target, optimizer="lbfgs")


def test_sizes_are_checked_before_any_allocation():
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 6000)
    with pytest.raises(ValueError, match=r"K=6000 .* 0\.13 GiB .*fullrank_max_dim=5000 use "
                                         r"family='meanfield'"):
        advi.fit(target, rng_key=KEY, family="fullrank")

    def empty():
        numpyro.sample("x", dist.Normal(0.0, 1.0).expand([0]).to_event(1))

    with pytest.raises(ValueError, match="0 unconstrained dimensions"):
        advi.fit(empty, rng_key=KEY)


@pytest.mark.parametrize("family", ["meanfield", "fullrank"])
def test_a_start_whose_draws_all_fail_is_narrowed_not_given_a_smaller_eta(family, caplog):
    """p = N(0, 0.1^2) in 10 coordinates, NaN (value and gradient) outside |z_k| < 0.5;
    q starts at N(0, I), where a draw is finite with probability 0.38^10: at iteration 0
    no eta helps (with eta steps alone the fit raised), so the restart keeps eta and
    narrows q 10-fold, and the fit reaches the posterior; the first step's failure narrows
    q at once, with no redrawing steps compiled or run."""
    def log_density(z):
        return -0.5 * jnp.sum((z / 0.1) ** 2) + 0.0 * jnp.sum(jnp.sqrt(0.25 - z**2))

    caplog.set_level(logging.INFO, logger="advi")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a start mended: nothing to warn
        result = advi.fit(advi.from_log_density(log_density, 10), rng_key=KEY,
                          preset="robust", start="init", init="zero", dtype=None,
                          family=family, khat_samples=0)
    assert result.restarts[0] == (0, 0.1, 0.1) and result.eta == 0.1
    assert result.redraws == 0 and "redrawn" not in caplog.text, caplog.text
    assert "restarting with q's scales narrowed" in caplog.text
    sd = np.asarray(advi.get_family(family).std(result.params))
    assert np.all(np.abs(np.asarray(result.params.mu)) < 0.1) and np.all(np.abs(sd - 0.1) < 0.02)


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_redrawn_draws_are_counted(preset):
    # -inf on the slab z_0 > 1.5 (7% of a standard normal's mass): those draws are redrawn;
    # how many depends on how far into q's tail the slab ends up (the Stan preset, seeds
    # 0-5: 9-169 over 400-500 steps and their ELBO draws)
    target = advi.from_log_density(lambda z: jnp.where(z[0] > 1.5, -jnp.inf,
                                                       -0.5 * jnp.sum(z**2)), 2)
    result = advi.fit(target, rng_key=KEY, preset=preset, khat_samples=0, max_iter=500,
                      eta=0.1)
    assert 5 < result.redraws < 500
    finite = advi.fit(advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2), rng_key=KEY,
                      preset=preset, khat_samples=0, max_iter=500, eta=0.1)
    assert finite.redraws == 0


def test_above_the_hessian_limit_the_fit_starts_at_the_common_scale_and_stops_by_itself():
    """Above HESSIAN_MAX_DIM the Laplace start moves the means to the mode and sets every
    scale to the common curvature scale (advi.laplace.common_scale); the fit then stops by
    its own rule, not by max_iter, at the mean-field optimum of an independent Gaussian
    with sds 0.01-0.03 (whose optimum is the posterior itself)."""
    dim = advi.laplace.HESSIAN_MAX_DIM + 1
    sd = jnp.asarray(np.linspace(0.01, 0.03, dim), jnp.float32)
    mean = jnp.asarray(np.linspace(-1.0, 1.0, dim), jnp.float32)
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(((z - mean) / sd) ** 2), dim)
    result = advi.fit(target, rng_key=KEY, preset="robust", khat_samples=0, max_iter=5000)
    assert result.start.startswith("laplace")
    assert result.converged and result.convergence_reason in ("rhat", "elbo settled")
    assert result.num_iterations < 5000
    log_ratio = np.asarray(result.params.omega) - np.log(np.asarray(sd))
    assert np.median(np.abs(log_ratio)) < 0.1
    mean_error = np.abs(np.asarray(result.params.mu) - np.asarray(mean)) / np.asarray(sd)
    assert np.median(mean_error) < 0.05


def _ended_at(iteration):
    """The one field of a chunk's end state that the stopping rule reads."""
    return types.SimpleNamespace(iteration=iteration)


def test_a_run_that_ends_mid_drift_returns_the_average_of_its_last_chunks():
    """The stopping rule's estimate after a run whose means still drift 0.05 q-sds per
    chunk of 50 iterations (the window: the second half of 32 chunks): the average of the
    chunks :func:`advi.stationarity.averaging_chunks` picks, which lags the iterates' end
    by a fraction of the whole window's lag; a stationary run's is the whole window's."""
    from advi.chunk import ChunkMoments
    from advi.robust import StationarityRule
    from advi.stationarity import averaging_chunks

    rng = np.random.default_rng(0)
    num, dim, chunk_len, sd = 32, 100, 50, 0.5
    for drift in (0.05, 0.0):
        rule = StationarityRule(chunk_len, burn_in=True, max_iter=10**6, tol_rel_obj=0.0)
        line = drift * sd * np.arange(num)[:, None]
        mu = 2.0 + line + 0.1 * sd * rng.normal(size=(num, dim))
        omega = np.log(sd) + 0.02 * rng.normal(size=(num, dim))
        for j, (m, o) in enumerate(zip(mu, omega, strict=True)):
            stat = np.concatenate([m, o]) * chunk_len
            rule.observe(_ended_at((j + 1) * chunk_len), ChunkMoments(
                advi.MeanFieldParams(jnp.asarray(m * chunk_len), jnp.asarray(o * chunk_len)),
                stat, stat**2 / chunk_len, -1.0))
        window = num // 2
        chosen = averaging_chunks(np.concatenate([mu, omega], 1)[-window:] * chunk_len,
                                  chunk_len)
        estimate = np.asarray(rule.estimate(None).mu)
        np.testing.assert_allclose(estimate, mu[-chosen:].mean(0), rtol=1e-5)
        if drift:
            end = 2.0 + line[-1]
            lag_window = np.abs(mu[-window:].mean(0) - end).mean() / sd
            assert lag_window == pytest.approx(drift * (window - 1) / 2, rel=0.15)
            assert np.abs(estimate - end).mean() / sd < lag_window / 2
        else:
            assert chosen == window


def test_a_transient_after_an_accepted_start_is_discarded_as_a_random_starts():
    """After an accepted start the window is the whole trace, but where its first chunks are
    a transient (q's means falling 1.5 q-sds over 8 chunks, then stationary), the rule stops
    once the trace's second half passes (16 chunks: the whole trace does not) and averages
    that half only; a trace stationary from its start stops at its first check (8 chunks),
    averaged over all of it."""
    from advi.chunk import ChunkMoments
    from advi.robust import StationarityRule
    from advi.stationarity import split_rhat, stationary

    rng = np.random.default_rng(3)
    dim, chunk_len, sd = 20, 50, 0.5
    for transient in (1.5, 0.0):
        fall = transient * sd * np.clip(1 - np.arange(40) / 8, 0, None)[:, None]
        mu = 2.0 + fall + 0.1 * sd * rng.normal(size=(40, dim))
        omega = np.log(sd) + 0.02 * rng.normal(size=(40, dim))
        stats = np.concatenate([mu, omega], 1) * chunk_len
        # independent iterates: each chunk's mean varies by its iterates' sd / sqrt(50)
        within = chunk_len * np.concatenate([np.full(dim, 0.1 * sd), np.full(dim, 0.02)])**2
        squares = stats**2 / chunk_len + chunk_len * within
        rule = StationarityRule(chunk_len, burn_in=False, max_iter=10**6, tol_rel_obj=0.0)
        for j, (m, o) in enumerate(zip(mu, omega, strict=True)):
            verdict = rule.observe(_ended_at((j + 1) * chunk_len), ChunkMoments(
                advi.MeanFieldParams(jnp.asarray(m * chunk_len), jnp.asarray(o * chunk_len)),
                stats[j], squares[j], -1.0))
            if verdict.reason is not None:
                break
        assert verdict.reason == "rhat"
        stop = j + 1
        estimate = np.asarray(rule.estimate(None).mu)
        if transient:
            assert stop == 16
            assert not stationary(split_rhat(stats[:16], squares[:16], chunk_len))[0]
            np.testing.assert_allclose(estimate, mu[8:16].mean(0), rtol=1e-5)
        else:
            assert stop == 8
            np.testing.assert_allclose(estimate, mu[:8].mean(0), rtol=1e-5)


def test_after_an_accepted_start_a_flat_elbo_does_not_stop_q_still_leaving_the_mode():
    """After an accepted start (the window is the whole trace) a flat ELBO does not stop a
    run whose means still drift 1 q-sd a chunk (split R-hat far above
    SETTLED_RHAT_MAX): no stop in 40 chunks. After a random start (the transient discarded)
    the same trace stops by the ELBO's rule; and a stationary one after an accepted start
    stops at its first check."""
    from advi.chunk import ChunkMoments
    from advi.robust import StationarityRule
    from advi.stationarity import MIN_WINDOW_CHUNKS, SETTLED_RHAT_MAX

    rng = np.random.default_rng(5)
    dim, chunk_len, sd = 20, 50, 0.5
    for burn_in, drift in ((False, 1.0), (True, 1.0), (False, 0.0)):
        mu = 2.0 + drift * sd * np.arange(40)[:, None] + 0.1 * sd * rng.normal(size=(40, dim))
        omega = np.log(sd) + 0.02 * rng.normal(size=(40, dim))
        stats = np.concatenate([mu, omega], 1) * chunk_len
        within = chunk_len * np.concatenate([np.full(dim, 0.1 * sd), np.full(dim, 0.02)])**2
        squares = stats**2 / chunk_len + chunk_len * within
        rule = StationarityRule(chunk_len, burn_in=burn_in, max_iter=10**6, tol_rel_obj=0.01)
        reasons, rhats = [], []
        for j, (m, o) in enumerate(zip(mu, omega, strict=True)):
            verdict = rule.observe(_ended_at((j + 1) * chunk_len), ChunkMoments(
                advi.MeanFieldParams(jnp.asarray(m * chunk_len), jnp.asarray(o * chunk_len)),
                stats[j], squares[j], -100.0))
            reasons.append(verdict.reason)
            rhats.append(verdict.row.rhat)
            if verdict.reason is not None:
                break
        if not burn_in and drift:
            assert reasons == [None] * 40
            assert min(r for r in rhats if np.isfinite(r)) > SETTLED_RHAT_MAX
        elif drift:
            assert reasons[-1] == "elbo settled" and rhats[-1] > SETTLED_RHAT_MAX
        else:
            assert reasons[-1] is not None and len(reasons) == MIN_WINDOW_CHUNKS


def test_a_diverged_run_restarts_from_its_best_chunk_not_its_average():
    """The restart point after a failed chunk: the window's iterate average while every
    chunk's ELBO is finite; once an ELBO in the window is not finite (q's scales ran away,
    as full-rank from a random start on a local-level model), the average iterate of the
    chunk with the highest finite ELBO."""
    from typing import Any, NamedTuple

    from advi.chunk import ChunkMoments
    from advi.robust import StationarityRule

    class State(NamedTuple):
        params: Any

    dim, chunk_len = 3, 50
    for elbos in ([-10.0, -8.0, -9.0, -9.5, -9.2, -9.1, -9.3, -9.4],
                  [-10.0, -8.0, -5e5, -4e9, -np.inf, -np.inf, -np.inf, -np.inf]):
        rule = StationarityRule(chunk_len, burn_in=True, max_iter=10**6, tol_rel_obj=0.0)
        mus = [np.full(dim, float(j)) for j in range(len(elbos))]
        for j, (m, e) in enumerate(zip(mus, elbos, strict=True)):
            stat = np.concatenate([m, np.zeros(dim)]) * chunk_len
            rule.observe(_ended_at((j + 1) * chunk_len), ChunkMoments(
                advi.MeanFieldParams(jnp.asarray(m * chunk_len), jnp.zeros(dim)),
                stat, stat**2 / chunk_len, e))
        start = np.asarray(rule.fallback(State(None)).params.mu)
        if np.isfinite(elbos[-1]):
            np.testing.assert_allclose(start, np.asarray(rule.estimate(None).mu))
            assert start[0] > 1.0  # the window's chunks, not the best one (mean 1)
        else:
            np.testing.assert_allclose(start, mus[1])


@pytest.mark.parametrize("max_iter", [60, 130])
def test_a_fit_ending_inside_a_chunk_averages_its_last_iterates(max_iter):
    """max_iter not a multiple of eval_elbo: the last chunk is short, and the average weighs
    its iterates by their number (it divided their sum by eval_elbo: a mean of 3 read 0.6
    at max_iter = 60)."""
    mean, sd = np.array([3.0, -2.0, 50.0]), np.array([1.0, 0.5, 4.0])
    target = advi.from_log_density(
        lambda z: -0.5 * jnp.sum(((z - mean) / sd) ** 2), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter's own warning
        result = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust",
                          max_iter=max_iter)
    assert result.num_iterations == max_iter
    # an average of 10 or 30 of Adam's iterates at eta = 0.1: noisy, but not a fifth
    assert np.all(np.abs(np.asarray(result.params.mu) - mean) < 0.5 * sd), result.params.mu
    ratio = np.exp(np.asarray(result.params.omega)) / sd
    assert np.all((ratio > 0.6) & (ratio < 1.5)), ratio


@pytest.mark.parametrize("burn_in", [True, False])
def test_the_rules_rhat_from_running_sums_is_split_rhat_over_the_window(burn_in):
    """The rule keeps running sums (and drops chunks no later window reaches): each
    chunk's R-hat statistic equals split R-hat over the window's own chunks, recomputed."""
    from advi.chunk import ChunkMoments
    from advi.robust import StationarityRule
    from advi.stationarity import split_rhat, stationary, window_chunks

    rng = np.random.default_rng(1)
    rule = StationarityRule(50, burn_in=burn_in, max_iter=10**6, tol_rel_obj=0.0)
    stats, squares = [], []
    for j in range(41):
        stat = (rng.normal(size=6) * 50 + 3 * j).astype(np.float32)
        square = (stat**2 / 50 + rng.uniform(1, 5, size=6)).astype(np.float32)
        stats.append(stat)
        squares.append(square)
        verdict = rule.observe(_ended_at(50 * (j + 1)), ChunkMoments(
            advi.MeanFieldParams(jnp.asarray(stat[:3]), jnp.asarray(stat[3:])), stat, square,
            -1.0))
        size = window_chunks(j + 1, burn_in)
        if not size:
            assert math.isnan(verdict.row.rhat)
            continue
        expected = stationary(split_rhat(np.stack(stats[-size:]), np.stack(squares[-size:]),
                                         50))[1]
        assert verdict.row.rhat == pytest.approx(expected, rel=1e-9)


def test_the_robust_fit_is_the_same_whatever_its_checkpoints():
    """The stop's unit is its chunk of eval_elbo iterations: scoring every 7, 25, 30 or 50
    iterations, or never, changes neither where the fit stops nor what it returns (with 25,
    the chunks were 25 iterations long and the fit stopped at 700 instead of 900); the hook
    runs at the first chunk end past each multiple of checkpoint_every."""
    target = advi.from_log_density(
        lambda z: -0.5 * jnp.sum((z - jnp.arange(3.0)) ** 2 / jnp.array([1.0, 0.1, 10.0])), 3)
    fits, seen = {}, {}
    for every in (None, 50, 25, 30, 7):
        calls = seen.setdefault(every, [])
        hooks = {} if every is None else {
            "checkpoint_every": every, "checkpoint": lambda info, c=calls: c.append(info.iteration)}
        fits[every] = advi.fit(target, rng_key=KEY, preset="robust", khat_samples=0,
                               start="init", dtype=None, **hooks)
    base = fits[None]
    assert base.converged and base.num_iterations > 400
    for every, result in fits.items():
        assert result.num_iterations == base.num_iterations, every
        np.testing.assert_array_equal(np.asarray(result.params.mu), np.asarray(base.params.mu))
        np.testing.assert_array_equal(np.asarray(result.params.omega),
                                      np.asarray(base.params.omega))
    chunks = list(range(50, base.num_iterations + 1, 50))
    assert seen[25] == seen[30] == seen[7] == chunks  # a multiple in every chunk
    assert seen[50] == chunks


def _normal_mean(y):
    """y_n ~ N(mu, 1), mu ~ N(0, 10): the posterior is N(sum(y) / (N + 0.01), 1 / (N + 0.01))."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("data", y.shape[0]) as idx:
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y[idx])


@pytest.mark.parametrize("seed", range(3))
def test_a_minibatched_robust_fit_stops_by_r_hat_within_the_posterior(seed):
    """20,000 rows, B = 100: the minibatch ELBO's noise (about 40 nats a chunk) and a
    tolerance of 0.001 |ELBO| (28 nats) let the ELBO's test stop the fit at 800-900
    iterations with q's mean up to 1.2 posterior sds off and its sd 2.1-3.2 times the
    posterior's; stopped by split R-hat alone, it ends within half a posterior sd, its sd
    within 35%."""
    y = np.random.default_rng(0).normal(1.5, 1.0, 20_000).astype(np.float32)
    mean, sd = y.astype(np.float64).sum() / (y.size + 0.01), 1 / math.sqrt(y.size + 0.01)
    result = advi.fit(_normal_mean, jnp.asarray(y), rng_key=jax.random.PRNGKey(seed),
                      minibatch_size=100, preset="robust", start="init", dtype=None,
                      progress_bar=False)
    assert result.convergence_reason in ("rhat", "max_iter")
    assert not any("ELBO settled" in note for note in result.warnings)  # no such test here
    assert abs(float(result.params.mu[0]) - mean) < 0.5 * sd
    assert 0.65 < math.exp(float(result.params.omega[0])) / sd < 1.35

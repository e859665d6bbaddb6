"""The end-of-fit checks (:mod:`advi.checks`): a far-off fit warns, naming a remedy, with
either preset; a well-specified small fit does not; the helpers on synthetic cases."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi
from advi import check_draws, checks
from advi.families import host_standard_normal
from advi.robust import TRAVEL_NOTE


def normal_mean(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1e9))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def _data(s: float, seed: int) -> jax.Array:
    return jnp.asarray(s + np.random.default_rng(seed).normal(size=100), jnp.float32)


def _fit(s: float, preset: str, seed: int, **options) -> tuple[advi.ADVIResult, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = advi.fit(normal_mean, _data(s, seed), rng_key=jax.random.PRNGKey(seed),
                          preset=preset, **options)
    return result, [str(w.message) for w in caught if w.category is RuntimeWarning]


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_far_off_fit_warns_with_a_remedy(preset):
    """float32, data around 1e6: the Stan preset ends ~1e5 sds off, the robust one pinned
    to float32 (its Laplace start fell back; by default it refits in float64) ~1e7 sds off
    with its ELBO settled; both warn by their gradient (whether their importance weights
    also degenerate depends on where the fit ends)."""
    if jnp.result_type(float) != jnp.float32:
        pytest.skip("the failure is float32's")
    result, caught = _fit(1e6, preset, 0, dtype="float32")
    assert abs(float(result.params.mu[0]) - 1e6) > 1e5  # still far off: the checks only say so
    notes = [n for n in caught if "remedy" in n]
    assert any("ELBO's gradient" in n for n in notes), caught
    found = [n for n in notes if not n.startswith(checks.FELL_BACK_NOTE)]
    assert found and all("dtype=\"float64\"" in n and "standardise the data" in n
                          for n in found)
    assert set(notes) <= set(result.warnings)
    if preset == "robust":  # the end-of-fit checks name the start that fell back; the
        # stop's own warning (q still travelled when its ELBO settled) does not know it
        assert all("no usable mode" in n for n in notes if not n.startswith(TRAVEL_NOTE))
        # its random start's q does not express the posterior either (k-hat above 1.3)
        assert all("full-rank" in n for n in notes if n.startswith(checks.FELL_BACK_NOTE))


@pytest.mark.parametrize("preset", ["stan", "robust"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_well_specified_fit_warns_only_when_more_than_a_sd_off(preset, seed):
    result, caught = _fit(1.0, preset, seed)
    off = abs(float(result.params.mu[0]) - float(_data(1.0, seed).mean())) / 0.1  # sds
    assert off < 2
    if off < 0.8 or preset == "robust":  # the robust preset's iterate average: 0.003 sds
        assert caught == [], caught
    if off > 1.2:  # Stan's last iterate can end a sd or more off; then it says so
        assert any("ELBO's gradient" in note for note in caught), caught
    assert result.pareto_khat < 0.7  # the cached draws, through ArviZ


def test_a_fit_cut_short_names_running_longer_among_the_remedies():
    """A robust fit from a random start far from its data's mean (about 500 posterior
    sds), cut at 100 iterations: the gradient warning names running longer,
    with the stop and its iteration count; the cap's own warning stays as it was."""
    y = jnp.asarray(50.0 + np.random.default_rng(0).normal(size=100), jnp.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = advi.fit(normal_mean, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                          start="init", dtype=None, max_iter=100, progress_bar=False)
    assert result.convergence_reason == "max_iter"
    assert abs(float(result.params.mu[0]) - float(y.mean())) > 10  # still far off
    notes = [str(w.message) for w in caught if "ELBO's gradient" in str(w.message)]
    assert len(notes) == 1, [str(w.message) for w in caught]
    assert ("remedy: run longer (a smaller tol_rel_obj or a larger max_iter: the run "
            "stopped by 'max_iter' after 100 iterations), standardise the data") in notes[0]


def test_gradient_moments_and_flags_on_synthetic_draws():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(400, 3)) + np.array([0.0, 0.3, 3.0])
    draws[7, 0] = np.nan  # a non-finite draw is dropped
    mean, se, n = (np.asarray(a) for a in check_draws.gradient_moments(jnp.asarray(draws)))
    assert int(n) == 399
    np.testing.assert_allclose(mean, np.nanmean(np.delete(draws, 7, 0), 0), rtol=1e-5)
    np.testing.assert_allclose(se, np.delete(draws, 7, 0).std(0, ddof=1) / np.sqrt(399),
                               rtol=1e-5)
    # 0: noise only; 1: significant (z ~ 6) but below GRAD_SHIFT; 2: both
    np.testing.assert_array_equal(checks.gradient_flags(mean, se), [False, False, True])
    assert checks.gradient_flags(np.array([2.0]), np.array([0.0]))[0]  # se 0: z infinite
    assert not checks.gradient_flags(np.array([2.0]), np.array([1.0]))[0]  # z = 2: noise
    assert checks.z_threshold(1) == pytest.approx(3.29, abs=0.01)
    assert checks.z_threshold(25_000) == pytest.approx(5.49, abs=0.01)


def _value_and_grad(target):
    """The target's compiled ``(zeta, data) -> (log p, grad)``, as a fit's Laplace start has."""
    return jax.jit(jax.value_and_grad(lambda z, data: target.log_density_fn(z, None, data)))


@pytest.mark.parametrize("family", [advi.MEANFIELD, advi.FULLRANK])
def test_scaled_gradients_are_sd_times_elbo_gradient_on_a_gaussian(family):
    """log p = N(zeta | m, I): E_q[sd * grad log p] = sd * (m - mu), whatever q's shape."""
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z - 3.0) ** 2), 2)
    mu, sd = jnp.array([0.0, 3.0]), jnp.array([0.5, 1.0])
    params = (advi.MeanFieldParams(mu, jnp.log(sd)) if family is advi.MEANFIELD
              else advi.FullRankParams(mu, jnp.diag(sd)))
    (mean, se, n), (omega_mean, omega_se, _), log_weights = check_draws.scaled_gradients(
        _value_and_grad(target), params,
        jax.random.PRNGKey(0), target.data)
    assert n == check_draws.GRAD_DRAWS // 2  # antithetic pairs
    # the gradient is linear in eps: each pair's mean is exact, no Monte Carlo noise
    np.testing.assert_allclose(mean, [1.5, 0.0], atol=1e-5)
    assert float(se.max()) < 1e-5
    # dELBO/dlog sd_k = 1 - sd_k^2 at unit precision: 0.75 and 0
    np.testing.assert_allclose(omega_mean, [0.75, 0.0], atol=4 * float(omega_se.max()) + 1e-6)
    # the draws' log p - log q: their mean is the ELBO, E_q log p = -(3^2 + 0.5^2 + 1) / 2
    # plus q's entropy, sum_k (1 + log 2 pi) / 2 + log sd_k
    assert log_weights.shape == (check_draws.GRAD_DRAWS,)
    exact = -0.5 * (9.0 + 0.25 + 1.0) + (1 + np.log(2 * np.pi)) + np.log(0.5)
    assert float(log_weights.mean()) == pytest.approx(exact, abs=4 * float(log_weights.std())
                                                      / np.sqrt(check_draws.GRAD_DRAWS))


def test_a_narrow_q_is_judged_in_the_optimums_standard_deviations():
    """log p = N(zeta | 0, 2^2) per coordinate, q = N(mu, 0.5^2): sd * dELBO/dmu = -mu / 8
    (mu / 2 of the optimum's sds, times sd/sd* = 1/4), c = (sd / sd*)^2 = 1/16, so the
    factor 1/sqrt(c) = 4 gives back mu / 2 (its estimate is noisier where mu is far off, a
    gradient flagged in either unit), clipped at NARROW_FLOOR; a q wider than the optimum,
    and a full-rank q, keep q's own sds (factor 1)."""
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z / 2.0) ** 2), 2)
    mu = jnp.array([3.0, 0.0])

    def moments(family, params):
        return check_draws.scaled_gradients(_value_and_grad(target), params, jax.random.PRNGKey(0),
                                       target.data)

    narrow = advi.MeanFieldParams(mu, jnp.log(jnp.full(2, 0.5)))
    (mean, se, _), spread, _ = moments(advi.MEANFIELD, narrow)
    factor = checks.optimum_factor(narrow, spread)
    assert 3.2 < factor[1] < 4.8 and 3.0 < factor[0] <= 1 / np.sqrt(checks.NARROW_FLOOR)
    # 1.5 of the optimum's sds: flagged, where q's own units read 0.375 and pass
    assert float(mean[0] * factor[0]) < -1.1 and float(mean[0]) > -0.5
    assert checks.gradient_flags(mean * factor, se * factor)[0]
    assert not checks.gradient_flags(mean, se)[0]
    # c = 0.01 is clipped at the floor; c = -1 (log p convex along it) implies no optimum
    assert np.all(checks.optimum_factor(narrow, (np.array([0.99, 2.0]), None, 200))
                  == [1 / np.sqrt(checks.NARROW_FLOOR), 1.0])
    wide = advi.MeanFieldParams(mu, jnp.log(jnp.full(2, 3.0)))
    np.testing.assert_array_equal(checks.optimum_factor(wide, moments(advi.MEANFIELD, wide)[1]),
                                  [1.0, 1.0])
    full = advi.FullRankParams(mu, 0.5 * jnp.eye(2))
    np.testing.assert_array_equal(checks.optimum_factor(full, moments(advi.FULLRANK, full)[1]),
                                  [1.0, 1.0])


def test_a_noisy_c_does_not_inflate_the_distance():
    """c = 1 - dELBO/dlog sd is taken at its upper bound, c + z x se: an estimate of 0.03
    known to 0.001 gives the factor 5 (the floor's), the same estimate with a standard
    error of 0.2 (a correlated posterior's spread, 100 pairs) 1 / sqrt(0.03 + 3.29 x 0.2)."""
    params = advi.MeanFieldParams(jnp.zeros(1), jnp.zeros(1))
    sure = checks.optimum_factor(params, (np.array([0.97]), np.array([0.001]), 100))
    noisy = checks.optimum_factor(params, (np.array([0.97]), np.array([0.2]), 100))
    assert float(sure[0]) == pytest.approx(5.0)
    assert float(noisy[0]) == pytest.approx(1 / np.sqrt(0.03 + checks.z_threshold(1) * 0.2))


def test_the_log_sd_gradient_carries_no_noise_from_the_means_offset():
    """p = N(0, 2^2) per coordinate, q = N(mu, 0.3^2) with mu 30 and 0 (15 and 0 optimum
    sds off): dELBO/dlog sd = 1 - (0.3 / 2)^2 = 0.9775 in both coordinates. As the sample
    covariance of g = sd * grad log p and eps, its standard error is about
    0.0225 sqrt(2 / 100) in both (100 antithetic pairs), where the raw mean of g * eps + 1
    would carry
    mean(g) * eps, an error of 2.25 / sqrt(200) = 0.16 at mu = 30, enough to hide a q at
    a sixth of its optimum's sd."""
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z / 2.0) ** 2), 2)
    params = advi.MeanFieldParams(jnp.array([30.0, 0.0]), jnp.log(jnp.full(2, 0.3)))
    _, (mean, se, n), _ = check_draws.scaled_gradients(_value_and_grad(target), params,
                                                  jax.random.PRNGKey(1), target.data)
    assert n == check_draws.GRAD_DRAWS // 2
    assert np.all(se < 0.005), se
    np.testing.assert_allclose(mean, 1 - 0.15**2, atol=4 * float(se.max()))
    # and the narrow flag sees it beyond the z bound (c = 0.0225 < NARROW_FLOOR)
    assert np.all((mean - (1 - checks.NARROW_FLOOR)) / se > checks.z_threshold(2))


@pytest.mark.parametrize("family", [advi.MEANFIELD, advi.FULLRANK])
def test_the_checks_host_draws_are_the_familys(family):
    """The check's NumPy draws, sds and log q are the family's JAX functions' values."""
    mu = jnp.array([0.5, -1.0, 2.0])
    params = (advi.MeanFieldParams(mu, jnp.array([0.1, -0.7, 0.3])) if family is advi.MEANFIELD
              else advi.FullRankParams(mu, jnp.array([[1.0, 9.0, 9.0], [0.8, -0.5, 9.0],
                                                       [0.1, 0.2, 2.0]])))  # upper ignored
    eps = np.random.default_rng(0).normal(size=(7, 3))
    zeta, std, log_q = check_draws.host_draws(params, eps)
    assert zeta.dtype == np.float32 and std.dtype == log_q.dtype == np.float64
    np.testing.assert_allclose(zeta, family.transform(params, jnp.asarray(eps, jnp.float32)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(std, family.std(params), rtol=1e-6)
    np.testing.assert_allclose(log_q, family.log_q(params, zeta), rtol=1e-5)


def test_gradient_moments_drop_non_finite_rows():
    rows = np.array([[1.0, 2.0], [3.0, np.inf], [3.0, 4.0], [np.nan, 0.0], [5.0, 6.0]])
    mean, se, n = check_draws.gradient_moments(rows.astype(np.float32))
    assert n == 3
    np.testing.assert_allclose(mean, [3.0, 4.0])
    np.testing.assert_allclose(se, [2.0 / np.sqrt(3)] * 2)
    # float32's largest gradients are squared without overflow
    mean, se, n = check_draws.gradient_moments(np.array([[3e38], [-3e38]], np.float32))
    assert n == 2 and np.isfinite(se[0]) and se[0] == pytest.approx(3e38, rel=1e-6)
    mean, se, n = check_draws.gradient_moments(np.array([[np.inf], [1.0]]))
    assert n == 1 and mean[0] == 1.0 and np.isnan(se[0])


def test_degenerate_weights_are_the_inf_cases_of_pareto_khat():
    rng = np.random.default_rng(1)
    for log_weights in (rng.normal(size=1000), 3 * rng.standard_t(3, size=500),
                        rng.normal(size=40)):
        assert advi.diagnostics.degenerate_weights(log_weights) is None
        assert np.isfinite(advi.pareto_khat(log_weights))
    flat = np.zeros(1000)
    assert "all equal" in advi.diagnostics.degenerate_weights(flat)
    assert advi.pareto_khat(flat) == np.inf
    few = np.r_[rng.normal(size=20), np.full(100, -np.inf)]
    assert "only 20 of 120" in advi.diagnostics.degenerate_weights(few)
    assert advi.pareto_khat(few) == np.inf


def test_unmoved_mean_warns():
    class Fake:
        params = advi.MeanFieldParams(jnp.array([1e8, 2.0]), jnp.zeros(2))
        num_iterations = 100
        convergence_reason = "rhat"
        khat_log_weights = None

    compiled = type("C", (), {})()
    compiled.target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2)
    compiled.family = advi.MEANFIELD
    value_and_grad = _value_and_grad(compiled.target)
    compiled.gradient_check = lambda params, key: check_draws.scaled_gradients(
        value_and_grad, params, key, compiled.target.data)
    notes = checks.end_of_fit_warnings(Fake(), compiled, jnp.array([1e8, 0.0]), None,
                                       jax.random.PRNGKey(0))
    assert any("1 of 2 mean coordinates are exactly where the fit started" in n
               for n in notes), notes
    assert all("dtype=\"float64\"" in n for n in notes)


def _checked(params, log_density, dim):
    """end_of_fit_warnings for a fit that ended at ``params`` (after a Laplace start, 100
    iterations, stopped by R-hat) on ``log_density``."""
    class Fake:
        num_iterations, convergence_reason, khat_log_weights = 100, "rhat", None

    Fake.params = params
    compiled = type("C", (), {})()
    compiled.target = advi.from_log_density(log_density, dim)
    compiled.family = advi.MEANFIELD
    value_and_grad = _value_and_grad(compiled.target)
    compiled.gradient_check = lambda params, key: check_draws.scaled_gradients(
        value_and_grad, params, key, compiled.target.data)
    return checks.end_of_fit_warnings(Fake(), compiled, None, None, jax.random.PRNGKey(0))


def test_a_q_far_narrower_than_the_optimum_warns():
    """p = N(0, 2^2) in each coordinate: q at sd 2e-4 (c = 1e-8, where its mean's offset
    cannot be judged) warns that its sd is too small, however near its mean; at sd 0.5
    (c = 1/16, above the floor) and at the optimum it does not."""
    def log_density(z):
        return -0.5 * jnp.sum((z / 2.0) ** 2)

    mu = jnp.array([0.3, -0.2])
    for sd, warns in ((2e-4, True), (0.5, False), (2.0, False)):
        notes = _checked(advi.MeanFieldParams(mu, jnp.log(jnp.full(2, sd))), log_density, 2)
        assert any("q's sd there is too small" in n for n in notes) is warns, (sd, notes)


def test_fell_back_note_warns_where_the_log_weights_tail_is_heavy():
    """After a refused Laplace start: 200 draws of q = N(0, 1) against p = Student-t(3)
    (log weights whose k-hat is 2.3 in this sample) warn; q = p does not."""
    from scipy import stats

    from advi.checks import FELL_BACK_KHAT, FELL_BACK_NOTE, fell_back_note
    from advi.diagnostics import pareto_khat

    rng = np.random.default_rng(0)
    rng.normal(0.0, 1.0, 600)  # the sample the docstring's k-hat is of
    draws = rng.normal(0.0, 1.0, 200)
    heavy = stats.t.logpdf(draws, 3) - stats.norm.logpdf(draws)
    assert pareto_khat(heavy) > FELL_BACK_KHAT
    note = fell_back_note(heavy, "init=random (no usable mode after 9 L-BFGS steps)",
                          "meanfield")
    assert note is not None and note.startswith(FELL_BACK_NOTE)
    assert f"> {FELL_BACK_KHAT}" in note and "meanfield Gaussian" in note
    assert fell_back_note(np.zeros(200) + rng.normal(0, 1e-3, 200), "x", "meanfield") is None


def test_a_fit_from_a_fallen_back_start_judges_k_hat_on_more_draws():
    """After a refused start the k-hat check reads FELL_BACK_DRAWS draws of q (the gradient
    check's and more, each batch on its own draws): log weights 5 eps (log p rising by 5
    nats per q sd across q, which sits far from p's mass; k-hat 1.9 over the 1,000) warn;
    the gradient check alone runs once where the start was accepted."""
    from advi.check_draws import CHECK_SALT, GRAD_DRAWS
    from advi.checks import FELL_BACK_DRAWS, FELL_BACK_NOTE

    class Fake:
        params = advi.MeanFieldParams(jnp.zeros(1), jnp.zeros(1))
        num_iterations = 100
        convergence_reason = "rhat"
        khat_log_weights = None
        approximation = type("A", (), {"family": advi.MEANFIELD})()

    salts = []

    def gradient_check(params, key, salt=CHECK_SALT):
        salts.append(salt)
        draws = host_standard_normal(key, (GRAD_DRAWS,), np.float64, salt)
        moments = (np.zeros(1), np.ones(1), GRAD_DRAWS)
        return moments, moments, 5.0 * draws

    compiled = type("C", (), {})()
    compiled.target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 1)
    compiled.gradient_check = gradient_check
    for fell_back in ("init=random (no usable mode after 9 L-BFGS steps)", None):
        salts.clear()
        notes = checks.end_of_fit_warnings(Fake(), compiled, None, fell_back,
                                           jax.random.PRNGKey(0))
        if fell_back is None:
            assert salts == [CHECK_SALT] and not notes
        else:
            assert salts == [CHECK_SALT + i for i in range(FELL_BACK_DRAWS // GRAD_DRAWS)]
            assert any(n.startswith(FELL_BACK_NOTE) and f"over {FELL_BACK_DRAWS} draws" in n
                       for n in notes), notes


def _normal_mean(y):
    """y_n ~ N(mu, 1), mu ~ N(0, 10), the rows indexed by the data plate's indices."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("data", y.shape[0]) as idx:
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y[idx])


def test_a_minibatched_check_gives_each_pair_its_own_minibatch():
    """Normal mean, N = 2,000, B = 20, q 2 posterior sds off at the posterior's sd: each
    pair's mean is exactly sd * (N/B) sum_b (y_b - mu) - sd * mu / 100 over its minibatch,
    whose mean over minibatches is sd * dELBO/dmu on all the data and whose sd over
    independent minibatches (drawn with replacement) is sd * N * std(y) / sqrt(B): the
    check's mean and standard error recover both; one minibatch for every pair would give
    a standard error of 0."""
    y = np.random.default_rng(0).normal(1.5, 1.0, 2000).astype(np.float32)
    num, size = y.size, 20
    target = advi.from_numpyro(_normal_mean, (jnp.asarray(y),), minibatch_size=size)
    value_and_grad = jax.jit(jax.value_and_grad(
        lambda z, keyed: target.log_density_fn(z, keyed[0], keyed[1])))
    sd = 1 / np.sqrt(num + 0.01)
    mu = float(np.sum(y, dtype=np.float64)) / (num + 0.01) + 2 * sd
    params = advi.MeanFieldParams(jnp.array([mu], jnp.float32), jnp.log(jnp.array([sd])))
    key = jax.random.PRNGKey(3)
    (mean, se, n), _, log_weights = check_draws.scaled_gradients(
        value_and_grad, params, key, (key, target.data), minibatched=True)
    assert n == check_draws.MINIBATCH_GRAD_DRAWS // 2 and log_weights.size == 2 * n
    exact = sd * (float(np.sum(y - mu, dtype=np.float64)) - mu / 100)  # about -2
    noise = sd * num * float(np.std(y, dtype=np.float64)) / np.sqrt(size) / np.sqrt(n)
    assert abs(float(mean[0]) - exact) < 4 * noise, (mean, exact, noise)
    assert float(se[0]) == pytest.approx(noise, rel=0.15)
    (_, one, _), _, _ = check_draws.scaled_gradients(value_and_grad, params, key,
                                                     (key, target.data))
    assert float(one[0]) < 1e-3 * noise


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_a_minibatched_fit_far_off_warns_and_one_near_does_not(preset):
    """Normal mean, N = 20,000, B = 100: the Stan preset's relative ELBO rule stops where
    minibatch noise hides the ELBO's change (seeds 0-3 end 2.7-24 posterior sds off);
    the robust preset stops by split R-hat within 0.3 sd. Every fit more than 3 sds off
    warns, naming a larger minibatch_size, and none within 0.5 sd does; some Stan fit is
    far off."""
    y = np.random.default_rng(0).normal(1.5, 1.0, 20_000).astype(np.float32)
    post = float(np.sum(y, dtype=np.float64)) / (y.size + 0.01)
    sd = 1 / np.sqrt(y.size + 0.01)
    far = 0
    for seed in range(4 if preset == "stan" else 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = advi.fit(_normal_mean, jnp.asarray(y), rng_key=jax.random.PRNGKey(seed),
                              minibatch_size=100, preset=preset, progress_bar=False)
        z = abs(float(result.params.mu[0]) - post) / sd
        warned = [w for w in result.warnings if w.startswith(checks.GRADIENT_NOTE)
                  or "log standard deviations" in w]
        if z > 3:
            far += 1
            assert warned and all("minibatch_size" in w for w in warned), (seed, z)
        elif z < 0.5:
            assert not warned, (seed, z, warned)
    assert far > 0 if preset == "stan" else far == 0

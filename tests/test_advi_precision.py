"""advi.precision and the dtype option: the robust preset reaches the exact posterior of a
normal mean on unstandardised data, in float64 where float32 cannot
resolve it, and a float64 result stays float64 outside the fit."""

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.scipy.stats import norm

import advi
from advi import precision
from advi.laplace import LaplaceStart

PRIOR_SD = 1e9


def normal_mean(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def exact(y):
    """Exact posterior mean and sd of mu (conjugate normal, float64)."""
    prec = y.size + PRIOR_SD**-2
    return np.sum(y) / prec, prec**-0.5


def data(scale, seed=0, size=100):
    return scale + np.random.default_rng(seed).normal(size=size)


def robust_fit(y, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an end-of-fit warning fails
        return advi.fit(normal_mean, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                        **options)


def test_resolution_is_float32_spacing_in_sds():
    # spacing of float32 at 1e6 is 2**-4; at 1 it is 2**-23
    assert precision.resolution(np.array([1e6, 1.0]), np.array([0.1, 1.0])) == pytest.approx(
        2**-4 / 0.1)
    assert precision.resolution(np.array([1.0]), np.array([1.0])) == pytest.approx(2**-23)
    # sds that are not usable are skipped
    assert precision.resolution(np.array([1e6]), np.array([np.nan])) == 0.0
    assert precision.log_p_spacing(-5e17) == pytest.approx(2.0**35)
    assert precision.log_p_spacing(float("-inf")) == float("inf")


def test_a_refused_start_counts_only_within_rounding_of_a_mode():
    def start(ok, newton_sd):
        params = advi.MeanFieldParams(np.array([1e6], np.float32), np.log([0.1]))
        return LaplaceStart(params, ok, 5, 0.0, np.array([0.1]), -160.0, newton_sd)

    assert precision.start_resolution(start(True, 0.01)) == pytest.approx(0.625)
    assert precision.start_resolution(start(False, 0.21)) == pytest.approx(0.625)
    assert precision.start_resolution(start(False, 1e3)) == 0.0  # far from any mode
    assert precision.start_resolution(start(False, float("inf"))) == 0.0  # -H not definite


def test_shortfall_only_for_auto_in_float32():
    assert precision.float32_shortfall("auto", 0.5, True, 0.0) is not None
    assert "log p" in precision.float32_shortfall("auto", 0.0, False, 10.0)
    assert "non-finite log p" in precision.float32_shortfall("auto", 0.0, False, math.inf)
    assert precision.float32_shortfall("auto", 0.0, True, 10.0) is None  # start accepted
    assert precision.float32_shortfall(None, 0.5, True, 0.0) is None
    with jax.enable_x64(True):  # already float64: nothing to promote
        assert precision.float32_shortfall("auto", 0.5, True, 0.0) is None


def test_doubt_redoes_only_a_float32_fit_that_warned_with_a_precision_signal():
    """A float32 fit that warned is redone where its start met non-finite values or its
    loop met non-finite draws; a fit with no warnings, or one already promoted, or with no
    signal, is not."""
    notes = ("max_iter=10000 reached",)
    doubt = functools.partial(precision.float32_doubt, "auto", None)
    assert "non-finite log densities" in doubt(True, notes, 0, False)
    assert "non-finite draws" in doubt(False, notes, 3, False)
    assert "non-finite draws" in doubt(False, notes, 0, True)
    assert doubt(True, (), 3, True) is None  # no warning: nothing to mend
    # an accepted start whose only warning is max_iter's: slow, which float64 does not mend;
    # non-finite draws in the loop still doubt it
    assert doubt(True, notes, 0, False, True) is None
    assert "non-finite draws" in doubt(True, notes, 2, False, True)
    assert doubt(False, notes, 0, False) is None  # no signal
    assert precision.float32_doubt("auto", "promoted", True, notes, 0, False) is None
    assert precision.float32_doubt(None, None, True, notes, 0, False) is None
    with jax.enable_x64(True):
        assert doubt(True, notes, 3, True) is None


def test_carries_float64_tells_a_log_density_pinned_to_float32():
    at = np.array([[0.3, -1.2], [1.1, 0.4]], np.float32)

    def half(x):
        return -0.5 * jnp.sum(x)

    assert precision.carries_float64(advi.from_log_density(lambda z: half(z**2), 2), at)
    cast = advi.from_log_density(lambda z: half(z.astype(jnp.float32) ** 2), 2)
    assert not precision.carries_float64(cast, at)  # told by its dtype
    # a float32 part beside a constant float64 term reads as float64: told by its values
    beside = advi.from_log_density(lambda z: half(z.astype(jnp.float32) ** 2) + 0.0 * z[0], 2)
    assert not precision.carries_float64(beside, at)
    nowhere = advi.from_log_density(lambda z: half(z**2) - jnp.inf, 2)
    assert precision.carries_float64(nowhere, at)  # nothing to tell by: redone


def _trend_density(pinned: bool) -> advi.Target:
    """A linear trend on years 1980-2020 (intercept and slope correlated -0.9998), as a
    log density in zeta = (a, b, log sigma); ``pinned`` computes it in float32 whatever
    zeta's dtype and adds a float64 zero (how a TensorFlow Probability density reads
    beside an improper prior)."""
    rng = np.random.default_rng(0)
    year = np.arange(1980, 2021, dtype=np.float32)
    y = (3.0 + 0.05 * (year - 2000) + rng.normal(0.0, 0.5, year.size)).astype(np.float32)

    def log_density(z):
        a, b, log_sigma = z.astype(jnp.float32) if pinned else z
        sigma = jnp.exp(log_sigma)
        lp = (norm.logpdf(a, 0.0, 100.0) + norm.logpdf(b, 0.0, 10.0)
              + norm.logpdf(sigma, 0.0, 5.0) + log_sigma
              + jnp.sum(norm.logpdf(y, a + b * year, sigma)))
        return lp + 0.0 * jnp.sum(z) if pinned else lp

    return advi.from_log_density(log_density, 3)


def test_auto_redoes_a_doubtful_float32_fit_only_where_float64_can_change_it(monkeypatch):
    """A float32 fit of the uncentred trend cut short by max_iter warns; with every such
    fit in doubt (``advi.precision.float32_doubt`` replaced), the density in float64 is
    redone in float64, and the same density pinned to float32 keeps its float32 fit and
    its warning (``advi.precision.carries_float64``)."""
    def in_doubt(dtype, promoted, nonfinite, notes, *signals):
        return "every warned fit is in doubt here" if notes else None

    monkeypatch.setattr(advi.precision, "float32_doubt", in_doubt)
    key = jax.random.PRNGKey(2)
    redone = advi.fit(_trend_density(False), rng_key=key, preset="robust", max_iter=100)
    assert redone.params.mu.dtype == np.float64
    assert "float64 (every warned fit is in doubt here)" in redone.start
    with pytest.warns(RuntimeWarning, match="max_iter"):
        kept = advi.fit(_trend_density(True), rng_key=key, preset="robust", max_iter=100)
    assert kept.params.mu.dtype == np.float32 and "float64" not in kept.start


def _wall_in_float32(z):
    """In float32, log p rises to a wall of NaN at z = 1 (no mode: q is pushed into it); in
    float64, a standard normal."""
    if z.dtype == jnp.float32:
        return jnp.where(z[0] < 1.0, z[0], jnp.nan)
    return -0.5 * jnp.sum(z**2)


def test_auto_redoes_a_float32_fit_that_raised_in_float64_and_names_why(monkeypatch):
    """A float32 fit that raises (non-finite draws at the smallest eta) is redone in float64
    under ``dtype="auto"`` (``advi.precision.float32_failure``); a forced float32 fit
    raises, naming float64 as the remedy, and a float64 fit's error does not. (The wall's
    NaNs around the refused start's end send the fit to float64 before its loop,
    ``FAILING_SHARE``; lifted here, the float32 fit runs and raises.)"""
    target = advi.from_log_density(_wall_in_float32, dim=1)
    key = jax.random.PRNGKey(0)
    with pytest.raises(advi.ADVIError, match="smallest eta") as err:
        advi.fit(target, rng_key=key, preset="robust", dtype="float32", khat_samples=0)
    assert 'fit in float64 (dtype="float64"' in str(err.value)
    early = advi.fit(target, rng_key=key, preset="robust", khat_samples=0)
    assert "float64 (float32 gives a non-finite log p at" in early.start
    monkeypatch.setattr(precision, "FAILING_SHARE", 2.0)
    redone = advi.fit(target, rng_key=key, preset="robust", khat_samples=0)
    assert redone.params.mu.dtype == np.float64
    assert "float64 (the float32 fit raised: non-finite gradients" in redone.start
    assert abs(float(redone.params.mu[0])) < 0.1 and not redone.warnings
    wall = advi.from_log_density(lambda z: jnp.where(z[0] < 1.0, z[0], jnp.nan), dim=1)
    with pytest.raises(advi.ADVIError, match="smallest eta") as err:
        advi.fit(wall, rng_key=key, preset="robust", dtype="float64", khat_samples=0)
    assert "float64" not in str(err.value).split("remedy:")[1]


def test_a_laplace_start_reports_a_search_through_non_finite_values():
    """A search whose line search steps over a wall of -inf says so; one on a smooth
    density (accepted, or stopped after one step) does not."""
    def walled(z, d):  # -inf beyond z_0 = 2: the line search steps over the wall
        return jnp.where(z[0] < 2.0, -0.5 * jnp.sum((z - 10.0) ** 2), -jnp.inf)

    def ill(z, d):
        return -0.5 * (z[0] ** 2 + 1e12 * z[1] ** 2)

    with jax.enable_x64(True):
        wall, stopped, done = (
            advi.laplace_start(advi.log_density_functions(f, 2), advi.MEANFIELD,
                               np.array(z0), None, max_steps=steps)
            for f, z0, steps in ((walled, [0.0, 0.0], None), (ill, [3.0, 1e5], 1),
                                 (ill, [3.0, 0.0], None)))
    assert wall.nonfinite
    assert not stopped.ok and not stopped.nonfinite
    assert done.ok and not done.nonfinite


def test_scope_sets_the_default_float_and_restores_it():
    before = jnp.result_type(float)
    with precision.scope("float64"):
        assert jnp.result_type(float) == jnp.float64
        with precision.scope("float32"):
            assert jnp.result_type(float) == jnp.float32
    assert jnp.result_type(float) == before
    with pytest.raises(ValueError, match="dtype='float16' is not valid"):
        with precision.scope("float16"):
            pass


def test_invalid_dtype_option_is_named():
    with pytest.raises(ValueError, match=r"dtype='half' is not valid.*float64"):
        advi.fit(normal_mean, data(1.0), rng_key=jax.random.PRNGKey(0), dtype="half")
    with pytest.raises(ValueError, match="needs start='laplace'"):
        advi.fit(normal_mean, data(1.0), rng_key=jax.random.PRNGKey(0), dtype="auto")


@pytest.mark.parametrize("scale, dtype", [(1e2, "float32"), (1e5, "float64"),
                                          (1e8, "float64")])
def test_robust_reaches_the_exact_posterior_at_any_scale(scale, dtype):
    """Within 0.1 posterior sd at data around 1e2, 1e5 and 1e8 in the
    library's default float32, switching to float64 where float32 cannot resolve q (at 1e5
    its spacing is 0.08 sd; at 1e8 the float32 start cannot even see log p decrease)."""
    y = data(scale)
    mean, sd = exact(y)
    result = robust_fit(y)
    assert result.params.mu.dtype == np.dtype(dtype)
    assert result.converged and result.convergence_reason in ("rhat", "elbo settled")
    assert abs(float(result.params.mu[0]) - mean) / sd < 0.1
    assert ("float64" in result.start) == (dtype == "float64")
    assert jnp.result_type(float) == jnp.float32  # the process's setting is untouched
    draws = result.sample(jax.random.PRNGKey(1), 4000)["mu"]
    assert draws.dtype == np.dtype(dtype)  # not truncated to float32 outside the fit
    assert abs(float(np.mean(draws)) - mean) / sd < 0.1
    assert float(np.std(draws)) == pytest.approx(sd, rel=0.25)
    assert abs(float(result.mean()["mu"]) - mean) / sd < 0.1


def test_explicit_dtype_overrides_the_process_setting():
    y = data(1.0)
    stan64 = advi.fit(normal_mean, y, rng_key=jax.random.PRNGKey(0), dtype="float64",
                      max_iter=200)
    assert stan64.params.mu.dtype == np.float64
    assert stan64.khat_log_weights.dtype == np.float64
    with jax.enable_x64(True):  # a user with x64 on asks for one float32 fit
        fit32 = robust_fit(y, dtype="float32")
    assert fit32.params.mu.dtype == np.float32
    mean, sd = exact(y)
    assert abs(float(fit32.params.mu[0]) - mean) / sd < 0.1


def test_float32_pinned_at_1e6_warns_instead():
    """dtype="float32" keeps the fit in float32 where it cannot resolve q; the end-of-fit
    checks then say so (never silent) and name the float64 remedy."""
    y = data(1e6)
    with pytest.warns(RuntimeWarning, match='dtype="float64"'):
        result = advi.fit(normal_mean, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                          dtype="float32")
    assert result.params.mu.dtype == np.float32


def _recording_target(seen: list):
    """A 3-d standard normal whose log density records, each time JAX traces it, the matrix
    product precision in force; a fresh closure, so no compiled function is reused."""

    def log_density(zeta):
        seen.append(jax.config.jax_default_matmul_precision)
        return -0.5 * zeta @ zeta

    return advi.from_log_density(log_density, dim=3)


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_a_fit_traces_matrix_products_at_full_precision_unless_the_user_chose(preset):
    # JAX's default lets a GPU run float32 products in TensorFloat-32; a fit asks for the
    # dtype's own precision, and leaves the user's setting as it was
    options = dict(preset=preset, max_iter=200, khat_samples=0)
    seen: list = []
    result = advi.fit(_recording_target(seen), rng_key=jax.random.PRNGKey(0), **options)
    result.sample(jax.random.PRNGKey(1), 10)
    assert seen and set(seen) == {precision.MATMUL_PRECISION}
    assert jax.config.jax_default_matmul_precision is None
    chosen: list = []
    with jax.default_matmul_precision("tensorfloat32"):
        advi.fit(_recording_target(chosen), rng_key=jax.random.PRNGKey(0), **options)
    assert chosen and set(chosen) == {"tensorfloat32"}


def _dot_precisions(lowered_text: str) -> set:
    """The precisions of the dot_general ops in a lowered program's StableHLO text."""
    import re

    return set(re.findall(r"dot_general .*precision = \[(\w+),", lowered_text))


@pytest.mark.parametrize("family", ["meanfield", "fullrank"])
def test_the_algorithms_step_asks_for_full_precision_products_unless_the_user_chose(family):
    # advi.algorithm's functions are traced inside the user's own jit, after advi.fit's
    # scope has closed: they set the precision themselves, and keep the caller's
    matrix = jnp.asarray(np.eye(3) + 0.1, jnp.float32)
    target = advi.from_log_density(lambda z: -0.5 * z @ matrix @ z, dim=3)
    alg = advi.algorithm(target, family=family, grad_samples=2)
    state = alg.init(jax.random.PRNGKey(0))
    step = jax.jit(lambda s, k: alg.step(s, k, 0.1, None))
    assert _dot_precisions(step.lower(state, jax.random.PRNGKey(1)).as_text()) == {"HIGHEST"}
    with jax.default_matmul_precision("tensorfloat32"):
        chosen = step.lower(state, jax.random.PRNGKey(1)).as_text()
    assert "HIGHEST" not in _dot_precisions(chosen) and _dot_precisions(chosen)


GP_POINTS, GP_JITTER, GP_NOISE = 40, 1e-6, 0.3


def _gp_factor(x, xp):
    """The Cholesky factor of a squared-exponential kernel (amplitude 3, length scale 1.5)
    on the points ``x`` plus a 1e-6 jitter, computed in the array module ``xp``."""
    gap = (x[:, None] - x[None, :]) ** 2
    return xp.linalg.cholesky(9.0 * xp.exp(-0.5 * gap / 1.5**2)
                              + GP_JITTER * xp.eye(x.shape[0]))


def gp_regression(x, y):
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([x.shape[0]]).to_event(1))
    f = _gp_factor(x, jnp) @ z
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(f, GP_NOISE), obs=y)


def test_a_float64_fit_computes_on_float32_data_in_float64():
    """A Gaussian process regression whose inputs come as float32 (``jnp.linspace`` in
    JAX's default float): float32's rounding of the kernel's squared distances leaves the
    covariance with a 1e-6 jitter not positive definite, and its Cholesky factor NaN. A
    float64 fit casts the float32 data to float64 (exactly), so the kernel is computed in
    float64 and the fit reaches z's exact Gaussian posterior mean (mean-field's optimum
    for a Gaussian). Before, ``dtype="float64"`` left the data in float32: every log
    density was NaN."""
    x = jnp.linspace(0.0, 10.0, GP_POINTS)
    assert x.dtype == jnp.float32
    assert not np.all(np.isfinite(np.asarray(_gp_factor(x, jnp))))  # float32 cannot
    factor = _gp_factor(np.asarray(x, np.float64), np)
    y = factor @ np.random.default_rng(0).standard_normal(GP_POINTS) + GP_NOISE * (
        np.random.default_rng(1).standard_normal(GP_POINTS))
    precision_z = np.eye(GP_POINTS) + factor.T @ factor / GP_NOISE**2
    cov = np.linalg.inv(precision_z)
    mean = cov @ factor.T @ y / GP_NOISE**2
    result = advi.fit(gp_regression, x, np.asarray(y, np.float32),
                      rng_key=jax.random.PRNGKey(0), preset="robust", dtype="float64",
                      progress_bar=False)
    assert result.params.mu.dtype == np.float64
    z_error = (np.asarray(result.mean()["z"]) - mean) / np.sqrt(np.diagonal(cov))
    assert np.sqrt(np.mean(z_error**2)) < 0.1 and np.max(np.abs(z_error)) < 0.25


def _overflows_in_float32(zeta):
    """Finite in float64 everywhere; in float32 exp(100 z) overflows for z > 0.89."""
    return -0.5 * jnp.sum(zeta**2) + jnp.log1p(jnp.exp(100.0 * zeta[0])) - 100.0 * zeta[0]


def _never_finite(zeta):
    return -0.5 * jnp.sum(zeta**2) + jnp.log(-1.0 - zeta[0] ** 2)


def test_a_refused_start_goes_to_float64_where_float32_fails_around_it():
    """``float32_shortfall`` asks for float64 where a refused start met non-finite values
    and log p is not finite in float32 at a share of the draws around its end, only where
    float64 is finite at those draws; never for an accepted start or a density that float64
    cannot mend either."""
    points = np.array([[1.5, 0.0], [2.0, 1.0], [3.0, -1.0]], np.float32)
    overflows = advi.from_log_density(_overflows_in_float32, dim=2)
    never = advi.from_log_density(_never_finite, dim=2)
    shortfall = functools.partial(precision.float32_shortfall, "auto", 0.0)
    why = shortfall(False, 0.01, points, overflows)
    assert why is not None and "3 of 10 draws" in why
    assert shortfall(False, 0.01, points, never) is None  # float64 fails as well
    assert shortfall(True, 0.01, points, overflows) is None  # the start was accepted
    assert shortfall(False, 0.01, points[:2], overflows) is None  # 2 of 10: below the share
    assert precision.float32_shortfall("float32", 0.0, False, 0.01, points, overflows) is None


def gp_amplitude(x, y):
    """``gp_regression`` with the kernel's amplitude unknown: float32 factors the kernel
    plus its 1e-6 jitter where the amplitude is small, and gives NaN where it is near its
    posterior (about 3)."""
    amplitude = numpyro.sample("amplitude", dist.HalfNormal(5.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([x.shape[0]]).to_event(1))
    gap = (x[:, None] - x[None, :]) ** 2
    kernel = amplitude**2 * jnp.exp(-0.5 * gap / 1.5**2) + GP_JITTER * jnp.eye(x.shape[0])
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(jnp.linalg.cholesky(kernel) @ z, GP_NOISE), obs=y)


def test_auto_fits_a_gp_in_float64_from_the_start_where_float32_fails_near_its_mode():
    """``dtype="auto"`` on a GP regression with unknown amplitude: float32's Laplace search
    meets NaN Cholesky factors and is refused, and log p is not finite in float32 at a
    share of the draws around where it stopped, so the fit runs in float64 before its
    first iteration (``result.start`` says why), the same fit as ``dtype="float64"``'s."""
    x = jnp.linspace(0.0, 10.0, GP_POINTS)
    factor = _gp_factor(np.asarray(x, np.float64), np)
    y = np.asarray(factor @ np.random.default_rng(0).standard_normal(GP_POINTS) + GP_NOISE * (
        np.random.default_rng(1).standard_normal(GP_POINTS)), np.float32)
    fit = functools.partial(advi.fit, gp_amplitude, x, y, rng_key=jax.random.PRNGKey(0),
                            preset="robust", progress_bar=False, max_iter=1000)
    result = fit()
    assert "float32 gives a non-finite log p at" in result.start, result.start
    in_float64 = fit(dtype="float64")
    np.testing.assert_array_equal(result.params.mu, in_float64.params.mu)

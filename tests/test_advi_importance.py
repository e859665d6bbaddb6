"""advi.importance: the log weights behind ``pareto_khat`` by calls of the compiled value
and gradient are log p - log q at draws of q, and the ELBO's program is used where the fit
has it (or where the calls would cost more)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import advi
from advi import curvature
from advi.aot import Lazy, aot
from advi.families import MeanFieldParams, host_standard_normal
from advi.importance import KHAT_SALT, by_calls

SCALES = np.array([0.5, 1.0, 3.0])


def _log_p(zeta, data):
    return jnp.sum(jax.scipy.stats.norm.logpdf(zeta, 1.0, SCALES))


def _compiled():
    params = MeanFieldParams(np.zeros(3, np.float32), np.log(SCALES * 1.2).astype(np.float32))
    key = np.zeros(2, np.uint32)
    value_and_grad = aot(jax.jit(jax.value_and_grad(_log_p)), params.mu, (key, None))
    return value_and_grad, params, key


def test_the_calls_give_log_p_minus_log_q_at_draws_of_q():
    value_and_grad, params, key = _compiled()
    weights = by_calls(value_and_grad, Lazy(None), params, key, 400, (key, None))
    eps = host_standard_normal(key, (400, 3), np.float32, KHAT_SALT)
    sd = np.exp(np.asarray(params.omega, np.float64))
    zeta = np.asarray(params.mu, np.float64) + eps * sd
    expected = (stats.norm.logpdf(zeta, 1.0, SCALES).sum(1)
                - stats.norm.logpdf(zeta, np.asarray(params.mu, np.float64), sd).sum(1))
    np.testing.assert_allclose(weights, expected, rtol=1e-4, atol=1e-4)
    assert np.std(weights) > 0.1  # q is wider than p: the weights vary


def test_the_elbo_program_is_used_where_compiled_or_where_calls_cost_more(monkeypatch):
    value_and_grad, params, key = _compiled()
    elbo = Lazy(None)
    elbo.compiled = lambda *args: None  # the fit compiled its ELBO already
    assert by_calls(value_and_grad, elbo, params, key, 10, (key, None)) is None
    monkeypatch.setattr(curvature, "DIFFERENCES_MAX_FLOPS", 0.0)
    assert by_calls(value_and_grad, Lazy(None), params, key, 10, (key, None)) is None


COV = np.array([[1.0, 0.9], [0.9, 1.0]])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the Stan preset's own run
@pytest.mark.parametrize("preset", ["robust", "stan"])
def test_a_fits_khat_weights_are_log_p_minus_log_q_of_its_own_q(preset):
    """Both routes (robust: calls; Stan: its compiled ELBO) give log p - log q: on a
    correlated Gaussian, which no mean-field q matches, the weights' mean is -KL(q || p)
    of the fitted q (about -0.83 nats at the family's optimum), within its noise."""
    target = advi.from_log_density(
        lambda z: jax.scipy.stats.multivariate_normal.logpdf(z, jnp.ones(2), COV), 2)
    result = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset=preset, max_iter=2000,
                      progress_bar=False)
    weights = np.asarray(result.khat_log_weights, np.float64)
    assert weights.shape == (1000,) and np.all(np.isfinite(weights))
    mu = np.asarray(result.params.mu, np.float64)
    var = np.exp(2 * np.asarray(result.params.omega, np.float64))
    precision = np.linalg.inv(COV)
    kl = 0.5 * (np.sum(np.diag(precision) * var) + (mu - 1) @ precision @ (mu - 1) - 2
                + np.log(np.linalg.det(COV)) - np.sum(np.log(var)))
    assert kl > 0.5
    noise = 4 * float(np.std(weights)) / math.sqrt(weights.size)
    assert -np.mean(weights) == pytest.approx(kl, abs=noise)

"""A robust fit stopped short of its family's optimum continues at a smaller eta
(``advi.anneal``): the scale of a non-centred hierarchy of 1,000 groups against its exact
posterior, and the rule that decides."""

import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import stats

import advi
from advi import anneal
from advi.checks import GRADIENT_NOTE, STUCK_NOTE

GROUPS, ROWS = 1000, 4


def _hierarchy(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("groups", y.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal((mu + tau * z)[:, None], 1.0).expand(y.shape)
                   .to_event(2), obs=y)


def _tau_posterior(y: np.ndarray) -> tuple[float, float]:
    """tau's exact posterior mean and sd: with mu integrated out (N(0, 25) prior), the group
    means are N(mu, tau^2 + 1 / ROWS); a quadrature over tau on a grid of 20,001 points."""
    ybar = y.mean(1).astype(np.float64)
    grid = np.linspace(1e-4, 2.0, 20_001)
    v = grid[:, None] ** 2 + 1.0 / ROWS
    precision = GROUPS / v + 1 / 25.0
    m = ybar.sum() / v / precision
    log_p = (-0.5 * GROUPS * np.log(v) - 0.5 * np.sum((ybar - m) ** 2, 1, keepdims=True) / v
             - 0.5 * m**2 / 25.0 - 0.5 * np.log(precision))[:, 0] + stats.halfnorm.logpdf(grid)
    w = np.exp(log_p - log_p.max())
    w /= w.sum()
    mean = float(grid @ w)
    return mean, float(np.sqrt(((grid - mean) ** 2) @ w))


def _fit(y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = advi.fit(_hierarchy, y, rng_key=jax.random.PRNGKey(1), progress_bar=False,
                          preset="robust")
    return result, [str(w.message) for w in caught]


def test_the_hierarchys_scale_moves_to_its_optimum_at_the_smaller_eta(monkeypatch):
    """At eta 0.1 the iterate average leaves tau about 1.4 posterior sds below its exact
    mean and the gradient check says so; continued at eta 0.01 it ends within 1 sd (the
    mean-field family's own bias is about 0.5 there), with no warning."""
    rng = np.random.default_rng(0)
    y = (2.0 + 0.5 * rng.standard_normal(GROUPS)[:, None]
         + rng.standard_normal((GROUPS, ROWS))).astype(np.float32)
    mean, sd = _tau_posterior(y)
    result, caught = _fit(y)
    tau = float(jnp.mean(result.sample(jax.random.PRNGKey(2), 4000)["tau"]))
    assert abs(tau - mean) < sd, (tau, mean, sd)
    assert result.eta == pytest.approx(0.01) and not caught and not result.warnings
    assert result.elbo_history.iteration[-1] == result.num_iterations
    assert np.all(np.diff(result.elbo_history.iteration) > 0)

    monkeypatch.setattr(anneal, "wanted", lambda result, o: False)
    before, caught = _fit(y)
    tau = float(jnp.mean(before.sample(jax.random.PRNGKey(2), 4000)["tau"]))
    assert tau < mean - sd and before.eta == pytest.approx(0.1)
    assert any(message.startswith(GRADIENT_NOTE) for message in caught)


def _result(warnings=(GRADIENT_NOTE + " in 1 of 9 coordinates",), converged=True,
            num_iterations=1000):
    return types.SimpleNamespace(warnings=warnings, converged=converged,
                                 num_iterations=num_iterations)


@pytest.mark.parametrize("result, options, expected", [
    (_result(), {}, True),
    (_result(converged=False), {}, False),  # max_iter or the hook ended it
    (_result(warnings=()), {}, False),
    (_result(warnings=(STUCK_NOTE + ": 9 of 9",)), {}, False),  # runs from the initial q
    (_result(num_iterations=9500), {}, False),  # no room for a stationarity window
    (_result(), {"stop": "relative_elbo"}, False),  # the Stan preset's rule
])
def test_only_a_stop_by_the_rule_with_a_few_coordinates_off_continues(result, options, expected):
    o = advi.PRESETS["robust"].replace(**options)
    assert anneal.wanted(result, o) is expected

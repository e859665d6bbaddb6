"""The compiled L-BFGS search of large models' Laplace start: a known Gaussian's mode by
both stopping tests, whitened coordinates, non-finite points, and agreement with the host
search it replaces; the host search's runaway test (a funnel ended, a mode left alone)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import advi
from advi.laplace import GRAD_RTOL
from advi.lbfgs import GAIN_WINDOW, RUNAWAY, find_mode, mode_search


def _ill_conditioned(dim: int = 40):
    """log N(z; m, diag(sd^2)) with sds over two decades, around -1e3 nats (float32
    resolves log p to 6e-5 nats there)."""
    sd = np.logspace(-1.0, 1.0, dim)
    mean = np.linspace(-2.0, 2.0, dim) * sd

    def log_density(zeta, data):
        m, s = data
        return -1e3 - 0.5 * jnp.sum(((zeta - m) / s) ** 2)

    return log_density, (jnp.asarray(mean, jnp.float32), jnp.asarray(sd, jnp.float32)), mean, sd


def _search(log_density, base, scale, max_steps, abs_tol, data, gain_rtol=0.0, stall_after=0):
    search = jax.jit(mode_search(log_density, GRAD_RTOL, gain_rtol, stall_after))
    return search(jnp.asarray(base, jnp.float32), jnp.float32(scale), jnp.int32(max_steps),
                  jnp.float32(abs_tol), data)


def test_the_absolute_test_finds_the_mode_to_a_fraction_of_each_sd():
    log_density, data, mean, sd = _ill_conditioned()
    out = _search(log_density, np.zeros(sd.size), 1.0, 2000, 1e-2, data)
    assert bool(out.converged) and 0 < int(out.steps) < 2000
    assert np.max(np.abs(np.asarray(out.grad))) <= 1e-2
    # |grad_k| = |z_k - m_k| / sd_k^2 <= 1e-2, so |z_k - m_k| / sd_k <= 1e-2 sd_k
    np.testing.assert_array_less(np.abs(np.asarray(out.u) - mean) / sd, 1e-2 * sd + 1e-4)
    assert float(out.log_p) == np.float32(-1e3 + float(jnp.sum(
        -0.5 * ((out.u - data[0]) / data[1]) ** 2)))


def test_the_relative_test_stops_at_grad_rtol_of_log_p():
    log_density, data, mean, sd = _ill_conditioned()
    out = _search(log_density, np.zeros(sd.size), 1.0, 2000, 0.0, data)
    assert bool(out.converged)
    assert np.linalg.norm(np.asarray(out.grad)) <= GRAD_RTOL * abs(float(out.log_p))
    # it stopped short of the absolute test's point: the test, not the cap, ended it
    assert int(out.steps) < int(_search(log_density, np.zeros(sd.size), 1.0, 2000, 1e-2,
                                        data).steps)


def test_whitened_coordinates_are_u_with_zeta_equal_base_plus_scale_u():
    log_density, data, mean, sd = _ill_conditioned()
    base, scale = np.full(sd.size, 0.5), 0.5
    out = _search(log_density, base, scale, 2000, 1e-2, data)
    assert bool(out.converged)
    zeta = base + scale * np.asarray(out.u, np.float64)
    # the test is on the whitened gradient: |scale grad_k| <= 1e-2
    np.testing.assert_array_less(np.abs(zeta - mean) / sd, 1e-2 * sd / scale + 1e-4)
    # grad is d log p / d zeta, not the whitened gradient
    np.testing.assert_allclose(np.asarray(out.grad), (mean - zeta) / sd**2, atol=1e-3)


def _rosenbrock(zeta, data):
    """-1 - Rosenbrock's valley in K dimensions: the mode is at 1 (log p = -1), reached
    along a curved ridge in many more than one window of L-BFGS iterations."""
    return -1.0 - jnp.sum(100.0 * (zeta[1:] - zeta[:-1] ** 2) ** 2 + (1.0 - zeta[:-1]) ** 2)


def test_the_stall_test_ends_the_search_at_a_window_without_gain():
    base = np.full(30, -1.2)
    free = _search(_rosenbrock, base, 1.0, 5000, 1e-2, None)
    assert bool(free.converged) and int(free.steps) > GAIN_WINDOW  # needs several windows
    np.testing.assert_allclose(np.asarray(free.u) + base, 1.0, atol=1e-2)
    # a gain no window can reach: the search ends at the first window, the test not met
    stalled = _search(_rosenbrock, base, 1.0, 5000, 1e-2, None, gain_rtol=1e9)
    assert int(stalled.steps) == GAIN_WINDOW and not bool(stalled.converged)
    assert float(stalled.log_p) < float(free.log_p)
    # a search still climbing is not stopped: the same steps to the same mode
    climbing = _search(_rosenbrock, base, 1.0, 5000, 1e-2, None, gain_rtol=1e-6)
    assert int(climbing.steps) == int(free.steps) and bool(climbing.converged)


def test_the_stall_test_starts_at_stall_after():
    """A valley crossed at a steady 20 nats per 100 steps (Rosenbrock, K = 100; 514 steps
    to the mode) 1e5 nats below zero, where the stall rate 5e-4 |log p| is 50: tested from
    the first window, the stall test ends the search in the valley (at 200 steps, 59 nats
    short); tested from 1,000 steps on, the search crosses the valley to the mode. A stall
    after stall_after still ends the search, at the first window from then on."""
    base = np.full(100, -1.2)

    def deep(zeta, data):
        return _rosenbrock(zeta, data) - 1e5

    early = _search(deep, base, 1.0, 5000, 1e-2, None, gain_rtol=5e-4)
    assert int(early.steps) < 500 and not bool(early.converged)
    late = _search(deep, base, 1.0, 5000, 1e-2, None, gain_rtol=5e-4, stall_after=1000)
    assert bool(late.converged) and int(early.steps) < int(late.steps) < 1000
    np.testing.assert_allclose(np.asarray(late.u) + base, 1.0, atol=1e-2)
    assert float(late.log_p) - float(early.log_p) > 20
    stalled = _search(deep, base, 1.0, 5000, 1e-2, None, gain_rtol=1e9, stall_after=250)
    assert int(stalled.steps) == 3 * GAIN_WINDOW and not bool(stalled.converged)


def test_a_cap_of_zero_steps_returns_the_start():
    log_density, data, mean, sd = _ill_conditioned()
    out = _search(log_density, np.zeros(sd.size), 1.0, 0, 1e-3, data)
    assert int(out.steps) == 0 and not bool(out.converged)
    np.testing.assert_array_equal(np.asarray(out.u), 0.0)


def test_a_non_finite_start_returns_no_point():
    def log_density(zeta, data):
        return jnp.where(zeta[0] > 1.0, -jnp.sum(zeta**2), -jnp.inf)

    out = _search(log_density, np.zeros(3), 1.0, 100, 1e-3, None)
    assert float(out.log_p) == -np.inf and int(out.steps) == 0 and not bool(out.converged)


def test_steps_need_no_log_density_value_where_float32_cannot_resolve_it():
    """At log p = -1e8 float32 resolves log p to 8 nats, far more than any step near the
    mode gains: a line search comparing values cannot see progress there, one on
    gradients (which the offset leaves exact) goes on to the absolute test."""
    log_density, data, mean, sd = _ill_conditioned()

    def offset(zeta, data):
        return log_density(zeta, data) - 1e8

    out = _search(offset, np.zeros(sd.size), 1.0, 2000, 1e-3, data)
    assert bool(out.converged) and not bool(out.failed)
    np.testing.assert_array_less(np.abs(np.asarray(out.u) - mean) / sd, 1e-3 * sd + 1e-4)


def test_a_direction_along_which_log_p_rises_without_bound_fails_the_search():
    # log p = sum(zeta): every trial step, however long, still climbs at the first slope
    out = _search(lambda zeta, data: jnp.sum(zeta), np.zeros(3), 1.0, 100, 1e-3, None)
    assert bool(out.failed) and not bool(out.converged) and int(out.steps) == 0
    assert float(out.log_p) == 0.0  # the start, the only point whose log p was evaluated


def test_a_wall_of_non_finite_gradients_is_bisected_back_from():
    # log p = log(1 - z) - (z - 3)^2 / 2: NaN beyond z = 1 (its gradient too), the mode at
    # z = 2 - sqrt(2) inside; unit steps from u = 0 overshoot the wall at first
    def log_density(zeta, data):
        return jnp.sum(jnp.log(1.0 - zeta) - 0.5 * (zeta - 3.0) ** 2)

    out = _search(log_density, np.zeros(1), 1.0, 200, 1e-4, None)
    assert bool(out.converged) and np.isfinite(float(out.log_p))
    np.testing.assert_allclose(float(out.u[0]), 2.0 - np.sqrt(2.0), atol=1e-4)


def test_the_best_evaluated_point_is_returned_at_a_wall_of_zero_gradients():
    # log p rises towards z = 3 but is -inf beyond z = 1 with a zero gradient there (a
    # constraint the transform missed): the gradients cannot see the wall, the evaluation of
    # log p where the search would stop does, and the best point evaluated is returned
    def log_density(zeta, data):
        return jnp.where(zeta[0] < 1.0, -0.5 * jnp.sum((zeta - 3.0) ** 2), -jnp.inf)

    out = _search(log_density, np.zeros(1), 1.0, 200, 1e-6, None)
    assert np.isfinite(float(out.log_p)) and float(out.u[0]) < 1.0
    assert float(out.log_p) == float(log_density(out.u, None)) and not bool(out.converged)


def _host_search(log_density, zeta0, max_steps, abs_tol, runaway, data=None):
    value_and_grad = jax.jit(jax.value_and_grad(log_density))
    return find_mode(lambda z: value_and_grad(np.asarray(z, np.float32), data),
                     np.asarray(zeta0, np.float64), max_steps, GRAD_RTOL, abs_tol, runaway)


def test_the_host_search_starts_again_where_a_line_search_met_an_overflow():
    """A regression's (slope b, log noise sd s) in float32 on the host, flat priors: -n s -
    SSR(b) e^-2s / 2 with SSR(b) = w (b - m)^2 + 1. From (-1.5, 1.5) a quasi-Newton step
    tries a noise sd so small that e^-2s overflows; SciPy's line search ends there, short
    of the mode, so the search starts again from its best point and reaches it."""
    n, w, m = np.float32(46.0), np.float32(1000.0), np.float32(2.0)

    def value_and_grad(zeta):
        b, s = np.float32(zeta[0]), np.float32(zeta[1])
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(np.float32(-2.0) * s)
            ssr = w * (b - m) ** 2 + np.float32(1.0)
            return (float(-n * s - np.float32(0.5) * ssr * e),
                    np.array([-w * (b - m) * e, -n + ssr * e], np.float64))

    found = find_mode(value_and_grad, np.array([-1.5, 1.5]), 200, GRAD_RTOL)
    mode = np.array([m, -0.5 * np.log(n)])  # d/ds = 0 at SSR = 1: e^-2s = n
    sd = np.array([np.exp(mode[1]) / np.sqrt(w), 1 / np.sqrt(2 * n)])
    assert found.nonfinite and np.all(np.abs(found.zeta - mode) < 0.1 * sd), (found, mode)

def test_the_compiled_search_reaches_the_host_search_mode():
    # a milder problem, which SciPy's L-BFGS-B also solves to the test in float32
    log_density, data, mean, sd = _ill_conditioned()
    data = (data[0], jnp.sqrt(data[1]))
    zeta, converged, *_ = _host_search(log_density, np.zeros(sd.size), 2000, 1e-2, np.inf,
                                       data)
    out = _search(log_density, np.zeros(sd.size), 1.0, 2000, 1e-2, data)
    assert converged and bool(out.converged)
    # each is within 1e-2 sd_k^2 of the mode (the test), so within twice that of the other
    np.testing.assert_array_less(np.abs(np.asarray(out.u) - zeta), 2e-2 * np.sqrt(sd) ** 2)


def test_the_laplace_start_above_the_hessian_limit_runs_the_compiled_search():
    log_density, data, mean, sd = _ill_conditioned()
    fns = advi.log_density_functions(log_density, sd.size, hessian_max_dim=2)
    assert fns.search is not None
    assert advi.log_density_functions(log_density, sd.size).search is None
    start = advi.laplace_start(fns, advi.MEANFIELD, jnp.zeros(sd.size), data)
    assert start.ok
    np.testing.assert_array_less(np.abs(np.asarray(start.params.mu) - mean) / sd, 0.1)


def _funnel_logistic(zeta, data):
    """A centred hierarchical logistic regression (40 groups of 20 coin flips, group effects
    theta_j ~ N(0, s^2), log s free): log p grows without bound as s goes to 0."""
    x, y, group = data
    a, b, log_s, theta = zeta[0], zeta[1], zeta[2], zeta[3:]
    eta = a + b * x + theta[group]
    s = jnp.exp(log_s)
    return (jnp.sum(y * eta - jnp.logaddexp(0.0, eta)) - 0.5 * (a**2 + b**2) - 0.5 * s**2
            + log_s - jnp.sum(0.5 * (theta / s) ** 2 + log_s))


def test_the_runaway_test_ends_the_laplace_start_down_a_funnel(monkeypatch):
    rng = np.random.default_rng(0)
    data = (jnp.asarray(rng.normal(size=800), jnp.float32),
            jnp.asarray(rng.random(800) < 0.5, jnp.float32), jnp.repeat(jnp.arange(40), 20))
    fns = advi.log_density_functions(_funnel_logistic, 43)
    climbed = []
    for seed in range(2, 14):
        zeta0 = jax.random.normal(jax.random.PRNGKey(seed), (43,))
        ended = advi.laplace_start(fns, advi.MEANFIELD, zeta0, data)
        with monkeypatch.context() as patch:
            patch.setattr(advi.laplace, "RUNAWAY", np.inf)
            free = advi.laplace_start(fns, advi.MEANFIELD, zeta0, data)
        assert not ended.ok and not free.ok  # refused either way
        assert ended.steps <= free.steps
        climbed.append(free.steps > ended.steps and free.log_p > ended.log_p + 100)
    # without the test the search climbs on until L-BFGS finds no step (which also refuses
    # the start, -H being indefinite there), on some seeds hundreds of nats further down
    # the neck; which seeds differs with the device and the JAX and SciPy versions (on a
    # CPU, 4 of these 12 with jax 0.12 and 6 with jax 0.8 and SciPy 1.13)
    assert sum(climbed) >= 3, climbed


@pytest.mark.parametrize("problem", ["gaussian", "rosenbrock"])
def test_the_runaway_test_leaves_a_search_for_a_mode_alone(problem):
    if problem == "gaussian":  # the milder problem SciPy solves to the test in float32
        log_density, data, mean, sd = _ill_conditioned()
        data, zeta0, abs_tol = (data[0], jnp.sqrt(data[1])), np.zeros(sd.size), 1e-2
    else:
        log_density, data, zeta0, abs_tol = _rosenbrock, None, np.full(30, -1.2), 1e-2
    free = _host_search(log_density, zeta0, 5000, abs_tol, np.inf, data)
    guarded = _host_search(log_density, zeta0, 5000, abs_tol, RUNAWAY, data)
    assert free.converged and guarded.converged and free.steps == guarded.steps
    np.testing.assert_array_equal(free.zeta, guarded.zeta)

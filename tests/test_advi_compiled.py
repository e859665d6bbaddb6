"""The compiled chunk of :func:`advi.fit`: its end-of-chunk ELBO on common draws, and the
switch to value-checked steps where the log density is not finite."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi
from advi.chunk import HOST_STEP_DRAWS, ChunkMoments, host_chunk_len, step_eps, with_elbo
from advi.compiled import (
    NO_REDRAWS,
    REDRAWS,
    TRACE_ELBO_SAMPLES,
    VALUES_CHECKED,
    CompiledADVI,
    CompileSpec,
)
from advi.elbo_batches import ELBO_VMAP_BYTES, dividing_batch, elbo_batch
from advi.families import host_standard_normal
from advi.step import fresh_state
from advi.step_size import get_optimizer

KEY = jax.random.PRNGKey(0)


def _compiled(target, preset, host_steps=True):
    """``host_steps`` False: the robust chunk's steps draw in the program (large L M K)."""
    o = advi.PRESETS[preset]
    spec = CompileSpec(family=advi.get_family("meanfield"), optimizer=o.optimizer,
                       grad_samples=1, elbo_samples=100, init="random", laplace=False,
                       precondition=o.precondition, moments=o.stop == "rhat",
                       chunk_len=o.eval_elbo if o.stop == "rhat" and host_steps else 0)
    return CompiledADVI(target, spec, get_optimizer(o.optimizer))


@pytest.mark.parametrize("host_steps", [True, False])
def test_the_chunk_elbo_is_the_elbo_at_the_average_on_the_same_draws_every_chunk(host_steps):
    """With eta = 0 q does not move: two chunks with different step draws (salts) report
    the same ELBO (common draws), and it is the exact ELBO of q within the Monte Carlo
    error of TRACE_ELBO_SAMPLES draws."""
    dim = 3
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), dim)
    compiled = _compiled(target, "robust", host_steps)
    keys, state, _ = compiled.setup(KEY, 0)
    (_, first), (_, second) = (compiled.run(state, 0.0, keys[1], salt, 20) for salt in (0, 1))
    assert float(first.elbo) == float(second.elbo)
    mu, omega = np.asarray(state.params.mu), np.asarray(state.params.omega)
    var = np.exp(2 * omega)
    # E_q[-z'z / 2] + H[q], both in closed form, and the sd of the mean of S draws
    exact = -0.5 * np.sum(mu**2 + var) + np.sum(omega) + 0.5 * dim * (1 + np.log(2 * np.pi))
    mc_sd = np.sqrt(np.sum(mu**2 * var + 0.5 * var**2) / TRACE_ELBO_SAMPLES)
    assert abs(float(first.elbo) - exact) < 3 * mc_sd
    other_keys, _, _ = compiled.setup(jax.random.PRNGKey(1), 0)
    assert float(compiled.run(state, 0.0, other_keys[1], 0, 20)[1].elbo) != float(first.elbo)


def test_the_chunk_elbo_averages_log_p_over_its_finite_draws_as_redraws_would():
    """The host's ELBO of a chunk: q's entropy (what the chunk returns) plus the mean log p
    of the draws where it is finite; -inf where it is finite at none, and the flag that
    switches the fit to value-checked steps whenever one is not."""
    draws = np.array([[0.0], [1.0], [3.0]], np.float32)
    chunk_out = ChunkMoments(None, np.zeros(2), np.zeros(2), np.float32(2.0), draws)

    def log_p(zeta):
        return np.float32(-np.inf) if zeta[0] == 1.0 else np.float32(-zeta[0])

    moments, finite = with_elbo(log_p, chunk_out)
    assert float(moments.elbo) == (0.0 - 3.0) / 2 + 2.0 and not finite
    assert moments.draws is None
    moments, finite = with_elbo(lambda zeta: np.float32(-zeta[0]), chunk_out)
    assert float(moments.elbo) == -4.0 / 3 + 2.0 and finite
    moments, finite = with_elbo(lambda zeta: np.float32(np.nan), chunk_out)
    assert float(moments.elbo) == -np.inf and not finite


def test_host_draws_are_standard_normal_and_the_same_for_one_key_and_salt():
    eps = host_standard_normal(KEY, (400, 50), np.float32)
    assert eps.shape == (400, 50) and eps.dtype == np.float32
    np.testing.assert_array_equal(eps, host_standard_normal(KEY, (400, 50), np.float32))
    assert abs(eps.mean()) < 4 / np.sqrt(eps.size) and abs(eps.std() - 1) < 0.02
    for other in ((jax.random.PRNGKey(1), 0), (KEY, 1)):
        assert not np.array_equal(eps, host_standard_normal(other[0], (400, 50), np.float32,
                                                            other[1]))


def test_a_chunk_takes_its_steps_draws_from_the_host_only_where_they_are_few():
    assert host_chunk_len(50, 1, HOST_STEP_DRAWS // 50) == 50
    assert host_chunk_len(50, 2, HOST_STEP_DRAWS // 50) == 0  # E3's K = 25,250: 0


def test_a_steps_draws_do_not_depend_on_where_its_chunk_begins():
    """Iteration i's draws are row i % L of block i // L: a chunk from iteration 17 sees
    the rows a chunk from 0 and one from 50 saw; another salt, other draws."""
    shape = (50, 2, 3)
    whole = np.concatenate([step_eps(KEY, 0, start, shape, np.float32) for start in (0, 50)])
    np.testing.assert_array_equal(step_eps(KEY, 0, 17, shape, np.float32), whole[17:67])
    assert whole.dtype == np.float32 and abs(whole.std() - 1) < 0.15
    assert not np.array_equal(step_eps(KEY, 1, 0, shape, np.float32), whole[:50])


def test_steps_check_values_only_once_a_non_finite_log_density_was_met():
    """Gradient-only steps cannot see a -inf region of zero gradient; the end-of-chunk
    check sees it, reruns the chunk with value-checked steps and keeps them."""
    slab = advi.from_log_density(  # -inf on z_0 > 0.5, a third of N(0, 1)'s mass
        lambda z: jnp.where(z[0] > 0.5, -jnp.inf, -0.5 * jnp.sum(z**2)), 2)
    smooth = advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 2)
    for target, met in ((slab, True), (smooth, False)):
        for preset in ("stan", "robust"):
            compiled = _compiled(target, preset)
            keys, state, _ = compiled.setup(KEY, 0)
            # q = N((0.5, 0), I): half of its mass is where log p is -inf
            edge = state.params._replace(mu=jnp.asarray([0.5, 0.0]))
            state = fresh_state(edge, compiled.optimizer, jnp.zeros((), jnp.int32))
            out = compiled.run(state, 0.01, keys[1], 0, 50)
            state = out[0] if preset == "robust" else out
            assert (compiled.level == VALUES_CHECKED) is met
            assert (int(state.redraws) > 5) is met


def test_an_eta_search_trial_that_overflows_does_not_switch_the_fit(caplog):
    """Stan's eta search tries eta = 100, which sends a regression's log scale far enough
    for (y - mu)^2 / sigma^2 to overflow to -inf with a finite gradient; that trial is
    rejected by its ELBO, and the fit's steps stay gradient-only (no switch, no second
    compilation)."""

    def model(x, y):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([3]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(x @ w, sigma), obs=y)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=200)).astype(np.float32)
    with caplog.at_level(logging.INFO, logger="advi"):
        result = advi.fit(model, x, y, rng_key=KEY, khat_samples=0)
    messages = [r.getMessage() for r in caplog.records]
    assert any("eta=100 elbo=-inf" in m for m in messages)  # the trial did overflow
    assert not any("every draw's value is checked" in m for m in messages)
    assert result.eta < 100 and np.all(np.isfinite(np.asarray(result.params.mu)))


def test_elbo_batch_keeps_all_draws_at_once_within_the_budget_else_as_many_as_fit():
    """Batches divide the draws, so that every batch is full (one compilation)."""
    assert elbo_batch(ELBO_VMAP_BYTES, 100) is None
    assert elbo_batch(4 * ELBO_VMAP_BYTES, 100) == 25
    assert elbo_batch(ELBO_VMAP_BYTES * 100 // 24, 100) == 20  # 24 fit; 20 divides 100
    assert elbo_batch(4 * ELBO_VMAP_BYTES, 97) == 1  # a prime number of draws
    assert elbo_batch(1000 * ELBO_VMAP_BYTES, 100) == 1  # never fewer than one draw
    assert [dividing_batch(12, most) for most in (0, 5, 6, 100)] == [1, 4, 6, 12]


def _rates(x):
    """A Poisson factorisation-like model whose every draw makes an (n, n) rate matrix."""
    u = numpyro.sample("u", dist.Gamma(1.0, 1.0).expand([x.shape[0], 2]).to_event(2))
    v = numpyro.sample("v", dist.Gamma(1.0, 1.0).expand([2, x.shape[1]]).to_event(2))
    numpyro.sample("x", dist.Poisson(u @ v).to_event(2), obs=x)


@pytest.mark.skipif(jax.default_backend() != "cpu",
                    reason="batches are chosen on a CPU only (advi.elbo_batches.full_data_batch)")
@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_on_a_cpu_the_elbo_of_large_draws_runs_in_batches_with_the_same_value(caplog, preset):
    """100 draws of a 400 x 400 rate matrix need more than ELBO_VMAP_BYTES at once: the
    ELBO (Stan's loop's, compiled with the chunk; the robust fit's, for k-hat, on first
    use) runs them in batches (and says so), and its value is that of one draw at a time;
    a small model keeps them all at once."""
    x = jnp.asarray(np.random.default_rng(0).poisson(2.0, (400, 400)), jnp.float32)
    target = advi.from_numpyro(_rates, (x,))
    with caplog.at_level(logging.INFO, logger="advi"):
        compiled = _compiled(target, preset)
        keys, state, _ = compiled.setup(KEY, 0)
        batched, _ = compiled.elbo(state.params, keys[2], 0)
    assert "the ELBO's 100 draws run" in caplog.text
    family = advi.get_family("meanfield")

    def log_density(zeta, key):
        return target.log_density(zeta, key)

    one_by_one = advi.elbo.elbo_estimate(log_density, family, state.params,
                                         jax.random.fold_in(keys[2], 0), 100, 1)
    np.testing.assert_allclose(batched, float(one_by_one.elbo), rtol=1e-5)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="advi"):
        small = _compiled(advi.from_log_density(lambda z: -0.5 * jnp.sum(z**2), 3), preset)
        keys, state, _ = small.setup(KEY, 0)
        small.elbo(state.params, keys[2], 0)
    assert "the ELBO's" not in caplog.text


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_a_chunk_ends_at_a_failed_step_with_the_last_finite_state(preset):
    """log p(z) = z below 1 and NaN beyond: q is pushed into the NaN region and a step
    exhausts its redraws. Run one iteration at a time, the first failed step leaves the
    state at iteration f with the last finite parameters; a single chunk of 50 from the
    same start ends there too, without running its remaining steps."""
    calls = []

    def log_density(z):
        jax.debug.callback(lambda: calls.append(1))
        return jnp.where(z[0] < 1.0, z[0], jnp.nan)

    target = advi.from_log_density(log_density, dim=1)

    def state_of(out, compiled):
        return out[0] if compiled.options.moments else out

    single = _compiled(target, preset)
    keys, start, _ = single.setup(KEY, 0)
    state = start
    while not bool(state.failed):
        assert int(state.iteration) < 30, "the fit was expected to fail within 30 steps"
        previous = state
        state = state_of(single.run(state, 1.0, keys[1], 0, 1), single)
    assert int(state.iteration) == int(previous.iteration)
    chunked = _compiled(target, preset)
    calls.clear()
    whole = state_of(chunked.run(start, 1.0, keys[1], 0, 50), chunked)
    assert bool(whole.failed) and int(whole.iteration) == int(state.iteration)
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(previous.params),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the chunk's remaining steps each repeating the failed one's 11 evaluations would take
    # 11 (50 - f) of them; ending at the failure takes a few per step and the probe's
    assert len(calls) < 11 * (50 - int(state.iteration)) / 2


def _nan_gradient_slab():
    """log p = -z'z / 2, whose gradient is NaN on the slab z_0 > 1 (16% of N(0, 1)'s mass)
    while its value stays finite: only the steps' gradient test sees it."""
    def log_density(z):
        # sqrt's derivative at 0 is inf, times maximum's 0 beyond z_0 = 1: NaN there
        return -0.5 * jnp.sum(z**2) + 0.0 * jnp.sqrt(jnp.maximum(1.0 - z[0], 0.0))

    return advi.from_log_density(log_density, 2)


def test_a_step_without_redraws_is_refused_where_one_with_redraws_redraws():
    """The same key: where the draw's gradient is finite both steps agree to the last digit;
    where it is not, the step without redraws is refused and the other redraws."""
    target = _nan_gradient_slab()
    steps = {redraw: jax.jit(advi.algorithm(target, grad_samples=1, init="zero",
                                            redraw=redraw).step) for redraw in (False, True)}
    start = advi.algorithm(target, init="zero").init(KEY)
    refused = 0
    for i in range(40):
        key = jax.random.PRNGKey(i)
        (plain, info), (redrawn, redrawn_info) = (steps[r](start, key, 0.1, ()) for r in
                                                   (False, True))
        assert int(info.redraws) == 0 and bool(redrawn_info.ok)
        if bool(info.ok):
            assert int(redrawn_info.redraws) == 0
            for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(redrawn), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        else:
            refused += 1
            assert bool(plain.failed) and int(redrawn_info.redraws) > 0
            np.testing.assert_array_equal(np.asarray(plain.params.mu),
                                          np.asarray(start.params.mu))
    assert 2 <= refused <= 15  # about 16% of 40 steps meet the slab


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_a_chunk_meeting_a_non_finite_gradient_is_rerun_with_redraws_and_keeps_them(preset):
    """The fit's first chunk redraws nothing and fails at the slab; it is run again with
    redraws and gives exactly the steps of advi.algorithm(redraw=True) on the same keys;
    later chunks redraw. A trial chunk (the eta search's) switches nothing."""
    target, o = _nan_gradient_slab(), advi.PRESETS[preset]
    trial = _compiled(target, preset)
    keys, start, _ = trial.setup(KEY, 0)
    trial.run(start, 0.1, keys[1], 0, 50, trial=True)
    assert trial.level == NO_REDRAWS
    compiled = _compiled(target, preset)
    out = compiled.run(start, 0.1, keys[1], 0, 50)
    state = out[0] if preset == "robust" else out
    assert compiled.level == REDRAWS and not bool(state.failed) and int(state.redraws) > 0
    step = jax.jit(advi.algorithm(target, optimizer=o.optimizer, precondition=o.precondition,
                                  with_elbo=False).step)
    expected, run_key = start, jax.random.fold_in(keys[1], 0)
    # the robust chunk's steps take their draws from the host (advi.chunk.step_eps)
    eps = (step_eps(keys[1], 0, 0, (o.eval_elbo, 1, 2), compiled.dtype) if
           compiled.options.chunk_len else [None] * 50)
    for k in range(50):
        expected = step(expected, jax.random.fold_in(run_key, k), 0.1, (), eps[k])[0]
    assert int(expected.redraws) == int(state.redraws)
    np.testing.assert_allclose(np.asarray(state.params.mu), np.asarray(expected.params.mu),
                               rtol=1e-6, atol=1e-6)

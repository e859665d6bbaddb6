"""The runners' timing protocol on a conjugate normal model with a known posterior.

Model: mu ~ N(0, 10^2), y_n | mu ~ N(mu, 1). Posterior N(m, v), v = 1 / (N + 0.01),
m = v sum_n y_n; the posterior predictive of a held-out y is N(m, 1 + v).

Timing is tested on fake clocks (``clock=``), whose seconds pass by known amounts: per
reading, per log-density evaluation or per scoring, never with the machine's speed.
"""

import logging
import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
import pytest
from numpyro.infer.util import initialize_model
from scipy.stats import norm

from advi_repro.planning.methods import AdviConfig, HmcConfig, NutsConfig
from advi_repro.runners.advi_runner import run_advi
from advi_repro.runners.mcmc_chunks import affordable, chunk_plan, make_chunk
from advi_repro.runners.mcmc_runner import run_mcmc, starting_point
from advi_repro.runners.trace import TraceWriter

Y_TRAIN = np.random.default_rng(0).normal(1.5, 1.0, size=40).astype(np.float32)
Y_HELDOUT = np.random.default_rng(1).normal(1.5, 1.0, size=25).astype(np.float32)


def model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def log_likelihood(samples):
    """(S, N_heldout) log N(y_n | mu_s, 1)."""
    return dist.Normal(samples["mu"][:, None], 1.0).log_prob(jnp.asarray(Y_HELDOUT)[None, :])


def exact_lpd() -> float:
    v = 1.0 / (len(Y_TRAIN) + 0.01)
    m = v * Y_TRAIN.sum()
    return float(np.mean(norm.logpdf(Y_HELDOUT, m, np.sqrt(1.0 + v))))


def _run(runner, method, tmp_path, *, seed=0, budget_s=1e6, scorer=log_likelihood, stop=None,
         target=model, **extra):
    trace = TraceWriter(tmp_path / f"trace{seed}.csv", identity={"seed": seed})
    facts = runner(target, {"y": jnp.asarray(Y_TRAIN)}, method,
                   rng_key=jax.random.PRNGKey(seed), budget_s=budget_s, log_likelihood=scorer,
                   trace=trace, stop=stop, **extra)
    return facts, pd.read_csv(trace.path)


def _stop_after(checkpoints):
    """A stop request that asks to stop from its ``checkpoints``-th question on."""
    asked = []

    def stop():
        asked.append(1)
        return "interrupted by SIGINT" if len(asked) >= checkpoints else None

    return stop


class _FakeClock:
    """Each reading is ``tick`` seconds after the last, so a block timed by two consecutive
    readings (a compiled chunk on the MCMC stopwatch) lasts exactly one tick; a slow step
    adds its seconds by hand."""

    def __init__(self, tick=1e-3):
        self.now, self.tick = 0.0, tick

    def __call__(self):
        self.now += self.tick
        return self.now


class _GradientClock:
    """Seconds that pass only while the log density of :meth:`model` is evaluated, ``cost``
    per evaluation (one per leapfrog step or gradient), counted by a callback from the
    compiled code: time proportional to the sampler's work, as on a real machine."""

    def __init__(self, cost):
        self.now, self.cost = 0.0, cost

    def __call__(self):
        return self.now

    def spend(self):
        self.now += self.cost

    def model(self, y):
        jax.debug.callback(self.spend)
        model(y)


def _slow_on(clock, seconds):
    """A scorer that takes ``seconds`` on the fake ``clock``."""
    def scorer(samples):
        clock.now += seconds
        return log_likelihood(samples)

    return scorer


def test_chunks_never_straddle_the_end_of_warmup():
    assert list(chunk_plan(120, 100, 50)) == [
        ("warmup", 50), ("warmup", 50), ("warmup", 20), ("sampling", 50), ("sampling", 50)]
    assert list(chunk_plan(0, 30, 50)) == [("sampling", 30)]


NUTS = NutsConfig(num_warmup=40, num_samples=60, checkpoint_every=20)


def test_nuts_trace_scores_post_warmup_draws_so_far(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="advi_repro.runners"):
        facts, trace = _run(run_mcmc, NUTS, tmp_path)
    assert list(trace["iteration"]) == [20, 40, 60, 80, 100]
    assert list(trace["phase"]) == ["warmup"] * 2 + ["sampling"] * 3
    assert list(trace["num_draws"]) == [20, 20, 20, 40, 60]  # warmup: the chunk's draws
    assert np.all(np.diff(trace["wall_s"]) > 0)
    assert trace["heldout_lpd"].iloc[-1] == pytest.approx(exact_lpd(), abs=0.02)
    assert facts["iterations"] == 100 and facts["num_samples_done"] == 60
    assert facts["divergences"] == 0 and 0.5 < facts["accept_rate"] <= 1.0
    assert facts["compile_s"] > 0 and not facts["stopped_by_budget"]
    messages = [record.getMessage() for record in caplog.records]  # progress: compile, checkpoints
    assert messages[0] == "compiling the NUTS kernel and a chunk of up to 20 transitions ..."
    assert re.fullmatch(r"compiled in \d+\.\d s", messages[1])
    assert sum(m.startswith("nuts iteration") for m in messages) == len(trace)


def test_nuts_gives_the_same_trace_for_the_same_seed_except_timings(tmp_path):
    _, first = _run(run_mcmc, NUTS, tmp_path / "a")
    _, second = _run(run_mcmc, NUTS, tmp_path / "b")
    pd.testing.assert_frame_equal(first.drop(columns="wall_s"), second.drop(columns="wall_s"))


def test_static_hmc_runs_with_its_fixed_trajectory(tmp_path):
    method = HmcConfig(num_warmup=40, num_samples=40, checkpoint_every=40, trajectory_length=1.0)
    facts, trace = _run(run_mcmc, method, tmp_path)
    assert list(trace["phase"]) == ["warmup", "sampling"]
    assert trace["heldout_lpd"].iloc[-1] == pytest.approx(exact_lpd(), abs=0.02)
    assert facts["mean_num_steps"] == pytest.approx(np.ceil(1.0 / facts["step_size"]), abs=1)


def test_hmc_started_at_advis_mean_counts_advis_seconds_on_its_clock(tmp_path):
    method = HmcConfig(num_warmup=20, num_samples=20, checkpoint_every=20,
                       trajectory_length=1.0, init="advi")
    facts, trace = _run(run_mcmc, method, tmp_path, clock=_FakeClock())
    assert facts["init"] == "advi" and facts["init_s"] > 0 and facts["init_compile_s"] > 0
    # ADVI's seconds on the same clock, then a tick per piece: the first transition alone,
    # the rest of the warmup chunk, the sampling chunk
    init_s = facts["init_s"]
    assert list(trace["wall_s"]) == pytest.approx([init_s + 2e-3, init_s + 3e-3])
    assert trace["heldout_lpd"].iloc[-1] == pytest.approx(exact_lpd(), abs=0.02)


def test_advi_starting_point_is_near_the_posterior_mean():
    strategy, init_s, _ = starting_point(model, {"y": jnp.asarray(Y_TRAIN)}, "advi",
                                          jax.random.PRNGKey(3))
    info = initialize_model(jax.random.PRNGKey(0), model, model_kwargs={"y": Y_TRAIN},
                            init_strategy=strategy)
    v = 1.0 / (len(Y_TRAIN) + 0.01)
    assert float(info.param_info.z["mu"]) == pytest.approx(v * Y_TRAIN.sum(), abs=3 * v**0.5)
    with pytest.raises(ValueError, match="init = 'map'"):
        starting_point(model, {"y": jnp.asarray(Y_TRAIN)}, "map", jax.random.PRNGKey(3))


def test_mcmc_stops_at_the_first_checkpoint_past_its_budget(tmp_path):
    facts, trace = _run(run_mcmc, NUTS, tmp_path, budget_s=0.5, clock=_FakeClock(tick=1.0))
    # the first transition runs alone (to time it) and already passes the budget
    assert list(trace["iteration"]) == [1] and list(trace["wall_s"]) == [1.0]
    assert facts["stopped_by_budget"] and facts["iterations"] == 1 and facts["wall_s"] == 1.0


def test_mcmc_cuts_the_chunk_that_would_run_past_its_budget(tmp_path):
    method = NutsConfig(num_warmup=60, num_samples=60, checkpoint_every=30)
    facts, trace = _run(run_mcmc, method, tmp_path, budget_s=5.5, clock=_FakeClock(tick=1.0))
    # Each piece takes 1 s on this clock: the first transition alone, then what the rates so
    # far (per transition, per leapfrog step) afford of the remaining seconds. The first
    # chunk ends inside the budget, the second is cut short by the piece that passes it.
    assert len(trace) == 2 and trace["iteration"].iloc[0] == 30
    assert 30 < trace["iteration"].iloc[1] < 60
    assert trace["wall_s"].iloc[0] < 5.5 and trace["wall_s"].iloc[1] == 6.0
    assert facts["wall_s"] == 6.0
    assert facts["stopped_by_budget"] and facts["stop_reason"] == "the budget of 5.5 s was reached"
    assert facts["next_transition_s"] is None


def test_a_slow_first_transition_stops_the_run_within_its_chunk(tmp_path):
    method = NutsConfig(num_warmup=60, num_samples=60, checkpoint_every=30)
    facts, trace = _run(run_mcmc, method, tmp_path, budget_s=1.5, clock=_FakeClock(tick=1.0))
    # the first transition took 1 s: the 0.5 s left afford one more, not the other 29
    assert list(trace["iteration"]) == [2] and list(trace["wall_s"]) == [2.0]
    assert facts["stopped_by_budget"]


@pytest.mark.parametrize(("args", "expected"), [
    ((50, 10.0, 0.0, 0), 1),  # rate unknown before the first transition: that one alone
    ((50, 10.0, 5.0, 50), 50),  # 0.1 s per transition: 100 fit, 50 asked
    ((50, 1.01, 5.0, 50), 11),  # ceil(10.1)
    ((50, 0.0, 5.0, 50), 1),  # at least one
])
def test_affordable_transitions(args, expected):
    assert affordable(*args) == expected


class _FakeNutsState(NamedTuple):
    z: jax.Array
    diverging: jax.Array
    accept_prob: jax.Array
    num_steps: jax.Array


def _fake_nuts_kernel(state):
    """Transitions of 1, 2, 4, 8, ... leapfrog steps, as early NUTS warmup's trees grow."""
    return state._replace(z=state.z + 1.0, num_steps=2 * state.num_steps)


@pytest.mark.parametrize(("step_limit", "count"), [
    (np.inf, 10),  # no limit: the whole length
    (6.0, 3),  # 1 + 2 + 4 = 7 steps: the third transition reaches the limit and is the last
    (7.5, 4),  # 7 < 7.5: a fourth (8 steps) runs
    (0.0, 1),  # at least one transition per call
])
def test_a_nuts_chunk_stops_after_the_transition_that_reaches_its_step_limit(step_limit, count):
    chunk = jax.jit(make_chunk(_fake_nuts_kernel, capacity=10, forecast=False))
    start = _FakeNutsState(jnp.zeros(()), jnp.zeros((), bool), jnp.ones(()),
                           jnp.full((), 0.5))  # the first transition doubles it to 1 step
    state, made, records = chunk(start, np.int32(10), np.float32(step_limit))
    assert int(made) == count and float(state.z) == count
    np.testing.assert_allclose(records[3][:count], 2.0 ** np.arange(count))


def _forecast(stop_reason):
    """(leapfrog steps, seconds) of the transition that HMC's ``stop_reason`` forecast."""
    match = re.fullmatch(r"the next HMC transition needed (\S+) leapfrog steps \(step size "
                         r"\S+\), about (\S+) s, past the budget of \S+ s", stop_reason)
    assert match, stop_reason
    return float(match[1]), float(match[2])


def test_hmc_stops_before_a_transition_that_would_pass_its_budget(tmp_path):
    # A trajectory of 2,000 (mu's posterior sd is 0.16): the first transition takes 2,000
    # leapfrog steps (Stan's L at the nominal step size 1), 20 s at 10 ms a step; the 80 s
    # left afford 4 more at that rate, but as warmup shrinks the step size a transition
    # grows to ~10^4 steps, and the compiled loop stops before the one that would pass the
    # budget.
    clock = _GradientClock(cost=0.01)
    method = HmcConfig(num_warmup=40, num_samples=40, checkpoint_every=40,
                       trajectory_length=2000.0)
    facts, trace = _run(run_mcmc, method, tmp_path, budget_s=100.0, clock=clock,
                        target=clock.model)
    steps, seconds = _forecast(facts["stop_reason"])
    assert facts["stopped_by_budget"] and 1 < facts["iterations"] < 5 and len(trace) == 1
    assert trace["wall_s"].iloc[0] == facts["wall_s"] <= 100.0  # stopped before the budget
    assert seconds == pytest.approx(steps * 0.01, rel=1e-2)  # at the true seconds per step
    assert facts["wall_s"] + seconds > 100.0  # ... as the next transition would pass it
    assert facts["next_transition_s"] == pytest.approx(seconds, rel=1e-2)


def test_hmc_that_cannot_make_one_transition_in_budget_scores_its_initial_point(tmp_path):
    clock = _GradientClock(cost=1e-3)
    method = HmcConfig(num_warmup=10, num_samples=10, checkpoint_every=10,
                       trajectory_length=1e7)
    facts, trace = _run(run_mcmc, method, tmp_path, budget_s=5.0, clock=clock,
                        target=clock.model)
    assert facts["iterations"] == 0 and facts["stopped_by_budget"]
    # 10^7 steps at the 1 ms per gradient timed before the chain started: not one is taken
    assert _forecast(facts["stop_reason"]) == (1e7, 1e4) and facts["wall_s"] == 0.0
    assert list(trace["iteration"]) == [0] and list(trace["num_draws"]) == [1]
    assert np.isfinite(trace["heldout_lpd"].iloc[0]) and list(trace["wall_s"]) == [0.0]


def test_mcmc_clock_excludes_held_out_evaluation_and_counts_it_apart(tmp_path):
    clock = _FakeClock()
    facts, trace = _run(run_mcmc, NUTS, tmp_path, scorer=_slow_on(clock, 1000.0), clock=clock)
    # a tick (1 ms) per piece: the first transition alone, the rest of its chunk, then one
    # piece per chunk; none of the 1,000 s that each checkpoint's scoring took
    assert list(trace["wall_s"]) == pytest.approx([2e-3, 3e-3, 4e-3, 5e-3, 6e-3])
    assert facts["wall_s"] == pytest.approx(6e-3)
    assert facts["checkpoint_s"] == pytest.approx(1000.0 * len(trace), abs=0.1)


ADVI = AdviConfig(max_iter=600, checkpoint_every=100, eval_draws=200)


def test_advi_trace_has_a_row_per_checkpoint_with_the_elbo(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        facts, trace = _run(run_advi, ADVI, tmp_path)
    assert list(trace["iteration"]) == list(range(100, facts["iterations"] + 1, 100))
    assert trace["elbo"].notna().all() and (trace["num_draws"] == 200).all()
    assert trace["heldout_lpd"].iloc[-1] == pytest.approx(exact_lpd(), abs=0.02)
    assert facts["compile_s"] > 0 and facts["eta"] > 0
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("advi")]
    # the log gives the compilation before the start; compile_s adds what compiles on first
    # need (the redrawing steps, when a trial eta of the search meets non-finite draws)
    assert messages[0] == "compiling the start, iteration and ELBO functions ..."
    upfront = re.fullmatch(r"compiled in (\d+\.\d) s", messages[1])
    assert upfront is not None and float(upfront[1]) <= facts["compile_s"] + 0.05, messages
    checkpoints = [m for m in messages if m.startswith("checkpoint at iteration")]
    assert len(checkpoints) == len(trace) and "(S = 200 draws from q)" in checkpoints[0]


def test_advi_stops_at_the_first_checkpoint_past_its_budget(tmp_path):
    facts, trace = _run(run_advi, ADVI, tmp_path, budget_s=1e-9)
    assert len(trace) == 1 and facts["stopped_by_budget"] and not facts["converged"]


def test_advi_clock_excludes_held_out_evaluation_and_counts_it_apart(tmp_path):
    clock = _FakeClock()
    facts, trace = _run(run_advi, ADVI, tmp_path, scorer=_slow_on(clock, 1000.0), clock=clock)
    assert 0 < facts["wall_s"] < 1000.0  # each checkpoint took 1,000 s of the clock
    assert facts["checkpoint_s"] >= 1000.0 * len(trace)
    assert trace["wall_s"].iloc[-1] == pytest.approx(facts["wall_s"])


@pytest.mark.parametrize(("runner", "method", "every"), [
    (run_advi, AdviConfig(max_iter=5000, tol_rel_obj=1e-9, checkpoint_every=100,
                          eval_draws=20, eta=0.1), 100),
    (run_mcmc, NUTS, 20),
])
def test_a_stop_request_ends_the_run_at_that_checkpoint(tmp_path, runner, method, every):
    facts, trace = _run(runner, method, tmp_path, stop=_stop_after(2))
    assert list(trace["iteration"]) == [every, 2 * every]
    assert facts["iterations"] == 2 * every and not facts["stopped_by_budget"]

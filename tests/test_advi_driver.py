"""The one main loop: its stopping rule and restart policy are parts, its clock injectable."""

import jax.numpy as jnp
import optax
import pytest

import advi
from advi.driver import RestartPolicy, Row, Verdict, checkpoint_due, drive
from advi.step import fresh_state


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Runner:
    """Chunks that take 1 s of the fake clock each and fail at eta > 1."""

    family, target, optimizer = advi.MEANFIELD, None, optax.identity()

    def __init__(self, clock, compile_at=None):
        self.clock, self.calls, self.compile_at = clock, [], compile_at
        self.lazy_compile_s, self.narrowable = 0.0, []

    def run(self, state, eta, key, salt, num_steps, narrowable=False):
        self.narrowable.append(narrowable)
        self.clock.now += 1.0
        if int(state.iteration) == self.compile_at and not self.lazy_compile_s:
            self.clock.now += 7.0  # a function compiled on first need, 7 s of the clock
            self.lazy_compile_s += 7.0
        self.calls.append((int(state.iteration), eta, salt, num_steps))
        if eta > 1.0:
            return state._replace(failed=jnp.ones((), bool))
        return state._replace(iteration=state.iteration + num_steps,
                              params=state.params._replace(mu=state.params.mu + num_steps))


class _Rule:
    """A row per chunk (ELBO = the iteration); converged at ``stop_at``."""

    moments, reports_rhat, fallback_text = False, False, "the last state"
    max_iter_note = "max_iter reached"

    def __init__(self, stop_at):
        self.stop_at, self.restarts = stop_at, 0

    def observe(self, state, moments):
        it = int(state.iteration)
        return Verdict(row=Row(float(it)), reason="done" if it >= self.stop_at else None)

    def estimate(self, state):
        return state.params

    def fallback(self, state):
        return state

    def restarted(self):
        self.restarts += 1

    def describe(self, row):
        return ""


HALVING = RestartPolicy(lambda eta: eta / 2 if eta / 2 >= 0.5 else None, "eta >= 0.5")


def _state():
    params = advi.MeanFieldParams(jnp.zeros(1), jnp.zeros(1))
    return fresh_state(params, optax.identity(), jnp.zeros((), jnp.int32))


def _drive(eta, rule, policy, clock, runner, **kwargs):
    options = dict(run_key=None, chunk_len=10, max_iter=100, checkpoint_every=20,
                   checkpoint=None, clock=clock, wall_s=0.0,
                   make_result=lambda out, final: (out, final))
    return drive(runner, _state(), eta, rule=rule, policy=policy, **{**options, **kwargs})


def test_failed_chunks_restart_by_the_policy_and_the_rule_stops_the_run():
    clock = _Clock()
    runner, rule, hooks = _Runner(clock), _Rule(stop_at=30), []

    def hook(info):
        hooks.append((info.iteration, info.wall_s))
        clock.now += 100.0  # a slow hook: not counted

    with pytest.warns(RuntimeWarning, match="restarting from the last state with eta=2"):
        out, final = _drive(4.0, rule, HALVING, clock, runner, checkpoint=hook)
    assert final and out.converged and out.reason == "done" and out.eta == 1.0
    assert out.restarts == ((0, 4.0, 2.0), (0, 2.0, 1.0)) and rule.restarts == 2
    assert [salt for _, _, salt, _ in runner.calls] == [0, 1, 2, 2, 2]  # salted by restarts
    assert list(out.history.iteration) == [10, 20, 30]
    assert list(out.history.wall_s) == [3.0, 4.0, 5.0]  # 1 s per chunk, failed ones too
    # log-spaced before the grid (10 = one chunk), the grid, then convergence; none twice
    assert hooks == [(10, 3.0), (20, 4.0), (30, 5.0)]
    assert float(out.params.mu[0]) == 30.0 and out.history.max_rhat is None


def test_the_runner_is_told_while_a_failure_at_iteration_0_would_narrow_q():
    """Two narrowings at iteration 0 (eta kept), then eta halves; the runner is told
    ``narrowable`` exactly while a failure there would narrow q, never after iteration 0."""
    clock = _Clock()
    runner = _Runner(clock)
    policy = HALVING._replace(narrow=lambda params: params, narrowings=2)
    with pytest.warns(RuntimeWarning, match="restarting from the last state with eta=2"):
        out, _ = _drive(4.0, _Rule(stop_at=30), policy, clock, runner)
    assert out.restarts == ((0, 4.0, 4.0), (0, 4.0, 4.0), (0, 4.0, 2.0), (0, 2.0, 1.0))
    assert runner.narrowable == [True, True, False, False, False, False, False]
    assert [it for it, *_ in runner.calls] == [0, 0, 0, 0, 0, 10, 20]


def test_a_compilation_during_a_chunk_is_off_the_clock():
    """A function compiled on first need in the second chunk (as the chunk that redraws):
    its 7 s are not the fit's seconds, in the history or at the checkpoints."""
    clock, hooks = _Clock(), []
    out, _ = _drive(1.0, _Rule(stop_at=30), HALVING, clock, _Runner(clock, compile_at=10),
                    checkpoint=lambda info: hooks.append(info.wall_s), checkpoint_every=10)
    assert list(out.history.wall_s) == [1.0, 2.0, 3.0] and hooks == [1.0, 2.0, 3.0]
    assert out.wall_s == 3.0 and clock.now == 10.0


def test_no_smaller_eta_is_an_error_holding_the_fallback_and_the_history():
    clock = _Clock()
    with pytest.raises(advi.ADVIError, match=r"at iteration 0 with eta=4, eta >= 0.5; no eta "
                       r"helps at iteration 0.*init='zero'") as err:
        _drive(4.0, _Rule(stop_at=30), RestartPolicy(lambda eta: None, "eta >= 0.5"),
               clock, _Runner(clock))
    out, final = err.value.result
    assert not final and out.restarts == () and int(out.state.iteration) == 0


def test_max_iter_warns_the_rules_note_and_cuts_the_last_chunk():
    clock = _Clock()
    runner = _Runner(clock)
    with pytest.warns(RuntimeWarning, match="max_iter reached") as caught:
        out, _ = _drive(1.0, _Rule(stop_at=10**6), HALVING, clock, runner, max_iter=25)
    assert caught[0].filename == __file__  # attributed to the caller, not to advi
    assert [n for _, _, _, n in runner.calls] == [10, 10, 5]
    assert out.reason == "max_iter" and not out.converged and out.notes == ("max_iter reached",)


def test_a_hook_stopping_at_convergence_keeps_the_convergence():
    clock = _Clock()
    out, _ = _drive(1.0, _Rule(stop_at=30), HALVING, clock, _Runner(clock),
                    checkpoint=lambda info: info.iteration >= 30, checkpoint_every=30)
    assert out.converged and out.reason == "stopped by checkpoint"
    assert int(out.state.iteration) == 30


def test_checkpoints_are_log_spaced_before_the_grid():
    due = [it for it in range(100, 2001, 100) if checkpoint_due(it, it - 100, 100, 500)]
    assert due == [100, 200, 400, 500, 1000, 1500, 2000]
    # a chunk as long as the grid step adds nothing
    assert [it for it in range(50, 301, 50) if checkpoint_due(it, it - 50, 50, 50)] == [
        50, 100, 150, 200, 250, 300]


def test_a_grid_the_chunks_do_not_divide_is_served_at_the_first_chunk_end_past_it():
    """Chunks of 50 (the robust stop's), checkpoints asked for every 30 or 120 iterations:
    after each chunk that reached or passed a multiple, so never more than one chunk late."""
    def due(every):
        return [it for it in range(50, 501, 50) if checkpoint_due(it, it - 50, 50, every)]

    assert due(30) == list(range(50, 501, 50))  # a multiple of 30 in every chunk
    assert due(120) == [50, 100, 150, 250, 400, 500]  # 50, 100 log-spaced; 120, 240, ...
    assert not checkpoint_due(110, 100, 50, 120)  # a partial chunk past no multiple

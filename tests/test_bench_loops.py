"""benchmarks/bench_loops.py: the loop shapes compute the same steps, timed by an injectable
clock."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bench_scripts import load

loops_script = load("bench_loops")


def _log_density(z, data):
    return -0.5 * jnp.sum((z - data) ** 2)


def test_every_loop_shape_runs_the_same_steps():
    """With a run-time count equal to the known one, fori, while, blocks and while with the
    data carried take the same steps from the same keys, with the plain gradient and in
    the redraw loop (a finite density: nothing is redrawn)."""
    dim, steps = 3, 20
    data = jnp.arange(dim, dtype=jnp.float32)
    state = (jnp.zeros(dim), jnp.full(dim, -2.0))
    for gradient in loops_script.make_steps(_log_density, dim).values():
        finals = [loop(state, jax.random.PRNGKey(0), np.int32(steps), data)
                  for loop in loops_script.loops(gradient, steps).values()]
        assert len(finals) == 4
        for final in finals[1:]:
            for a, b in zip(final, finals[0], strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert not np.allclose(np.asarray(finals[0][0]), 0.0, rtol=0, atol=1e-7)  # moved


def test_both_lbfgs_directions_take_the_same_steps_and_differ_from_the_gradient():
    data = jnp.asarray([1.0, -2.0, 3.0]) * 1e6  # far from the mode: the steps move u
    state = (jnp.zeros(3),)
    finals = {name: np.asarray(loop(state, None, None, data)[0])
              for name, loop in loops_script.direction_loops(_log_density, 20).items()}
    np.testing.assert_allclose(finals["gradient + compact form"],
                               finals["gradient + optax two-loop"], rtol=1e-5)
    assert not np.allclose(finals["gradient + compact form"], finals["gradient"], rtol=1e-3)
    assert not np.allclose(finals["gradient"], 0.0)


def test_a_loop_is_timed_per_step_by_the_given_clock():
    ticks = itertools.count(0.0, 2.0)  # every reading 2 s after the last
    loop = loops_script.loops(loops_script.make_steps(_log_density, 2)["plain"], 10)["fori"]
    seconds, finite = loops_script.time_loop(loop, (jnp.zeros(2), jnp.zeros(2)), 10,
                                             jnp.ones(2), repeats=3, clock=lambda: next(ticks))
    assert seconds == pytest.approx(0.2) and finite


@pytest.mark.parametrize("argv", [["--steps", "15"], ["--steps", "0"], ["--repeats", "0"]])
def test_steps_that_blocks_cannot_hold_stop_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit):
        loops_script.parse_arguments(argv)
    assert "--steps must be a positive multiple of 10" in capsys.readouterr().err

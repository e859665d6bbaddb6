"""The compact form of L-BFGS's direction against optax's two-loop recursion: the same
directions along a minimisation, past the memory's wrap-around, at the first step, and
with a pair of zero curvature; and the exact Newton step on a quadratic once the memory
spans it."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from advi.lbfgs_compact import scale_by_compact_lbfgs


def _quadratic(dim: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    a = a @ a.T / dim + np.diag(np.logspace(-1.0, 1.0, dim))
    return jnp.asarray(a, jnp.float32), jnp.asarray(rng.normal(size=dim), jnp.float32)


def _directions(memory_size: int, steps: int, repeat_at: int = -1):
    """optax's and the compact form's directions along optax's exact line searches on a
    quadratic; at step ``repeat_at`` the point and gradient repeat (s = y = 0)."""
    a, b = _quadratic()
    two_loop, compact = optax.scale_by_lbfgs(memory_size), scale_by_compact_lbfgs(memory_size)
    u = jnp.zeros(b.size)
    state_two, state_compact = two_loop.init(u), compact.init(u)
    out = []
    for step in range(steps):
        g = a @ u - b
        d_two, state_two = two_loop.update(g, state_two, u)
        d_compact, state_compact = compact.update(g, state_compact, u)
        out.append((np.asarray(d_two), np.asarray(d_compact), np.asarray(g)))
        if step != repeat_at:
            u = u - jnp.vdot(g, d_two) / jnp.vdot(d_two, a @ d_two) * d_two
    return out


@pytest.mark.parametrize("memory_size", [1, 3, 10])
def test_the_compact_form_gives_optax_two_loop_directions(memory_size):
    for d_two, d_compact, g in _directions(memory_size, 25):
        scale = np.linalg.norm(d_two)
        assert np.linalg.norm(d_compact - d_two) <= 1e-5 * scale, np.linalg.norm(g)


def test_the_first_step_is_the_gradient_capped_to_norm_one():
    d_two, d_compact, g = _directions(10, 1)[0]
    np.testing.assert_allclose(d_compact, g / max(1.0, np.linalg.norm(g)), rtol=1e-6)
    np.testing.assert_allclose(d_compact, d_two, rtol=1e-6)


def test_a_pair_of_zero_curvature_is_left_out_as_by_optax():
    # the repeated point makes s = y = 0: optax gives it weight 0, the compact form drops it
    for d_two, d_compact, _ in _directions(4, 12, repeat_at=5)[5:]:
        assert np.linalg.norm(d_compact - d_two) <= 1e-5 * np.linalg.norm(d_two)


def test_with_a_full_memory_on_a_quadratic_the_direction_is_the_newton_step():
    # after dim exact line searches along conjugate directions, H equals A^-1
    a, b = _quadratic(dim=6)
    compact = scale_by_compact_lbfgs(10)
    u, state = jnp.zeros(6), compact.init(jnp.zeros(6))
    for _ in range(7):
        g = a @ u - b
        d, state = compact.update(g, state, u)
        if float(jnp.linalg.norm(g)) < 1e-4:
            break
        u = u - jnp.vdot(g, d) / jnp.vdot(d, a @ d) * d
    x = jnp.asarray(np.random.default_rng(1).normal(size=6), jnp.float32)
    newton = np.linalg.solve(np.asarray(a, np.float64), np.asarray(x, np.float64))
    # H x for a fresh gradient x at the same point: the state's memory, a zero step
    probe, _ = compact.update(x, state._replace(updates=x, params=u), u)
    np.testing.assert_allclose(np.asarray(probe), newton, rtol=2e-3, atol=2e-3)


def test_a_memory_of_zero_pairs_is_refused():
    with pytest.raises(ValueError, match="memory_size must be >= 1, got 0"):
        scale_by_compact_lbfgs(0)

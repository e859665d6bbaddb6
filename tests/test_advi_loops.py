"""advi.loops.loop_data: a loop that reads its data through it computes what the plain loop
computes (to float32 rounding: XLA fuses it differently), holds only what is narrow, and
the barrier is the identity, also to ``jax.grad``."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from advi.loops import loop_data

STEPS = 30


def _masked_poisson(z, data):
    """The paper's E3 likelihood in small: log Poisson(y | theta beta^T) on the entries of
    ``mask`` (the shape whose data-only work XLA hoists out of a loop)."""
    theta = jnp.exp(z[:8].reshape(4, 2))
    beta = jnp.exp(z[8:].reshape(6, 2))
    rate = theta @ beta.T
    return jnp.sum(jnp.where(data["mask"], xlogy(data["y"], rate) - rate, 0.0))


def _data():
    rng = np.random.default_rng(0)
    return {"y": jnp.asarray(rng.poisson(3.0, (4, 6)), jnp.float32),
            "mask": jnp.asarray(rng.uniform(size=(4, 6)) > 0.2)}


def _ascent(z, d):
    return z + 1e-2 * jnp.clip(jax.grad(_masked_poisson)(z, d), -10.0, 10.0)


def test_a_loop_reading_its_data_by_loop_data_takes_the_plain_loops_steps():
    data, z0 = _data(), jnp.zeros(20)

    @jax.jit
    def plain(z, data):
        return jax.lax.while_loop(lambda c: c[0] < STEPS,
                                  lambda c: (c[0] + 1, _ascent(c[1], data)), (0, z))[1]

    @jax.jit
    def carried(z, data):
        held, read = loop_data(data)

        def body(c):
            k, z, h = c
            d, h = read(h)
            return k + 1, _ascent(z, d), h

        return jax.lax.while_loop(lambda c: c[0] < STEPS, body, (0, z, held))[1]

    expected = plain(z0, data)
    np.testing.assert_allclose(np.asarray(carried(z0, data)), np.asarray(expected), rtol=1e-5)
    assert float(_masked_poisson(expected, data)) > float(_masked_poisson(z0, data)) + 1.0


def test_read_gives_the_data_back_unchanged_and_differentiably():
    data = _data()
    held, read = loop_data(data)
    assert len(held) == 2  # the data go in the carry, the mask among them
    out, held_on = read(held)
    assert jax.tree.structure(out) == jax.tree.structure(data)
    for name in data:
        assert out[name].dtype == data[name].dtype and out[name].shape == data[name].shape
        np.testing.assert_array_equal(np.asarray(out[name]), np.asarray(data[name]))
    assert [x.dtype for x in held_on] == [x.dtype for x in held]
    z = jnp.linspace(-1.0, 1.0, 20)
    np.testing.assert_allclose(
        np.asarray(jax.grad(lambda z: _masked_poisson(z, read(held)[0]))(z)),
        np.asarray(jax.grad(_masked_poisson)(z, data)), rtol=1e-6)


def test_data_without_a_narrow_leaf_or_without_hold_are_not_carried():
    """Float32 and int32 data (a regression's, E2's indices) are left where XLA may hoist
    their work: nothing is held and ``read`` returns the data themselves."""
    wide = {"x": jnp.ones((3, 2)), "index": jnp.arange(3, dtype=jnp.int32)}
    for data, hold in ((wide, True), (_data(), False)):
        held, read = loop_data(data, hold)
        assert held == []
        assert read(held)[0] is data

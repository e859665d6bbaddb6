"""advi.xla_options: which XLA options a program gets, and that they leave its values alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from advi import xla_options

X = jnp.linspace(-1.0, 1.0, 7)
INDEX = jnp.array([0, 3, 3, 6, 1])


def gathered(x):
    """The gradient of an indexed gather: a scatter-add."""
    return jax.grad(lambda x: jnp.sum(jnp.sin(x[INDEX]) ** 2))(x)


def dense(x):
    return jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2 * jnp.exp(x)))(x)


def test_scatter_is_detected_in_the_gradient_of_a_gather_only():
    assert xla_options.scatters(jax.jit(gathered).lower(X))
    assert not xla_options.scatters(jax.jit(dense).lower(X))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU options")
def test_cpu_options_by_role_and_by_scatter():
    plain = xla_options.compile_options(jax.jit(dense).lower(X))
    assert plain == {**xla_options.HOT, **xla_options.OLDER_EMITTERS}
    once = xla_options.compile_options(jax.jit(dense).lower(X), once=True)
    assert once == {**xla_options.ONCE, **xla_options.OLDER_EMITTERS}
    # a scatter keeps XLA's newer emitters (the older ones loop over its updates serially)
    assert xla_options.compile_options(jax.jit(gathered).lower(X)) == xla_options.HOT
    assert xla_options.compile_options(None) == plain


@pytest.mark.parametrize("fn", [gathered, dense])
@pytest.mark.parametrize("once", [False, True])
def test_the_options_change_compile_time_not_values(fn, once):
    lowered = jax.jit(fn).lower(X)
    fast = lowered.compile(xla_options.compile_options(lowered, once=once))
    np.testing.assert_allclose(fast(X), lowered.compile()(X), rtol=1e-6, atol=1e-7)

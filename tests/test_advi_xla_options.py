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
def test_cpu_options_by_how_often_a_function_runs_and_by_scatter():
    older = xla_options.OLDER_EMITTERS
    for fn in (dense, gathered):
        lowered = jax.jit(fn).lower(X)
        assert xla_options.compile_options(lowered, calls="once") == {**xla_options.ONCE, **older}
        assert xla_options.compile_options(lowered, calls="bounded") == {**xla_options.HOT, **older}
    assert xla_options.compile_options(jax.jit(dense).lower(X)) == {**xla_options.HOT, **older}
    # a hot loop with a scatter keeps the newer emitters (the older ones loop over its updates)
    assert xla_options.compile_options(jax.jit(gathered).lower(X)) == xla_options.HOT
    assert xla_options.compile_options(None) == {**xla_options.HOT, **older}
    assert xla_options.compile_options(None, calls="once", alongside=True) == {
        **xla_options.ONCE, **older, **xla_options.ONE_THREAD}


def test_an_unknown_call_count_is_refused():
    with pytest.raises(ValueError, match="calls='often'"):
        xla_options.compile_options(None, calls="often")


@pytest.mark.parametrize("fn", [gathered, dense])
@pytest.mark.parametrize("calls", xla_options.CALLS)
@pytest.mark.parametrize("alongside", [False, True])
def test_the_options_change_compile_time_not_values(fn, calls, alongside):
    lowered = jax.jit(fn).lower(X)
    fast = lowered.compile(xla_options.compile_options(lowered, calls=calls,
                                                       alongside=alongside))
    np.testing.assert_allclose(fast(X), lowered.compile()(X), rtol=1e-6, atol=1e-7)

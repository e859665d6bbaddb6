"""The step-size sequence of Appendix E against a hand-computed two-step example."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import advi


def test_two_steps_by_hand():
    # eta is applied by the loop, so the transform gives rho_k / eta * g_k.
    tx = advi.scale_by_stan_step_size(tau=1.0, alpha=0.1, eps=0.0)
    params = jnp.zeros(2)
    state = tx.init(params)
    g1, g2 = jnp.array([3.0, -4.0]), jnp.array([1.0, 2.0])
    u1, state = tx.update(g1, state, params)
    # k = 1: s_1 = g_1^2 = (9, 16); rho/eta = 1 / (1 + sqrt(s_1)) = (1/4, 1/5)
    np.testing.assert_allclose(u1, [3.0 / 4.0, -4.0 / 5.0], rtol=1e-6)
    u2, state = tx.update(g2, state, params)
    # k = 2: s_2 = 0.1 g_2^2 + 0.9 s_1 = (0.1 + 8.1, 0.4 + 14.4) = (8.2, 14.8)
    s2 = np.array([8.2, 14.8])
    expected = 2.0**-0.5 * np.array([1.0, 2.0]) / (1.0 + np.sqrt(s2))
    np.testing.assert_allclose(u2, expected, rtol=1e-6)
    np.testing.assert_allclose(state.s, s2, rtol=1e-6)


def test_eps_changes_the_decay():
    tx = advi.scale_by_stan_step_size(eps=0.25)
    state = tx.init(jnp.zeros(1))
    _, state = tx.update(jnp.ones(1), state)
    u2, _ = tx.update(jnp.ones(1), state)
    assert float(u2[0]) == pytest.approx(2.0**-0.25 / 2.0, rel=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"tau": 0.0}, "tau=0.0"), ({"alpha": 1.5}, "alpha=1.5"), ({"eps": 0.5}, "eps=0.5")],
)
def test_bad_hyperparameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        advi.scale_by_stan_step_size(**kwargs)


def test_optimizers_by_name():
    assert advi.get_optimizer("adam") is not None
    with pytest.raises(ValueError, match="optimizer='lbfgs'"):
        advi.get_optimizer("lbfgs")


def test_an_optimizer_name_may_carry_numeric_arguments():
    """"adam(b2=0.99)" is optax's scale_by_adam(b2=0.99): after one step from zero its second
    moment is (1 - b2) g^2."""
    params = {"x": jnp.zeros(3)}
    grad = {"x": jnp.array([1.0, -2.0, 3.0])}
    specs = (("adam", 0.999), ("adam(b2=0.99)", 0.99), (" adam ( b1 = 0.5, b2=0.9 ) ", 0.9))
    for spec, b2 in specs:
        opt = advi.get_optimizer(spec)
        _, state = opt.update(grad, opt.init(params), params)
        # the state is optax.flatten's: the inner state on the raveled parameters
        np.testing.assert_allclose(state.nu, (1 - b2) * grad["x"] ** 2, rtol=1e-6)


@pytest.mark.parametrize("name, factory", [
    ("adam", optax.scale_by_adam), ("rmsprop", optax.scale_by_rms),
    ("adagrad", optax.scale_by_rss), ("stan", advi.scale_by_stan_step_size)])
def test_a_named_optimizer_steps_as_its_factory_on_each_leaf(name, factory):
    """The raveled optimiser (optax.flatten) takes the steps its factory takes on the
    pytree itself, over several steps and leaves of different shapes."""
    params = {"mu": jnp.zeros(3), "L": jnp.eye(2)}
    flat, plain = advi.get_optimizer(name), factory()
    flat_state, plain_state = flat.init(params), plain.init(params)
    for k in range(4):
        grad = jax.tree.map(lambda p, k=k: jnp.cos(jnp.arange(p.size) + k).reshape(p.shape),
                            params)
        ours, flat_state = flat.update(grad, flat_state, params)
        theirs, plain_state = plain.update(grad, plain_state, params)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("spec, match", [
    ("adam(b2)", "'b2' is not a key=number"),
    ("adam(b2=fast)", "'b2=fast' is not a key=number"),
    ("adam(beta=0.9)", "unexpected keyword argument 'beta'"),
    ("adamw(b2=0.9)", "optimizer='adamw\\(b2=0.9\\)' is unknown"),
])
def test_bad_optimizer_arguments_are_named(spec, match):
    with pytest.raises(ValueError, match=match):
        advi.get_optimizer(spec)

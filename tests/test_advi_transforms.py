"""Log-Jacobians of the constraints the paper's models use, against finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.distributions import constraints

import advi
from advi_repro.models import gamma_poisson_nmf


def _site_model(support, shape):
    def model():
        numpyro.sample("theta", dist.ImproperUniform(support, (), shape))

    return model


def _fd_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(x.shape[0]):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize(
    "support, shape, keep",
    [
        (constraints.positive, (3,), slice(None)),
        (constraints.interval(0.0, 100.0), (2,), slice(None)),
        (constraints.simplex, (4,), slice(0, 3)),  # K-1 free coordinates of a K-simplex
        (constraints.positive_ordered_vector, (4,), slice(None)),
        (gamma_poisson_nmf.stan_positive_ordered, (4,), slice(None)),
    ],
    ids=["positive", "interval_0_100", "simplex", "positive_ordered", "stan_positive_ordered"],
)
def test_log_density_is_the_log_jacobian(support, shape, keep):
    with jax.enable_x64(True):
        target = advi.from_numpyro(_site_model(support, shape))
        zeta = np.linspace(-0.8, 0.9, target.dim)
        log_det = float(target.log_density(jnp.asarray(zeta), jax.random.PRNGKey(0)))

        def constrained(z):
            return target.constrain(jnp.asarray(z))["theta"][keep]

        jac = _fd_jacobian(constrained, zeta)
        assert jac.shape == (target.dim, target.dim)
        np.testing.assert_allclose(log_det, np.linalg.slogdet(jac)[1], rtol=1e-6, atol=1e-6)
        value = np.asarray(target.constrain(jnp.asarray(zeta))["theta"])
        assert bool(support(value).all())


def test_the_positive_ordered_transform_is_a_leafless_pytree_that_crosses_jit():
    # NumPyro registers every Transform subclass as a pytree when the class is defined;
    # before NumPyro 0.22 a subclass without tree_flatten failed at `import advi`.
    from advi.transforms import unconstraining_transform

    transform = unconstraining_transform(constraints.positive_ordered_vector)
    leaves, treedef = jax.tree_util.tree_flatten(transform)
    assert leaves == []
    assert type(jax.tree_util.tree_unflatten(treedef, leaves)) is type(transform)
    zeta = jnp.array([0.0, -1.0, 0.5])
    theta = jax.jit(lambda t, z: t(z))(transform, zeta)
    np.testing.assert_allclose(theta, np.cumsum(np.exp(np.asarray(zeta))), rtol=1e-6)
    np.testing.assert_allclose(transform.inv(theta), zeta, atol=1e-6)

"""Several L-BFGS starts (advi.multistart): a start in the worse mode of a two-component
mixture moves to the better one; modes of comparable mass give a warning with the numbers."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi
from advi.families import MEANFIELD
from advi.multistart import multistart_laplace

BETTER = np.array([-2.0, 2.0])


def _mixture_data(weight: float, num: int = 200):
    """Draws from weight N(-2, 1) + (1 - weight) N(2, 1), float32."""
    rng = np.random.default_rng(0)
    first = rng.random(num) < weight
    y = np.where(first, -2.0, 2.0) + rng.normal(size=num)
    return jnp.asarray(y, jnp.float32)


def mixture(y, weight):
    """Two unit-variance components with known weights (weight, 1 - weight) and unknown
    locations: with unequal weights the swapped labels are a worse, separate mode."""
    locs = numpyro.sample("locs", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    mix = dist.Categorical(probs=jnp.array([weight, 1.0 - weight]))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.MixtureSameFamily(mix, dist.Normal(locs, 1.0)), obs=y)


def _laplace_functions(target):
    return advi.log_density_functions(lambda z, d: target.log_density_fn(z, None, d),
                                      target.dim)


def test_a_start_in_the_worse_mode_moves_to_the_better_one():
    target = advi.from_numpyro(mixture, (_mixture_data(0.7), 0.7))
    fns = _laplace_functions(target)
    swapped = jnp.array([2.0, -2.0])
    alone = multistart_laplace(fns, MEANFIELD, swapped, target.data, seed=0, extra_starts=0)
    assert np.allclose(np.asarray(alone.start.params.mu), -BETTER, atol=0.5)
    assert alone.note is None
    out = multistart_laplace(fns, MEANFIELD, swapped, target.data, seed=0)
    assert np.allclose(np.asarray(out.start.params.mu), BETTER, atol=0.5)
    assert "better of two modes" in out.note and not out.warn
    assert out.start.steps > alone.start.steps


def test_robust_fits_end_in_the_better_mode_on_every_seed():
    y = _mixture_data(0.7)
    for seed in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the better mode has ~all the mass: no warning
            result = advi.fit(mixture, y, 0.7, rng_key=jax.random.PRNGKey(seed),
                              preset="robust", khat_samples=0)
        sd = np.exp(np.asarray(result.params.omega))
        assert np.all(np.abs(np.asarray(result.params.mu) - BETTER) < 3 * sd + 0.2), seed


def test_modes_of_comparable_mass_warn_with_the_numbers():
    # equal weights: the swapped labels are an equally good mode (label switching)
    y = _mixture_data(0.5)
    with pytest.warns(RuntimeWarning, match=r"at least two modes .*log evidence \(Laplace\)"):
        advi.fit(mixture, y, 0.5, rng_key=jax.random.PRNGKey(0), preset="robust",
                 khat_samples=0)


def test_laplace_starts_one_runs_the_first_start_only():
    y = _mixture_data(0.7)
    ends = set()
    for seed in range(4):  # seeds 0 and 1 start in the swapped mode's basin
        result = advi.fit(mixture, y, 0.7, rng_key=jax.random.PRNGKey(seed), preset="robust",
                          khat_samples=0, laplace_starts=1)
        ends.add(bool(np.asarray(result.params.mu)[0] < 0))
    assert ends == {True, False}
    with pytest.raises(ValueError, match="laplace_starts=0 must be an integer >= 1"):
        advi.fit(mixture, y, 0.7, rng_key=jax.random.PRNGKey(0), laplace_starts=0)

"""advi.from_numpyro: every constraint from any q, the data plate, bad data named early."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.distributions import constraints

import advi

KEY = jax.random.PRNGKey(0)


def _ordered_model(y):
    # Three ordered positive levels, y_j ~ N(theta_j, 0.1): NumPyro's own transform for this
    # support is doubly exponential and overflows at a standard-normal q.
    theta = numpyro.sample(
        "theta", dist.ImproperUniform(constraints.positive_ordered_vector, (), (3,))
    )
    numpyro.sample("y", dist.Normal(theta, 0.1), obs=y)


@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_positive_ordered_model_fits_from_a_random_q(preset):
    y = jnp.array([0.5, 2.0, 6.0])
    target = advi.from_numpyro(_ordered_model, (y,))
    zeta = jax.random.normal(KEY, (1000, 3)) * 2.0  # wide draws, as from an initial q
    values = jax.vmap(target.log_density, (0, None))(zeta, KEY)
    assert bool(jnp.all(jnp.isfinite(values)))
    assert float(jnp.median(values)) > -2000.0  # NumPyro's transform: -2.4e5, 7% non-finite
    options = {"grad_samples": 10, "tol_rel_obj": 1e-3} if preset == "stan" else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = advi.fit(_ordered_model, y, rng_key=KEY, preset=preset, **options)
    close = np.allclose(result.mean()["theta"], y, atol=0.25)  # posterior sd 0.1
    if preset == "robust":
        assert close and not caught, [str(w.message) for w in caught]
    else:  # Stan's eta search may pick eta = 100 and diverge (seed 0 on JAX 0.11): it says so
        assert close or any("far from zero" in str(w.message) for w in caught)


def _poisson_rows(x):
    lam = numpyro.sample("lam", dist.Exponential(1.0))
    with numpyro.plate("rows", x.shape[0]) as idx:
        numpyro.sample("x", dist.Poisson(lam), obs=x[idx])


def _two_plates(x):
    lam = numpyro.sample("lam", dist.Exponential(1.0))
    with numpyro.plate("groups", 2):
        numpyro.sample("u", dist.Normal(0.0, 1.0))
    with numpyro.plate("rows", x.shape[0]) as idx:
        numpyro.sample("x", dist.Poisson(lam), obs=x[idx])


def test_the_only_plate_is_the_data_plate_whatever_its_name():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.poisson(3.0, size=500), jnp.float32)
    target = advi.from_numpyro(_poisson_rows, (x,), minibatch_size=50)
    assert target.num_data == 500
    result = advi.fit(_poisson_rows, x, rng_key=KEY, minibatch_size=50, eta=0.1, max_iter=2000)
    a, b = 1.0 + float(x.sum()), 501.0
    assert float(jnp.exp(result.params.mu[0])) == pytest.approx(a / b, rel=0.05)


def test_several_plates_need_a_name_and_a_name_works():
    x = jnp.ones(10)
    with pytest.raises(ValueError, match=r"2 plates \['groups', 'rows'\].*minibatch_plate"):
        advi.from_numpyro(_two_plates, (x,), minibatch_size=5)
    target = advi.from_numpyro(_two_plates, (x,), minibatch_size=5, minibatch_plate="rows")
    assert target.num_data == 10


def test_a_minibatched_model_that_takes_its_data_whole_is_named():
    """obs=x instead of obs=x[idx]: with B of N indices the plate's B rows meet x's N, a
    broadcasting error inside NumPyro; it is named with the plate, B, N and the remedy,
    before any compilation (the same model fits without minibatches)."""
    def whole(x):
        lam = numpyro.sample("lam", dist.Exponential(1.0))
        with numpyro.plate("rows", x.shape[0]):
            numpyro.sample("x", dist.Poisson(lam), obs=x)

    x = jnp.ones(40)
    with pytest.raises(ValueError, match=r"minibatch_size=8, the data plate 'rows' hands the "
                       r"model 8 of its 40 indices.*obs=y\[idx\]"):
        advi.from_numpyro(whole, (x,), minibatch_size=8)
    assert advi.from_numpyro(whole, (x,)).dim == 1


@pytest.mark.parametrize("size, match", [
    (11, "minibatch_size=11 is larger .* N=10 in plate 'rows'"),
    (0, "minibatch_size=0 must be >= 1"),
])
def test_minibatch_size_outside_1_to_n_names_both_numbers(size, match):
    with pytest.raises(ValueError, match=match):
        advi.from_numpyro(_two_plates, (jnp.ones(10),), minibatch_size=size,
                          minibatch_plate="rows")


@pytest.mark.parametrize("minibatch_size", [None, 5])
def test_non_finite_data_is_named_before_compilation(minibatch_size):
    x = jnp.ones(10).at[3].set(jnp.nan).at[7].set(jnp.inf)
    with pytest.raises(ValueError, match=r"model argument number 1 .*holds 2 non-finite"):
        advi.fit(_poisson_rows, x, rng_key=KEY, minibatch_size=minibatch_size)
    with pytest.raises(ValueError, match=r"model argument 'x' .*holds 2 non-finite"):
        advi.fit(_poisson_rows, rng_key=KEY, model_kwargs={"x": x}, minibatch_size=minibatch_size)


def test_a_discrete_latent_site_is_named():
    def model():
        numpyro.sample("k", dist.Poisson(3.0))

    with pytest.raises(ValueError, match="latent site 'k' is discrete") as raised:
        advi.from_numpyro(model)
    assert "is None" not in str(raised.value)


def _counts_for_prediction(x, y=None):
    rate = numpyro.sample("rate", dist.Exponential(1.0))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("obs", dist.Poisson(rate * x), obs=y)


def test_observations_left_at_none_are_named_as_the_likely_cause():
    # y=None is NumPyro's idiom for prediction; forgetting y makes "obs" a discrete latent
    with pytest.raises(ValueError, match="'obs' is discrete .* argument 'y' is None"):
        advi.fit(_counts_for_prediction, np.ones(4), rng_key=KEY)
    with pytest.raises(ValueError, match="argument 'y' is None"):
        advi.fit(_counts_for_prediction, np.ones(4), rng_key=KEY, model_kwargs={"y": None})


def _dirichlet_multinomial(counts):
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.ones(counts.shape[0])))
    numpyro.sample("y", dist.Multinomial(int(counts.sum()), theta), obs=counts)


def test_a_model_that_needs_its_counts_concretely_fits_its_dirichlet_posterior():
    # int(counts.sum()) cannot be traced: the arrays become constants, as in NumPyro's MCMC
    counts = np.array([0.0, 1.0, 5.0, 30.0, 60.0, 4.0])
    target = advi.from_numpyro(_dirichlet_multinomial, (counts,))
    assert target.data == () and target.cache_key is None
    result = advi.fit(_dirichlet_multinomial, counts, rng_key=KEY, preset="robust")
    alpha = counts + 1.0  # the posterior is Dirichlet(1 + counts)
    mean = alpha / alpha.sum()
    sd = np.sqrt(mean * (1 - mean) / (alpha.sum() + 1))
    z = (np.asarray(result.mean()["theta"]) - mean) / sd
    assert np.max(np.abs(z)) < 0.5, z
    assert not result.warnings


def _centred_on_the_data_mean(y):
    m = numpyro.sample("m", dist.Normal(np.mean(y), 1.0))  # NumPy on the data
    numpyro.sample("y", dist.Normal(m, 1.0), obs=y)


def test_constant_data_are_not_reused_for_another_dataset_of_the_same_shape():
    # posterior N(mean(y), 1 / (n + 1)): each fit compiles its own data in
    for shift in (0.0, 5.0):
        y = shift + np.linspace(-1.0, 1.0, 24)
        result = advi.fit(_centred_on_the_data_mean, y, rng_key=KEY, preset="robust")
        assert abs(float(result.mean()["m"]) - shift) < 0.05, shift
        assert abs(float(np.std(result.sample(KEY, 2000)["m"])) - 0.2) < 0.03


def _branches_on_a_latent(y):
    m = numpyro.sample("m", dist.Normal(0.0, 1.0))
    scale = 1.0 if m > 0 else 2.0  # a Python if on a latent value: no trace can do it
    numpyro.sample("y", dist.Normal(m, scale), obs=y)


def test_a_latent_value_needed_concretely_still_raises():
    with pytest.raises(jax.errors.ConcretizationTypeError):
        advi.from_numpyro(_branches_on_a_latent, (np.zeros(3),))


def _scaled_by_its_rows(x):
    scale = float(np.std(x))  # a concrete value of the rows, which a pool would replace
    lam = numpyro.sample("lam", dist.Normal(0.0, scale))
    with numpyro.plate("rows", x.shape[0]) as idx:
        numpyro.sample("x", dist.Normal(lam, 1.0), obs=jnp.take(x, idx, axis=0))


def test_a_streamed_model_that_needs_concrete_rows_is_refused():
    rows = np.linspace(-1.0, 1.0, 200)
    with pytest.raises(ValueError, match="concrete values"):
        advi.fit(_scaled_by_its_rows, rng_key=KEY, minibatch_size=10,
                 model_kwargs={"x": advi.stream(rows)})


def _typed(x, counts, y):
    numpyro.sample("y", dist.Normal(numpyro.sample("mu", dist.Normal(0.0, 1.0)), 1.0),
                   obs=y)


def test_a_float64_target_widens_float32_data_and_keeps_integers():
    """In a float64 fit (``precision.scope("float64")``, as ``dtype="float64"`` runs it) the
    model's float32 arrays, NumPy or JAX, arrive as float64 with the same values; integer
    arrays keep their dtype; in a float32 fit float64 NumPy data arrive as float32."""
    x32 = np.linspace(0.0, 1.0, 7, dtype=np.float32)
    counts = np.arange(7, dtype=np.int32)
    with advi.precision.scope("float64"):
        target = advi.from_numpyro(_typed, (x32, counts, jnp.asarray(x32)))
    assert [a.dtype for a in target.data] == [np.float64, np.int32, np.float64]
    np.testing.assert_array_equal(np.asarray(target.data[0]), x32.astype(np.float64))
    with advi.precision.scope("float32"):
        target = advi.from_numpyro(_typed, (x32.astype(np.float64), counts, x32))
    assert [a.dtype for a in target.data] == [np.float32, np.int32, np.float32]

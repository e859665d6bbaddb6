"""advi.Options: one typed, frozen configuration, checked once, with presets as instances."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import advi

KEY = jax.random.PRNGKey(0)


def test_presets_are_options_and_options_lists_their_fields():
    assert all(isinstance(p, advi.Options) for p in advi.PRESETS.values())
    assert advi.OPTIONS == tuple(f.name for f in dataclasses.fields(advi.Options))
    assert advi.PRESETS["stan"] == advi.Options()  # the defaults are Stan's
    robust = advi.PRESETS["robust"]
    assert (robust.start, robust.stop, robust.eta) == ("laplace", "rhat", 0.1)


@pytest.mark.parametrize("name, value, match", [
    ("grad_samples", 0, r"grad_samples=0 must be an integer >= 1"),
    ("grad_samples", True, r"grad_samples=True must be an integer"),
    ("elbo_samples", 2.5, r"elbo_samples=2.5 must be an integer >= 1"),
    ("khat_samples", -1, r"khat_samples=-1 must be an integer >= 0"),
    ("checkpoint_every", 0, r"checkpoint_every=0 must be an integer >= 1 or None"),
    ("minibatch_size", 0, r"minibatch_size=0 must be an integer >= 1 or None"),
    ("eta", float("inf"), r"eta=inf must be a positive finite number, or None"),
    ("tol_rel_obj", -0.1, r"tol_rel_obj=-0.1 must be a positive finite number"),
    ("family", "diag", r"family='diag' is not valid; use one of \('meanfield', 'fullrank'\)"),
    ("init", "ones", r"init='ones' is not valid; use one of \('random', 'zero', 'stan'\)"),
    ("start", "mode", r"start='mode' is not valid; use one of \('init', 'laplace'\)"),
    ("stop", "elbo", r"stop='elbo' is not valid; use one of \('relative_elbo', 'rhat'\)"),
    ("optimizer", "lbfgs", r"optimizer='lbfgs' is unknown; use one of"),
    ("precondition", "yes", r"precondition='yes' must be True or False"),
    ("minibatch_plate", 3, r"minibatch_plate=3 must be a plate's name"),
])
def test_a_bad_value_is_named_with_the_valid_ones(name, value, match):
    with pytest.raises(ValueError, match=match):
        advi.Options(**{name: value})
    with pytest.raises(ValueError, match=match):
        advi.PRESETS["robust"].replace(**{name: value})


def test_unknown_options_are_named():
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['K', 'etaa'\].*model_kwargs"):
        advi.PRESETS["stan"].replace(etaa=0.1, K=3)


def test_a_bad_option_fails_before_the_model_is_traced():
    def model():
        raise AssertionError("the model was traced")

    with pytest.raises(ValueError, match="eval_elbo=0"):
        advi.fit(model, rng_key=KEY, eval_elbo=0)


def test_an_options_value_is_a_preset_and_overrides_still_apply():
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z - 1.0) ** 2), 2)
    mine = advi.PRESETS["robust"].replace(max_iter=200, khat_samples=0)
    by_value = advi.fit(target, rng_key=KEY, preset=mine)
    by_name = advi.fit(target, rng_key=KEY, preset="robust", max_iter=200, khat_samples=0)
    np.testing.assert_array_equal(by_value.params.mu, by_name.params.mu)
    np.testing.assert_allclose(by_value.params.mu, 1.0, atol=0.2)
    overridden = advi.fit(target, rng_key=KEY, preset=mine, max_iter=100)
    assert overridden.num_iterations == 100 and by_value.num_iterations <= 200
    with pytest.raises(ValueError, match="preset='fast' is unknown.*advi.Options"):
        advi.fit(target, rng_key=KEY, preset="fast")


def test_a_presets_start_and_dtype_give_way_where_they_cannot_apply():
    """Robust's dtype="auto" judges float32 at the Laplace start's mode: with another start
    it becomes None; streamed rows take start="init". An option given explicitly never
    gives way: dtype="auto" with start="init" is still refused, by name."""
    from advi.presets import resolve

    assert resolve("robust", {}).start == "laplace" and resolve("robust", {}).dtype == "auto"
    assert resolve("robust", {"start": "init"}).dtype is None
    streamed = resolve("robust", {}, streamed=True)
    assert streamed.start == "init" and streamed.dtype is None
    assert resolve("robust", {"dtype": "float64"}, streamed=True).dtype == "float64"
    assert resolve("stan", {}, streamed=True) == resolve("stan", {})  # start="init" already
    with pytest.raises(ValueError, match="needs start='laplace'"):
        resolve("robust", {"start": "init", "dtype": "auto"})


def test_the_robust_preset_fits_streamed_rows_with_no_further_option():
    """preset="robust" with advi.stream(...) took two errors to run (start, then dtype);
    now its start and dtype give way, and start="laplace" given explicitly is refused
    by name."""
    import numpyro
    import numpyro.distributions as dist

    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("data", y.shape[0]) as idx:
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y[idx])

    y = np.random.default_rng(0).normal(1.5, 1.0, 2000).astype(np.float32)
    result = advi.fit(model, advi.stream(y), rng_key=jax.random.PRNGKey(0), minibatch_size=50,
                      preset="robust", progress_bar=False)
    assert result.start.startswith("init")
    assert abs(float(result.params.mu[0]) - y.mean()) < 5 / np.sqrt(y.size)
    with pytest.raises(ValueError, match="start='laplace' is not supported with streamed"):
        advi.fit(model, advi.stream(y), rng_key=jax.random.PRNGKey(0), minibatch_size=50,
                 preset="robust", start="laplace", progress_bar=False)

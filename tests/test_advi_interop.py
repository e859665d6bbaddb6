"""A fit in the ecosystem's terms: ArviZ data, a NumPyro guide whose
draws are q's, and save/load round trips.

The model's sites are in an order that is not alphabetical (sigma, then beta), as the
library lays zeta out by name and NumPyro's guides by their own order: a mapping by position
gave a scale's median 10.1 instead of 2.88."""

import dataclasses
import json

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
import pytest
from numpyro.distributions import constraints
from numpyro.infer import SVI, Predictive, Trace_ELBO

import advi
from advi.io import save

ARVIZ_1 = int(az.__version__.split(".")[0]) >= 1
X = np.linspace(1.0, 3.0, 20).astype(np.float32)  # not centred: intercept and slope correlate
Y = (1.0 + 2.0 * X + 0.5 * np.random.default_rng(0).standard_normal(20)).astype(np.float32)


def model(x, y=None):
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    numpyro.deterministic("mean_at_2", beta[0] + 2.0 * beta[1])
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(beta[0] + beta[1] * x, sigma), obs=y)


@pytest.fixture(scope="module")
def meanfield():
    return advi.fit(model, X, Y, rng_key=jax.random.PRNGKey(0), preset="robust")


@pytest.fixture(scope="module", params=["meanfield", "fullrank"])
def result(request):
    if request.param == "meanfield":
        return request.getfixturevalue("meanfield")
    return advi.fit(model, X, Y, rng_key=jax.random.PRNGKey(0), preset="robust",
                    family="fullrank")


def _posterior(data):
    return data["posterior"] if ARVIZ_1 else data.posterior


def test_the_model_order_is_not_zetas():
    source = advi.from_numpyro(model, (X, Y)).numpyro
    assert list(source.shapes) == ["sigma", "beta"]
    layout = source.unravel(jnp.arange(3.0))  # sigma comes first in the model, last in zeta
    assert float(layout["sigma"]) == 2.0 and list(layout["beta"]) == [0.0, 1.0]


def test_inference_data_holds_the_draws_and_deterministic_sites(meanfield):
    key = jax.random.PRNGKey(3)
    data = meanfield.to_inference_data(250, rng_key=key, num_chains=4)
    posterior = _posterior(data)
    draws = meanfield.sample(key, 1000)
    assert posterior["sigma"].dims == ("chain", "draw")
    assert posterior["beta"].shape == (4, 250, 2)
    np.testing.assert_array_equal(posterior["sigma"].values.reshape(-1), draws["sigma"])
    np.testing.assert_array_equal(posterior["beta"].values.reshape(-1, 2), draws["beta"])
    beta = posterior["beta"].values
    np.testing.assert_allclose(posterior["mean_at_2"].values, beta[..., 0] + 2 * beta[..., 1],
                               rtol=1e-6)


def test_arviz_summary_of_the_conversion(meanfield):
    data = meanfield.to_inference_data(500, rng_key=jax.random.PRNGKey(4), num_chains=4)
    summary = az.summary(data, round_to="none")
    assert {"sigma", "beta[0]", "beta[1]", "mean_at_2"} <= set(summary.index)
    assert np.isfinite(summary["mean"]).all()
    fitted = meanfield.mean()  # T^-1(mu): the mean for beta, the median for sigma
    for row, value in (("beta[0]", fitted["beta"][0]), ("beta[1]", fitted["beta"][1]),
                       ("sigma", fitted["sigma"])):
        assert abs(summary.loc[row, "mean"] - float(value)) < 0.15 * summary.loc[row, "sd"]
    assert (summary["r_hat"] < 1.05).all()  # independent draws split into chains


def test_inference_data_keeps_the_fits_diagnostics(meanfield):
    data = meanfield.to_inference_data(10, rng_key=jax.random.PRNGKey(0))
    attrs = _posterior(data).attrs
    assert attrs["family"] == "meanfield"
    assert attrs["convergence_reason"] == meanfield.convergence_reason
    assert attrs["num_iterations"] == meanfield.num_iterations
    assert attrs["pareto_khat"] == pytest.approx(meanfield.pareto_khat)
    assert attrs["wall_s"] == meanfield.wall_s
    history = data["elbo_history"]
    np.testing.assert_array_equal(history["elbo"].values, meanfield.elbo_history.elbo)
    np.testing.assert_array_equal(history["iteration"].values,
                                  meanfield.elbo_history.iteration)


def test_arviz_plots_the_conversion(meanfield):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = meanfield.to_inference_data(200, rng_key=jax.random.PRNGKey(0))
    if ARVIZ_1:
        az.plot_dist(data, var_names=["sigma", "beta"], backend="matplotlib")
    else:
        axes = az.plot_posterior(data, var_names=["sigma", "beta"])
        assert np.size(axes) == 3  # sigma, beta[0], beta[1]
    assert plt.get_fignums()
    plt.close("all")


@pytest.mark.parametrize(("name", "value"), [("num_samples", 0), ("num_chains", 1.5)])
def test_inference_data_refuses_bad_counts(meanfield, name, value):
    kwargs = {"num_samples": 10, "num_chains": 1, name: value}
    with pytest.raises(ValueError, match=f"{name}={value}"):
        meanfield.to_inference_data(rng_key=jax.random.PRNGKey(0), **kwargs)


def test_the_guide_draws_from_q(result):
    guide, params = result.numpyro_guide()
    fullrank = result.approximation.family.name == "fullrank"
    assert sorted(params) == (["auto_loc", "auto_scale_tril"] if fullrank
                              else ["auto_loc", "auto_scale"])
    # the guide's median is the constrained image of q's mean, site by site
    median, mean = guide.median(params), result.mean()
    for name in ("sigma", "beta"):
        np.testing.assert_allclose(median[name], mean[name], rtol=1e-5)
    drawn = Predictive(model, guide=guide, params=params, num_samples=4000,
                       return_sites=["sigma", "beta", "y"])(jax.random.PRNGKey(1), X)
    ours = result.sample(jax.random.PRNGKey(2), 4000)
    assert drawn["y"].shape == (4000, 20)  # the posterior predictive
    for name in ("sigma", "beta"):
        sd = np.std(ours[name], 0)
        np.testing.assert_array_less(np.abs(np.mean(drawn[name], 0) - np.mean(ours[name], 0)),
                                     0.1 * sd)  # 4.5 Monte Carlo standard errors
        np.testing.assert_allclose(np.std(drawn[name], 0), sd, rtol=0.08)
    correlation = np.corrcoef(drawn["beta"].T)[0, 1]
    assert correlation == pytest.approx(np.corrcoef(ours["beta"].T)[0, 1], abs=0.04)
    assert abs(correlation) > 0.8 if fullrank else abs(correlation) < 0.1


def test_numpyros_elbo_of_the_guide_is_the_fits(result):
    guide, params = result.numpyro_guide()
    svi = SVI(model, guide, optax.adam(1e-3), Trace_ELBO(num_particles=2000))
    state = svi.init(jax.random.PRNGKey(5), X, Y, init_params=params)
    for name, value in svi.get_params(state).items():  # SVI starts from q itself
        np.testing.assert_allclose(value, params[name], rtol=1e-6, atol=1e-7)
    elbo = -float(svi.evaluate(state, X, Y))
    log_weights = result.khat_log_weights  # log p - log q of 1,000 draws from q
    assert elbo == pytest.approx(np.mean(log_weights), abs=0.2)  # Monte Carlo: se < 0.05


def _many_sites(y):
    numpyro.sample("w", dist.Dirichlet(jnp.ones(3)))  # simplex: 2 zeta coordinates
    tau = numpyro.sample("tau", dist.HalfCauchy(1.0))
    with numpyro.plate("groups", 4):
        z = numpyro.sample("z", dist.Normal(0.0, tau))
    alpha = numpyro.sample("alpha", dist.Uniform(-1.0, 2.0))
    numpyro.sample("y", dist.Normal(alpha + z, 1.0), obs=y)


@pytest.mark.parametrize("family", ["meanfield", "fullrank"])
def test_the_guide_maps_every_site_by_name(meanfield, family):
    target = advi.from_numpyro(_many_sites, (jnp.arange(4.0),))
    mu = jax.random.uniform(jax.random.PRNGKey(0), (target.dim,), minval=-1.5, maxval=1.5)
    q = (advi.MeanFieldParams(mu, jnp.zeros(8)) if family == "meanfield"
         else advi.FullRankParams(mu, jnp.eye(8)))
    fake = dataclasses.replace(meanfield, approximation=advi.Approximation(
        advi.get_family(family), q, target))
    guide, params = fake.numpyro_guide()
    median, mean = guide.median(params), fake.mean()
    for name in ("w", "tau", "z", "alpha"):
        np.testing.assert_allclose(median[name], mean[name], rtol=1e-5)


def test_the_guide_of_a_one_parameter_model(meanfield):
    # one latent coordinate: the guide's probe is the single value -1, found at index 0
    def poisson(y=None):
        lam = numpyro.sample("lam", dist.Exponential(1.0))
        with numpyro.plate("data", 8):
            numpyro.sample("y", dist.Poisson(lam), obs=y)

    y = jnp.array([3.0, 1, 4, 1, 5, 9, 2, 6])
    result = advi.fit(poisson, y, rng_key=jax.random.PRNGKey(0), preset="robust")
    guide, params = result.numpyro_guide()
    np.testing.assert_allclose(guide.median(params)["lam"], result.mean()["lam"], rtol=1e-5)
    drawn = Predictive(poisson, guide=guide, params=params, num_samples=4000,
                       return_sites=["lam"])(jax.random.PRNGKey(1))["lam"]
    ours = result.sample(jax.random.PRNGKey(2), 4000)["lam"]
    assert abs(float(np.mean(drawn) - np.mean(ours))) < 0.1 * float(np.std(ours))
    # the exact posterior is Gamma(1 + 31, 1 + 8): mean 32 / 9
    assert float(np.mean(ours)) == pytest.approx(32 / 9, rel=0.05)


def test_the_guide_refuses_a_site_whose_transform_is_not_numpyros(meanfield):
    def ordered(x, y=None):
        cuts = numpyro.sample("cuts", dist.ImproperUniform(constraints.positive_ordered_vector,
                                                           (), (2,)))
        numpyro.sample("y", dist.Normal(cuts.sum(), 1.0), obs=y)

    target = advi.from_numpyro(ordered, (X, Y))
    q = advi.MeanFieldParams(jnp.zeros(2), jnp.zeros(2))
    other = dataclasses.replace(meanfield, approximation=advi.Approximation(advi.MEANFIELD, q,
                                                                             target))
    with pytest.raises(ValueError, match="'cuts'"):
        other.numpyro_guide()


def test_a_float64_fit_stays_float64(tmp_path):
    wide = advi.fit(model, X, Y, rng_key=jax.random.PRNGKey(0), preset="robust",
                    dtype="float64")
    assert wide.params.mu.dtype == np.float64
    _, params = wide.numpyro_guide()
    assert params["auto_loc"].dtype == np.float64
    data = wide.to_inference_data(10, rng_key=jax.random.PRNGKey(0))
    assert _posterior(data)["beta"].dtype == np.float64
    assert _posterior(data)["mean_at_2"].dtype == np.float64  # Predictive ran in float64
    wide.save(tmp_path / "fit.npz")
    loaded = advi.load(tmp_path / "fit.npz", model, X, Y)
    assert loaded.params.mu.dtype == np.float64
    np.testing.assert_array_equal(loaded.params.omega, wide.params.omega)
    key = jax.random.PRNGKey(1)
    np.testing.assert_array_equal(loaded.sample(key, 20)["beta"], wide.sample(key, 20)["beta"])
    assert loaded.pareto_khat == wide.pareto_khat


def test_save_load_round_trip(result, tmp_path):
    path = tmp_path / "fit.npz"
    path.write_text("an older file")  # replaced whole
    result.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["fit.npz"]  # no temporary file left
    with np.load(path, allow_pickle=False) as archive:  # no pickled object in it
        header = json.loads(str(archive["header"]))
    assert header["sites"] == [["sigma", []], ["beta", [2]]]
    loaded = advi.load(path, model, X, Y)
    for ours, theirs in zip(result.params, loaded.params, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    key = jax.random.PRNGKey(7)
    drawn, again = result.sample(key, 50), loaded.sample(key, 50)
    for name in drawn:
        np.testing.assert_array_equal(drawn[name], again[name])
        np.testing.assert_array_equal(result.mean()[name], loaded.mean()[name])
    for ours, theirs in zip(result.elbo_history, loaded.elbo_history, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert loaded.pareto_khat == result.pareto_khat
    for field in ("convergence_reason", "num_iterations", "eta", "converged", "wall_s",
                  "start", "restarts", "warnings", "redraws", "preset"):
        assert getattr(loaded, field) == getattr(result, field), field
    by_keyword = advi.load(path, model, X, y=Y)  # the model's keyword arguments
    np.testing.assert_array_equal(by_keyword.sample(key, 50)["beta"], drawn["beta"])


def test_a_result_prints_a_one_line_summary_and_computes_nothing(meanfield):
    drawn = []

    def weights():  # counts the draws of k-hat's log weights
        drawn.append(1)
        return meanfield.khat_log_weights

    fresh = dataclasses.replace(meanfield, khat_weights_fn=weights)
    text = repr(fresh)
    assert drawn == [] and "\n" not in text and len(text) < 200 and str(fresh) == text
    how = "converged" if meanfield.converged else "not converged"
    assert text == (
        f"ADVIResult(family='meanfield', K=3, preset='robust', "
        f"iterations={meanfield.num_iterations}, "
        f"stopped='{meanfield.convergence_reason}' ({how}), "
        f"elbo={float(meanfield.elbo_history.elbo[-1]):.6g}, "
        f"pareto_khat=not computed yet, warnings={len(meanfield.warnings)})")
    khat = fresh.pareto_khat
    assert drawn == [1] and f"pareto_khat={khat:.2f}, " in repr(fresh)
    assert "pareto_khat=none, " in repr(dataclasses.replace(meanfield, khat_weights_fn=None))


def test_a_fit_from_options_records_no_preset_name():
    fitted = advi.fit(model, X, Y, rng_key=jax.random.PRNGKey(0),
                      preset=advi.PRESETS["robust"])
    assert fitted.preset is None and ", preset=None, " in repr(fitted)


def _changed(x, y=None):
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([3]).to_event(1))
    numpyro.sample("y", dist.Normal(beta[0] + beta[1] * x, sigma), obs=y)


def _renamed(x, y=None):
    scale = numpyro.sample("scale", dist.HalfNormal(5.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    numpyro.sample("y", dist.Normal(beta[0] + beta[1] * x, scale), obs=y)


@pytest.mark.parametrize(("other", "message"), [
    (_changed, r"'beta' has zeta shape \(3,\) in the model but \(2,\)"),
    (_renamed, r"'sigma' \(zeta shape \(\)\) of the fit .* is not in the model"),
])
def test_load_names_the_site_that_no_longer_matches(meanfield, tmp_path, other, message):
    save(meanfield, tmp_path / "fit.npz")
    with pytest.raises(ValueError, match=message):
        advi.load(tmp_path / "fit.npz", other, X, Y)


def test_load_refuses_a_file_that_is_not_a_fit(tmp_path):
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="not a fit saved by advi.save"):
        advi.load(tmp_path / "other.npz", model, X, Y)


def test_a_log_density_fit_converts_and_round_trips(tmp_path):
    target = advi.from_log_density(lambda z: -0.5 * jnp.sum((z - 1.0) ** 2), 2)
    fitted = advi.fit(target, rng_key=jax.random.PRNGKey(0), preset="robust")
    data = fitted.to_inference_data(100, rng_key=jax.random.PRNGKey(1))
    assert _posterior(data)["zeta"].shape == (1, 100, 2)
    with pytest.raises(ValueError, match="plain log density"):
        fitted.numpyro_guide()
    fitted.save(tmp_path / "fit.npz")
    loaded = advi.load(tmp_path / "fit.npz", target)
    key = jax.random.PRNGKey(2)
    np.testing.assert_array_equal(loaded.sample(key, 5)["zeta"], fitted.sample(key, 5)["zeta"])

"""posteriordb's posteriors in the validation suite (``benchmarks/suite_posteriordb.py``):
each port takes the stored data its source names, and the builder stores a posterior's data
and reference moments from a posteriordb checkout."""

import gzip
import inspect
import io
import json
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bench_scripts import load

posteriordb = load("suite_posteriordb")
build = load("suite_posteriordb_build")


def _zip(path, name, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, json.dumps(content))
    path.write_bytes(buffer.getvalue())


def _checkout(root, rng):
    """A posteriordb tree holding ARMA(1, 1)'s posterior: two chains of reference draws."""
    base = root / "posterior_database"
    (base / "posteriors").mkdir(parents=True)
    (base / "posteriors" / "arma-arma11.json").write_text(json.dumps(
        {"data_name": "arma", "reference_posterior_name": "arma-arma11"}))
    _zip(base / "data" / "data" / "arma.json.zip", "arma.json",
         {"T": 3, "y": [0.5, -1.0, 2.0]})
    chains = [{q: list(rng.normal(i, 1 + i, 50)) for i, q in
               enumerate(["mu", "phi", "theta", "sigma"])} for _ in range(2)]
    _zip(base / "reference_posteriors" / "draws" / "draws" / "arma-arma11.json.zip",
         "arma-arma11.json", chains)
    return chains


@pytest.mark.parametrize("name", sorted(posteriordb.MODELS))
def test_each_port_takes_the_data_its_source_keeps(name):
    model, _, _ = posteriordb.MODELS[name]
    _, keep = posteriordb.SOURCES[name]
    assert tuple(inspect.signature(model).parameters) == keep
    stored = json.loads(posteriordb.DATA.read_text())["posteriors"][name]
    assert tuple(posteriordb.data(name)) == keep
    assert len(stored["mean"]) == len(stored["sd"]) == len(stored["quantities"])


def test_the_fourth_order_integrator_follows_a_rotation_at_uneven_times():
    """dz/dt = (z_2, -z_1) from (1, 0) at t0 = 0.3 is (cos(t - 0.3), -sin(t - 0.3))."""
    times = np.array([0.5, 1.7, 1.75, 4.0, 9.0])
    with jax.enable_x64(True):
        states = posteriordb._rk4(lambda t, z: jnp.stack([z[1], -z[0]]),
                                  jnp.array([1.0, 0.0]), 0.3, times)
    expected = np.stack([np.cos(times - 0.3), -np.sin(times - 0.3)], -1)
    np.testing.assert_allclose(np.asarray(states), expected, atol=1e-6)  # Euler: 0.2


def test_the_pharmacokinetic_port_is_its_ode_and_likelihood_by_scipy():
    """The port's log density at the reference means (and at a small K_m) against SciPy's
    Radau solution and lognormal densities (half-Cauchy(1) priors: 2 / (pi (1 + x^2)))."""
    import scipy.integrate
    import scipy.stats
    from numpyro.infer.util import log_density

    stored = posteriordb.data("one_comp_mm_elim_abs")
    t0, dose, volume = stored["t0"], stored["D"], stored["V"]
    times, c_hat = np.asarray(stored["times"]), np.asarray(stored["C_hat"])
    mean = json.loads(posteriordb.DATA.read_text())["posteriors"]["one_comp_mm_elim_abs"]["mean"]
    for k_a, k_m, v_m, sigma in (mean, (0.7, 0.05, 0.6, 0.2)):
        conc = scipy.integrate.solve_ivp(
            lambda t, c: [np.exp(-k_a * t) * dose * k_a / volume  # noqa: B023
                          - v_m / volume * c[0] / (k_m + c[0])],  # noqa: B023
            (t0, times[-1]), [0.0], t_eval=times, method="Radau", rtol=1e-11, atol=1e-12).y[0]
        expected = (np.sum(np.log(2 / (np.pi * (1 + np.square([k_a, k_m, v_m, sigma])))))
                    + np.sum(scipy.stats.lognorm(sigma, scale=conc).logpdf(c_hat)))
        with jax.enable_x64(True):
            got, _ = log_density(posteriordb.one_comp_mm_elim_abs,
                                 (t0, dose, volume, times, c_hat), {},
                                 {"k_a": k_a, "K_m": k_m, "V_m": v_m, "sigma": sigma})
        assert abs(float(got) - expected) < 1e-3


def test_the_builder_keeps_long_data_in_a_reproducible_gzip_file(tmp_path, monkeypatch):
    monkeypatch.setattr(posteriordb, "INLINE_MAX_CHARS", 10)
    entry = {"posterior": "p", "data": {"y": list(range(20))}, "mean": [0.0]}
    stored = build.store(entry, "big", tmp_path)
    assert stored == {"posterior": "p", "mean": [0.0], "data_gz": "suite_posteriordb_big.json.gz"}
    first = (tmp_path / stored["data_gz"]).read_bytes()
    assert json.loads(gzip.decompress(first)) == entry["data"]
    build.store(entry, "big", tmp_path)
    assert (tmp_path / stored["data_gz"]).read_bytes() == first
    assert build.store({"data": {"y": [1]}}, "small", tmp_path) == {"data": {"y": [1]}}


def test_the_builder_stores_the_kept_data_and_the_draws_moments(tmp_path, monkeypatch):
    chains = _checkout(tmp_path / "posteriordb", np.random.default_rng(0))
    entry = build.entry(tmp_path / "posteriordb", "arma11")
    assert entry["data"] == {"y": [0.5, -1.0, 2.0]} and entry["data_file"] == "arma.json"
    assert entry["quantities"] == ["mu", "phi", "theta", "sigma"]
    draws = np.array([[x for c in chains for x in c[q]] for q in entry["quantities"]])
    np.testing.assert_allclose(entry["mean"], draws.mean(1), atol=5e-7)
    np.testing.assert_allclose(entry["sd"], draws.std(1), atol=5e-7)

    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps({"source": "s", "posteriors": {"kept": {"data": {}}}}))
    monkeypatch.setattr(posteriordb, "DATA", stored)
    build.main([str(tmp_path / "posteriordb"), "arma11"])
    written = json.loads(stored.read_text())["posteriors"]
    assert written == {"kept": {"data": {}}, "arma11": entry}

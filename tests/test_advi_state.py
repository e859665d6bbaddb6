"""No hidden state: importing advi changes no JAX setting and imports no workflow library,
presets cannot be changed in place, and the library's caches keep none of the user's data."""

import dataclasses
import gc
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import advi


def _child(code: str, child_env: dict) -> dict:
    """Run ``code`` (which prints one JSON line) in a fresh interpreter with ``child_env``."""
    out = subprocess.run([sys.executable, "-c", code], env=child_env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_changes_no_jax_setting(tmp_path, child_env):
    changed = _child(
        "import json, jax; before = dict(jax.config.values); import advi; "
        "after = dict(jax.config.values); "
        "print(json.dumps(sorted(k for k in before if before[k] != after[k])))", child_env)
    assert changed == []
    assert not (tmp_path / ".cache").exists()


def test_import_loads_no_workflow_or_plotting_library(child_env):
    heavy = ["hydra", "omegaconf", "snakemake", "matplotlib", "pandas", "arviz"]
    loaded = _child(f"import json, sys, advi; print(json.dumps([m for m in {heavy!r} "
                    "if m in sys.modules]))", child_env)
    assert loaded == []


def test_presets_cannot_be_changed_in_place():
    with pytest.raises(TypeError):
        advi.PRESETS["mine"] = advi.PRESETS["stan"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        advi.PRESETS["robust"].eta = 1.0
    assert advi.PRESETS["robust"].replace(eta=1.0).eta == 1.0
    assert advi.PRESETS["robust"].eta == 0.1


def _regression(x, y):
    w = numpyro.sample("w", dist.Normal(0, 1).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ w, 1.0), obs=y)


def _data_arrays(rows: int) -> list:
    return [a for a in jax.live_arrays() if a.shape[:1] == (rows,)]


def test_an_algorithm_object_keeps_no_data():
    x = jnp.ones((2011, 3))
    target = advi.from_numpyro(_regression, (x, x[:, 0]))
    alg = advi.algorithm(target, optimizer="adam")
    del target, x
    gc.collect()
    assert _data_arrays(2011) == []
    assert alg.init(jax.random.PRNGKey(0)).params.mu.shape == (3,)


@pytest.mark.filterwarnings("ignore:max_iter")
@pytest.mark.parametrize("preset", ["stan", "robust"])
def test_caches_keep_no_data_once_the_result_is_gone(preset):
    shape = (2003, 7)  # a shape no other array of the process has
    x = jnp.asarray(np.random.default_rng(0).normal(size=shape), jnp.float32)
    y = x @ jnp.ones(shape[1])
    result = advi.fit(_regression, x, y, rng_key=jax.random.PRNGKey(0), preset=preset,
                      eta=0.1, max_iter=100, eval_elbo=50, khat_samples=20)
    result.sample(jax.random.PRNGKey(1), 5)
    assert result.khat_log_weights.shape == (20,)
    assert len(_data_arrays(shape[0])) >= 2  # x and y, alive while the caller holds them
    del result, x, y
    gc.collect()
    assert _data_arrays(shape[0]) == []


def test_an_algorithm_takes_m_by_family_as_advi_fit_does():
    # grad_samples=None: 1 draw per gradient for mean-field, 32 for full-rank; on a
    # standard normal target the full-rank step's ELBO estimate is the mean of 32 draws,
    # so it differs from the 1-draw estimate of the same key
    target = advi.from_log_density(lambda z: -0.5 * z @ z, 3)
    key = jax.random.PRNGKey(0)
    elbos = {}
    for m in (None, 1, advi.presets.FULLRANK_GRAD_SAMPLES):
        alg = advi.algorithm(target, family="fullrank", grad_samples=m, precondition=True)
        elbos[m] = float(alg.step(alg.init(key), key, 0.1, target.data)[1].elbo)
    assert elbos[None] == elbos[advi.presets.FULLRANK_GRAD_SAMPLES] != elbos[1]
    with pytest.raises(ValueError, match="grad_samples=0"):
        advi.algorithm(target, grad_samples=0)

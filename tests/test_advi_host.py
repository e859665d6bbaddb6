"""advi.host: a fit's host linear algebra runs on one BLAS thread, and the caller's BLAS
threads are as they were after it (returned or raised)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import advi


def _blas_threads() -> set[int]:
    return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}


def _model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    with numpyro.plate("n", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def test_a_fit_runs_blas_on_one_thread_and_gives_the_callers_threads_back():
    import scipy.optimize  # noqa: F401  (SciPy's own OpenBLAS, loaded as the start loads it)

    y = jnp.asarray(np.random.default_rng(0).normal(1.0, 2.0, 50), jnp.float32)
    inside = []

    def hook(info):
        inside.append(_blas_threads())

    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() != {2}:
            pytest.skip("no BLAS library that threadpoolctl can limit is loaded")
        result = advi.fit(_model, y, rng_key=jax.random.PRNGKey(0), preset="robust",
                          max_iter=2000, checkpoint=hook, checkpoint_every=50,
                          progress_bar=False)
        assert _blas_threads() == {2}
        with pytest.raises(ValueError, match="grad_samples"):
            advi.fit(_model, y, rng_key=jax.random.PRNGKey(0), grad_samples=0)
        assert _blas_threads() == {2}
    assert inside and all(threads == {1} for threads in inside), inside
    assert abs(float(result.mean()["mu"]) - float(jnp.mean(y))) < 0.5

"""advi.stream: rows read from the host a pool at a time, scaled N/B, split over devices."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.scipy.stats import norm

import advi
from advi.feed import Feed, read_rows

KEY = jax.random.PRNGKey(0)


def mean_model(y):
    """y_n ~ N(mu, 1), mu ~ N(0, 10): the posterior mean is sum(y) / (N + 0.01)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("data", y.shape[0]) as idx:
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=jnp.asarray(y)[idx])


def _rows(num, seed=0):
    return np.random.default_rng(seed).normal(1.5, 1.0, num).astype(np.float32)


def test_a_pool_stands_for_all_n_rows():
    # the plate draws B of the pool's P rows and scales them by N/B, not P/B
    y = _rows(1000)
    pool = y[np.sort(np.random.default_rng(1).integers(0, 1000, 40))]
    target = advi.from_numpyro(mean_model, (pool,), minibatch_size=8, num_data=1000)
    assert target.num_data == 1000
    zeta = jnp.array([0.7])
    for salt in range(3):
        key = jax.random.fold_in(KEY, salt)
        picked = pool[np.asarray(jax.random.randint(key, (8,), 0, 40))]
        expected = norm.logpdf(0.7, 0.0, 10.0) + 1000 / 8 * np.sum(norm.logpdf(picked, 0.7))
        assert float(target.log_density(zeta, key)) == pytest.approx(float(expected), rel=1e-6)


def test_a_pool_of_every_row_is_the_in_memory_target():
    y = _rows(200)
    memory = advi.from_numpyro(mean_model, (y,), minibatch_size=10)
    pooled = advi.from_numpyro(mean_model, (y,), minibatch_size=10, num_data=200)
    zeta = jnp.array([0.3])
    for salt in range(3):
        key = jax.random.fold_in(KEY, salt)
        assert float(pooled.log_density(zeta, key)) == float(memory.log_density(zeta, key))


@pytest.mark.parametrize("block_rows", [1, 8])
def test_streamed_log_likelihood_is_unbiased(block_rows):
    # over pools (the host's draws) and minibatches (the device's), the mean of the
    # N/B-scaled minibatch log likelihood is the full-data one, within 4 standard errors
    y = np.sort(_rows(500))  # sorted: runs of neighbouring rows are alike
    feed = Feed({"y": y}, 40, [7], block_rows=block_rows)
    target = advi.from_numpyro(mean_model, (y[:40],), minibatch_size=8, num_data=500)
    prior = norm.logpdf(0.2, 0.0, 10.0)
    keys = jax.random.split(KEY, 25)
    value = jax.jit(jax.vmap(lambda k, data: target.log_density_fn(jnp.array([0.2]), k, data),
                             (0, None)))
    # one mean per pool: pools are independent, a pool's minibatches are not
    estimates = np.array([np.mean(np.asarray(value(keys, (feed.next()["y"],)))) - prior
                          for _ in range(160)])
    feed.close()
    full = float(np.sum(norm.logpdf(y, 0.2)))
    error = estimates.std() / np.sqrt(estimates.size)
    assert abs(estimates.mean() - full) < 4 * error
    assert error < 0.05 * abs(full)  # the check has teeth: a P/B scale is 12x off


def test_a_pool_of_blocks_is_runs_of_consecutive_rows():
    feed = Feed({"y": np.arange(100, dtype=np.float32)}, 40, [3], block_rows=8)
    pool = np.asarray(feed.next()["y"]).astype(int)
    feed.close()
    rows = set(pool.tolist())
    starts = [r for r in rows if (r - 1) % 100 not in rows]  # where a run of rows begins
    assert pool.size == 40 and 1 <= len(starts) <= 5  # 5 runs of 8, wrapping round at 100
    assert len(rows) >= 8


def test_streamed_fit_from_a_file_matches_the_posterior_and_repeats(tmp_path):
    y = _rows(4000)
    path = tmp_path / "y.npy"
    np.save(path, y)
    options = dict(rng_key=KEY, minibatch_size=50, eta=0.1, progress_bar=False)
    first = advi.fit(mean_model, advi.stream(path), **options)
    again = advi.fit(mean_model, advi.stream(np.load(path, mmap_mode="r")), **options)
    posterior_mean, posterior_sd = y.sum() / (4000 + 0.01), 1 / np.sqrt(4000)
    assert abs(float(first.params.mu[0]) - posterior_mean) < 5 * posterior_sd
    np.testing.assert_array_equal(first.elbo_history.elbo, again.elbo_history.elbo)


def test_a_float64_fit_streams_float32_rows_as_float64():
    """The target is built on the first pool widened to float64 (advi.target.device_array);
    every later pool, copied in the feed's worker thread, must be float64 too (the thread
    does not share the fit's jax.enable_x64): before, the second pool was float32 and the
    compiled chunk refused it (TypeError). Outside float64 the rows keep their dtype."""
    y = _rows(4000)
    with jax.enable_x64(True):
        feed = Feed({"y": y}, 40, [7])
        pools = [feed.next(), feed.next()]
        feed.close()
    assert all(pool["y"].dtype == jnp.float64 for pool in pools)
    assert np.all(np.isin(np.asarray(pools[0]["y"]), y.astype(np.float64)))  # y's, exactly
    feed = Feed({"y": y}, 40, [7])
    assert feed.next()["y"].dtype == jnp.float32
    feed.close()
    fit = advi.fit(mean_model, advi.stream(y, pool_rows=400), rng_key=KEY, minibatch_size=50,
                   eta=0.1, progress_bar=False, dtype="float64")
    posterior_mean, posterior_sd = y.astype(np.float64).sum() / (4000 + 0.01), 1 / np.sqrt(4000)
    assert fit.params.mu.dtype == np.float64
    assert abs(float(fit.params.mu[0]) - posterior_mean) < 5 * posterior_sd


def _rss_file_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    pytest.skip("needs Linux's /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_reading_a_memory_map_keeps_no_pages_resident(tmp_path):
    path = tmp_path / "rows.npy"
    np.save(path, np.ones((16_384, 512), np.float32))  # 32 MiB
    rows = np.arange(16_384)
    mapped = np.load(path, mmap_mode="r")
    before = _rss_file_kib()
    pool = read_rows(mapped, rows, "x")
    streamed = _rss_file_kib() - before
    plain = np.take(mapped, rows, axis=0)  # the control: pages stay mapped
    assert np.array_equal(pool, plain)
    assert streamed < 4 * 1024 < _rss_file_kib() - before - 24 * 1024


def test_bad_streams_are_named(tmp_path):
    with pytest.raises(ValueError, match="missing.npy"):
        advi.stream(tmp_path / "missing.npy")
    with pytest.raises(ValueError, match="numeric rows"):
        advi.stream(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="pool_rows=0"):
        advi.stream(np.ones(3), pool_rows=0)
    with pytest.raises(ValueError, match="block_rows=0"):
        advi.stream(np.ones(3), block_rows=0)
    with pytest.raises(ValueError, match=r"devices=\[\]"):
        advi.stream(np.ones(3), devices=[])
    y = advi.stream(_rows(100))
    with pytest.raises(ValueError, match="need minibatch_size"):
        advi.fit(mean_model, y, rng_key=KEY)
    with pytest.raises(ValueError, match="start='laplace'"):
        advi.fit(mean_model, y, rng_key=KEY, minibatch_size=5, start="laplace")
    with pytest.raises(ValueError, match="pool_rows=3 is smaller than minibatch_size=5"):
        advi.fit(mean_model, advi.stream(_rows(100), pool_rows=3), rng_key=KEY,
                 minibatch_size=5)


def test_a_non_finite_row_is_named():
    y = _rows(20)
    y[7] = np.nan
    with pytest.raises(ValueError, match="'y' holds NaN or inf in row 7"):
        advi.fit(mean_model, rng_key=KEY, minibatch_size=5, eta=0.1, max_iter=100,
                 model_kwargs={"y": advi.stream(y, pool_rows=2000)})


SHARDED = textwrap.dedent("""
    import json, warnings
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    import jax.numpy as jnp, numpy as np, numpyro, numpyro.distributions as dist
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    import advi

    def mean_model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("data", y.shape[0]) as idx:
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=jnp.asarray(y)[idx])

    y = np.random.default_rng(0).normal(1.5, 1.0, 2000).astype(np.float32)
    found = {}
    for name, devices in (("one", None), ("four", jax.devices())):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = advi.fit(mean_model, advi.stream(y, devices=devices), eta=0.1,
                              rng_key=jax.random.PRNGKey(0), minibatch_size=12,
                              max_iter=300, progress_bar=False)
        found[name] = result.elbo_history.elbo.tolist()
    split = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), PartitionSpec("data"))
    target = advi.from_numpyro(mean_model, (y[:200],), minibatch_size=12, num_data=2000,
                               minibatch_sharding=split)
    text = jax.jit(jax.grad(target.log_density_fn)).lower(
        jax.numpy.zeros(1), jax.random.PRNGKey(0), target.data).compile().as_text()
    found["all_reduce"] = "all-reduce" in text
    found["gathers_3_rows"] = any("gather(" in line and "f32[3," in line
                                  for line in text.splitlines())
    print(json.dumps(found))
""")


def test_sharded_minibatches_give_the_one_device_trace(child_env):
    # four host CPU devices (jax_num_cpu_devices) in a fresh interpreter: the option must
    # be set before JAX starts its backends
    root = Path(__file__).parents[1]
    env = dict(child_env, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", SHARDED], env=env, cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["all_reduce"] and found["gathers_3_rows"]  # 12 rows split 4 ways
    np.testing.assert_allclose(found["four"], found["one"], rtol=1e-5)
    assert len(found["one"]) == 3

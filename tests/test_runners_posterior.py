"""posterior_mean.npz: the running mean of constrained draws that every run leaves."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_runners_protocol import Y_TRAIN, log_likelihood, model

from advi_repro.planning.files import read_posterior_mean
from advi_repro.planning.methods import AdviConfig, NutsConfig
from advi_repro.runners.advi_runner import run_advi
from advi_repro.runners.mcmc_runner import run_mcmc
from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.trace import TraceWriter


def test_the_mean_is_over_every_draw_since_the_last_reset(tmp_path):
    mean = PosteriorMean(tmp_path / "m.npz")
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(3, 2, 4)), rng.normal(size=(5, 2, 4))
    mean.update({"beta": first, "tau": first[:, 0, 0]})
    mean.update({"beta": second, "tau": second[:, 0, 0]})
    mean.write(iteration=7, phase="sampling")
    saved = read_posterior_mean(tmp_path / "m.npz")
    both = np.concatenate([first, second])
    np.testing.assert_allclose(saved["beta"], both.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(saved["tau"], both[:, 0, 0].mean(), rtol=1e-6)
    assert saved["num_draws"] == 8 and saved["iteration"] == 7 and saved["phase"] == "sampling"
    mean.reset()
    with pytest.raises(ValueError, match="no draws"):
        mean.write()


def test_sites_with_different_numbers_of_draws_are_refused(tmp_path):
    with pytest.raises(ValueError, match="different numbers of draws"):
        PosteriorMean(tmp_path / "m.npz").update({"a": np.zeros((2, 3)), "b": np.zeros(3)})


def _run(runner, method, tmp_path):
    mean = PosteriorMean(tmp_path / "posterior_mean.npz")
    trace = TraceWriter(tmp_path / "trace.csv", identity={"seed": 0})
    runner(model, {"y": jnp.asarray(Y_TRAIN)}, method, rng_key=jax.random.PRNGKey(0),
           budget_s=1e6, log_likelihood=log_likelihood, trace=trace, posterior_mean=mean)
    return read_posterior_mean(mean.path), trace


def _posterior_mean_and_sd():
    """mu ~ N(0, 10^2), y_n ~ N(mu, 1): the posterior is N(m, v)."""
    v = 1.0 / (len(Y_TRAIN) + 0.01)
    return v * Y_TRAIN.sum(), np.sqrt(v)


def test_advi_writes_the_mean_of_the_last_checkpoints_draws_from_q(tmp_path):
    saved, trace = _run(run_advi, AdviConfig(max_iter=600, checkpoint_every=100,
                                             eval_draws=400), tmp_path)
    m, sd = _posterior_mean_and_sd()
    assert saved["num_draws"] == 400 and saved["iteration"] == trace.last["iteration"]
    assert saved["mu"] == pytest.approx(m, abs=5 * sd / np.sqrt(400) + 0.05)


def test_mcmc_writes_the_mean_of_the_post_warmup_draws(tmp_path):
    saved, trace = _run(run_mcmc, NutsConfig(num_warmup=40, num_samples=100,
                                             checkpoint_every=20), tmp_path)
    m, sd = _posterior_mean_and_sd()
    assert saved["num_draws"] == 100 and str(saved["phase"]) == "sampling"
    assert saved["mu"] == pytest.approx(m, abs=5 * sd / np.sqrt(100) * 3)

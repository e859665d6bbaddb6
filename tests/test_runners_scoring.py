"""The held-out scorer: heldout_lpd = mean_n log((1/S) sum_s p(y_n | theta_s))."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from advi_repro.runners.scoring import RunningLogMeanExp, heldout_lpd, log_sum_exp, score_draws


def _log_lik(seed: int, num_draws: int = 57, num_heldout: int = 13) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Far from 0 so that exp underflows in float64: only a stable logsumexp survives.
    return -1000.0 + 5.0 * rng.normal(size=(num_draws, num_heldout))


def test_batch_score_matches_the_definition_on_moderate_values():
    log_lik = np.random.default_rng(0).normal(size=(20, 7))
    expected = np.mean(np.log(np.mean(np.exp(log_lik), axis=0)))
    assert heldout_lpd(log_lik) == pytest.approx(expected, rel=1e-12)


def test_batch_score_is_stable_far_from_zero():
    log_lik = _log_lik(1)
    assert heldout_lpd(log_lik) == pytest.approx(heldout_lpd(log_lik + 1000.0) - 1000.0, abs=1e-9)


@pytest.mark.parametrize("splits", [[57], [1, 56], [10, 20, 27], [5] * 11 + [2]])
def test_running_log_mean_exp_equals_the_batch_score(splits):
    log_lik = _log_lik(2)
    running = RunningLogMeanExp()
    start = 0
    for size in splits:
        running.update(log_lik[start : start + size])
        start += size
    assert running.num_draws == 57
    assert running.lpd() == pytest.approx(heldout_lpd(log_lik), abs=1e-9)


@pytest.mark.parametrize("dtype, rtol, array", [(np.float64, 1e-13, np.asarray),
                                                (np.float32, 1e-6, np.asarray),
                                                (np.float32, 1e-6, jnp.asarray)])
def test_log_sum_exp_matches_scipy_with_infinities_and_underflow(dtype, rtol, array):
    """On the host (NumPy) and on the device (JAX: reduced there, only (N,) comes back)."""
    log_lik = np.concatenate([_log_lik(4, num_heldout=5), np.full((57, 2), -np.inf)], axis=1)
    log_lik[3, 0] = -np.inf  # one draw gives a held-out point probability 0
    log_lik = log_lik.astype(dtype)
    got = log_sum_exp(array(log_lik))
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (7,)
    expected = logsumexp(log_lik.astype(np.float64), axis=0)
    np.testing.assert_allclose(got[:5], expected[:5], rtol=rtol)
    assert np.all(got[5:] == -np.inf)
    assert log_sum_exp(array(np.array([[np.inf, 0.0]], dtype)))[0] == np.inf


def test_running_score_is_nan_before_any_draw():
    assert np.isnan(RunningLogMeanExp().lpd())


@pytest.mark.parametrize("array", [np.asarray, jnp.asarray])
def test_score_draws_batches_the_draws_without_changing_the_score(array):
    log_lik = _log_lik(3).astype(np.float32)
    draws = {"index": np.arange(log_lik.shape[0])}
    batches = []

    def log_likelihood(batch):
        batches.append(len(batch["index"]))
        return array(log_lik[batch["index"]])

    running = RunningLogMeanExp()
    score_draws(log_likelihood, draws, running, batch_size=10)
    assert batches == [10, 10, 10, 10, 10, 7]
    expected = heldout_lpd(log_lik.astype(np.float64))
    assert running.lpd() == pytest.approx(expected, abs=2e-4)  # float32 at -1000: 6e-5

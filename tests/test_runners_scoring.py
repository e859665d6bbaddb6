"""The held-out scorer: heldout_lpd = mean_n log((1/S) sum_s p(y_n | theta_s))."""

import numpy as np
import pytest

from runners.scoring import RunningLogMeanExp, heldout_lpd, score_draws


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


def test_running_score_is_nan_before_any_draw():
    assert np.isnan(RunningLogMeanExp().lpd())


def test_score_draws_batches_the_draws_without_changing_the_score():
    log_lik = _log_lik(3)
    draws = {"index": np.arange(log_lik.shape[0])}
    batches = []

    def log_likelihood(batch):
        batches.append(len(batch["index"]))
        return log_lik[batch["index"]]

    running = RunningLogMeanExp()
    score_draws(log_likelihood, draws, running, batch_size=10)
    assert batches == [10, 10, 10, 10, 10, 7]
    assert running.lpd() == pytest.approx(heldout_lpd(log_lik), abs=1e-9)

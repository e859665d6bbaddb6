"""The robust preset's stop: split R-hat from per-chunk moments, and the window it uses."""

import numpy as np
import pytest

from advi.stationarity import (
    MIN_WINDOW_CHUNKS,
    RHAT_SPLITS,
    averaging_chunks,
    elbo_gain,
    settled,
    split_rhat,
    stationary,
    travel,
    window_chunks,
)


def _moments(trace: np.ndarray, chunk_len: int) -> tuple[np.ndarray, np.ndarray]:
    chunks = trace.reshape(-1, chunk_len, trace.shape[1])
    return chunks.sum(1), (chunks**2).sum(1)


def test_split_rhat_from_chunk_moments_matches_the_textbook_formula():
    rng = np.random.default_rng(0)
    trace = rng.normal(size=(800, 3)) + np.linspace(0, 1, 800)[:, None] * [0, 1, 5]
    rhat = split_rhat(*_moments(trace, 50), chunk_len=50)
    pieces = trace.reshape(RHAT_SPLITS, -1, 3)  # BDA3 Section 11.4, four split chains
    n = pieces.shape[1]
    within = pieces.var(1, ddof=1).mean(0)
    between_over_n = pieces.mean(1).var(0, ddof=1)
    expected = np.sqrt(((n - 1) / n * within + between_over_n) / within)
    np.testing.assert_allclose(rhat, expected, rtol=1e-6)
    assert rhat[0] < 1.05 and rhat[2] > 1.5  # stationary vs. drifting
    assert stationary(rhat, quantile=0.3) == (True, pytest.approx(np.quantile(rhat, 0.3)))
    assert not stationary(rhat, quantile=0.95)[0]


def test_split_rhat_of_a_constant_or_non_finite_quantity():
    """A quantity that never moved has R-hat 1 (nothing to compare); one whose squares
    overflowed has none (NaN: never counted stationary); the others are unaffected."""
    trace = np.random.default_rng(1).normal(size=(400, 3))
    trace[:, 1] = 7.0
    sums, sumsqs = _moments(trace, 50)
    sumsqs[:, 2] = np.inf
    rhat = split_rhat(sums, sumsqs, chunk_len=50)
    assert 0.95 < rhat[0] < 1.05 and rhat[1] == 1.0 and np.isnan(rhat[2])
    assert not stationary(rhat, quantile=1.0)[0]


def test_split_rhat_refuses_a_window_it_cannot_split():
    with pytest.raises(ValueError, match="6 chunks cannot be split into 4"):
        split_rhat(np.zeros((6, 2)), np.zeros((6, 2)), chunk_len=10)


@pytest.mark.parametrize(("chunks", "burn_in", "window"), [
    (MIN_WINDOW_CHUNKS - 1, False, 0), (8, True, 4), (8, False, 8), (11, True, 4),
    (11, False, 8), (16, True, 8), (17, False, 16),
])
def test_the_window_is_the_second_half_after_a_burn_in_else_the_whole_trace(
        chunks, burn_in, window):
    assert window_chunks(chunks, burn_in) == window
    assert window % RHAT_SPLITS == 0


def test_elbo_gain_is_the_last_pieces_rise_over_the_first_relative_to_the_window():
    rng = np.random.default_rng(1)
    rising = -1000.0 + np.linspace(0.0, 8.0, 40) + rng.normal(scale=0.5, size=40)
    gain, se = elbo_gain(rising)
    pieces = rising.reshape(RHAT_SPLITS, -1)
    expected = (pieces[-1].mean() - pieces[0].mean()) / abs(rising.mean())
    assert gain == pytest.approx(expected)
    # the chunks' spread within the two pieces (drift and noise), over 10 chunks each
    spread = np.sqrt((pieces[0].var(ddof=1) + pieces[-1].var(ddof=1)) / 10)
    assert se == pytest.approx(spread / abs(rising.mean()))
    assert gain == pytest.approx(6.0 / 1000, rel=0.2)  # about 3/4 of the 8-nat climb
    assert settled(gain, se, tol=0.01) and not settled(gain, se, tol=0.001)


def test_a_flat_elbo_settles_and_a_noisy_short_window_does_not():
    rng = np.random.default_rng(2)
    flat = -500.0 + rng.normal(scale=0.1, size=40)
    assert settled(*elbo_gain(flat), tol=1e-3)
    # one chunk per piece: no spread to judge the noise by, so never settled
    assert not settled(*elbo_gain(flat[:4]), tol=1e-3)
    # the same climb buried in noise 100 times larger: its upper bound stays above tol
    noisy = -500.0 + np.linspace(0, 0.2, 40) + rng.normal(scale=10.0, size=40)
    assert not settled(*elbo_gain(noisy), tol=1e-3)


def test_elbo_gain_refuses_a_window_it_cannot_split_and_a_zero_elbo():
    with pytest.raises(ValueError, match="6 chunks cannot be split into 4"):
        elbo_gain(np.zeros(6))
    gain, se = elbo_gain(np.zeros(8))
    assert np.isnan(gain) and not settled(gain, se, tol=1.0)


def _chunk_sums(mu: np.ndarray, log_sd: np.ndarray, chunk_len: int = 50) -> np.ndarray:
    """(J, 2K) per-chunk sums of iterates whose chunk means are ``mu`` and ``log_sd``."""
    return np.concatenate([mu, log_sd], axis=1) * chunk_len


@pytest.mark.parametrize("seed", range(10))
def test_stationary_iterates_are_averaged_over_the_whole_window(seed):
    rng = np.random.default_rng(seed)
    mu = 3.0 + 0.1 * rng.normal(size=(16, 40))
    log_sd = np.log(0.5) + 0.05 * rng.normal(size=(16, 40))
    assert averaging_chunks(_chunk_sums(mu, log_sd), chunk_len=50) == 16


def test_drifting_iterates_are_averaged_over_the_last_chunks_where_they_are_now():
    """Means drifting 0.05 q-sds per chunk under noise of 0.1 q-sds: the average of the
    whole window (24 chunks) lags the iterates' end by about 0.6 sds, the chosen average
    by a fraction of that, with a smaller error all told."""
    rng = np.random.default_rng(0)
    num, dim, sd = 24, 200, 0.5
    line = 0.05 * sd * np.arange(num)[:, None]
    mu = 1.0 + line + 0.1 * sd * rng.normal(size=(num, dim))
    log_sd = np.log(sd) + 0.02 * rng.normal(size=(num, dim))
    chosen = averaging_chunks(_chunk_sums(mu, log_sd), chunk_len=50)
    assert 2 <= chosen <= num // 2
    end = 1.0 + line[-1]
    error_all = np.sqrt(np.mean((mu.mean(0) - end) ** 2)) / sd
    error_chosen = np.sqrt(np.mean((mu[-chosen:].mean(0) - end) ** 2)) / sd
    assert error_all == pytest.approx(0.05 * (num - 1) / 2, rel=0.1)
    assert error_chosen < error_all / 2


def test_a_few_chunks_or_non_finite_quantities_do_not_break_the_choice():
    rng = np.random.default_rng(3)
    mu, log_sd = rng.normal(size=(16, 5)), np.zeros((16, 5))
    assert averaging_chunks(_chunk_sums(mu[:2], log_sd[:2]), chunk_len=50) == 2
    mu[:, 0] = np.inf  # a quantity that overflowed: left out, the others decide
    log_sd[:, 1] = np.nan
    assert averaging_chunks(_chunk_sums(mu, log_sd), chunk_len=50) == 16


def test_travel_is_the_fitted_lines_run_over_the_window_in_q_sds():
    # two means over 10 chunks of 50: one drifts 0.5 per chunk (sd 0.25), one is noise (sd 1)
    rng = np.random.default_rng(4)
    chunks = np.arange(10)
    mu = np.stack([3.0 + 0.5 * chunks, rng.normal(scale=0.01, size=10)], axis=1)
    log_sd = np.log(np.tile([0.25, 1.0], (10, 1)))
    moved = travel(_chunk_sums(mu, log_sd), 50)
    assert moved[0] == pytest.approx(0.5 * 10 / 0.25)  # 20 sds over the window
    assert moved[1] < 0.1

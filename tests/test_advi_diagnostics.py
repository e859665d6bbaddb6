"""Pareto k-hat (advi.diagnostics): right on exact Pareto tails, the same on ArviZ 0.x and 1.x.

CI runs this file on Python 3.11 with ArviZ 0.x (``arviz.psislw``) and on Python 3.13 with
ArviZ 1.x (``arviz_stats``); the fixed values below were computed on both and agree to 1e-15.
"""

import numpy as np
import pytest

from advi import pareto_khat
from advi.diagnostics import tail_length

S = 10_000


def _pareto_log_weights(k, seed):
    """Log weights whose weights are Pareto(x_m = 1, alpha = 1/k) draws: their generalized
    Pareto shape is exactly k (log of a Pareto(alpha) draw is Exponential with rate alpha)."""
    return k * np.random.default_rng(seed).standard_exponential(S)


@pytest.mark.parametrize("k", [0.2, 0.5, 0.7, 1.0, 1.2])
def test_khat_recovers_the_shape_of_an_exact_pareto_tail(k):
    # S = 10,000 fits a tail of 300 draws: one estimate's sd is 0.07 (k = 0.2) to 0.12
    # (k = 1.2), so the mean of 20 has sd <= 0.03; the prior's pull towards 0.5 is < 0.04
    estimates = np.array([pareto_khat(_pareto_log_weights(k, seed)) for seed in range(20)])
    assert np.all(np.isfinite(estimates))
    assert abs(estimates.mean() - k) < 0.1, estimates
    assert np.all(np.abs(estimates - k) < 0.45), estimates


def test_khat_orders_heavier_tails_higher():
    draws = np.random.default_rng(0).standard_exponential(S)
    khats = [pareto_khat(k * draws) for k in (0.2, 0.5, 0.8, 1.1)]
    assert khats == sorted(khats)
    assert khats[0] < 0.5 < 0.7 < khats[-1]


@pytest.mark.parametrize(("num", "k", "expected"), [
    (30, 0.3, 0.3854659140026858),
    (30, 0.9, 0.549017115535137),
    (100, 0.3, 0.3772698681657965),
    (100, 0.9, 0.7205967434897379),
    (226, 0.3, 0.3461658787228599),
    (226, 0.9, 0.799218325587831),
    (1000, 0.3, 0.3234196135111028),
    (1000, 0.9, 0.84321863173557),
    (10_000, 0.3, 0.3080028986576031),
    (10_000, 0.9, 0.8809335199153142),
])
def test_khat_is_the_same_on_every_arviz(num, k, expected):
    # Pareto quantiles, no random numbers: the same weights on every NumPy. ArviZ 0.x rounds
    # its tail length up (95 draws of 1,000), 1.x down (94); pareto_khat makes both take 94.
    p = (np.arange(num) + 0.5) / num
    log_weights = -k * np.log1p(-p)
    assert pareto_khat(log_weights) == pytest.approx(expected, abs=1e-6)


def test_tail_length_is_arviz_1x_rule():
    assert [tail_length(s) for s in (29, 30, 100, 225, 226, 1000, 10_000)] == [
        5, 6, 20, 45, 45, 94, 300]


def test_khat_ignores_offset_and_order():
    log_weights = _pareto_log_weights(0.6, seed=3)[:1000]
    khat = pareto_khat(log_weights)
    assert pareto_khat(log_weights - 1234.5) == pytest.approx(khat, abs=1e-9)
    assert pareto_khat(np.random.default_rng(1).permutation(log_weights)) == khat
    assert pareto_khat(log_weights.astype(np.float32)) == pytest.approx(khat, abs=1e-3)


def test_khat_is_inf_with_too_few_finite_weights():
    rng = np.random.default_rng(0)
    assert pareto_khat(np.array([])) == float("inf")
    assert pareto_khat(rng.normal(size=9)) == float("inf")
    # the tail needs 6 draws (floor(S / 5)), so S < 30 is too few
    assert pareto_khat(rng.normal(size=29)) == float("inf")
    assert np.isfinite(pareto_khat(rng.normal(size=30)))
    mostly_nan = np.full(1000, np.nan)
    mostly_nan[:9] = rng.normal(size=9)
    assert pareto_khat(mostly_nan) == float("inf")


def test_khat_drops_non_finite_weights():
    log_weights = _pareto_log_weights(0.5, seed=4)[:500]
    khat = pareto_khat(log_weights)
    assert np.isfinite(khat)
    dirty = np.concatenate([log_weights[:100], [np.nan, np.inf, -np.inf], log_weights[100:],
                            [np.nan] * 7])
    assert pareto_khat(dirty) == khat


def test_khat_of_equal_weights_is_inf():
    # q = p exactly: no tail to fit (ArviZ 0.x finds no draw above the cutoff, 1.x raises)
    assert pareto_khat(np.zeros(1000)) == float("inf")

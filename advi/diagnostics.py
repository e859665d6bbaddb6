"""Diagnostics of a fitted approximation."""

from __future__ import annotations

import math
import warnings

import numpy as np

# The fewest tail draws PSIS fits a generalized Pareto distribution to: ArviZ 1.x's fit needs
# the tail's first quartile above its minimum (index int(n / 4 + 0.5) - 1 > 0), so it gives
# nan for 5 draws, and raises for fewer; ArviZ 0.x fits 5 and returns inf for fewer.
MIN_TAIL = 6


def tail_length(num_weights: int) -> int:
    """Draws in the right tail that PSIS fits, for ``num_weights`` independent draws.

    ``floor(min(S / 5, 3 sqrt(S)))``: ArviZ 1.x's rule (``arviz_stats`` >= 0.6) with
    r_eff = 1, which :func:`pareto_khat` also makes ArviZ 0.x use (0.x rounds up: 95 draws
    of 1,000 where 1.x takes 94).
    """
    s = int(num_weights)
    return int(math.floor(3 * s**0.5)) if s > 225 else int(math.floor(s / 5))


def degenerate_weights(log_weights: np.ndarray) -> str | None:
    """Why PSIS cannot fit the tail of these importance weights, or None when it can try.

    Args:
        log_weights: (S,) float, log p - log q of independent draws of q.

    Returns:
        a phrase when fewer than 30 weights are finite (a tail under :data:`MIN_TAIL`
        draws) or the largest :func:`tail_length` finite weights are all equal (``log p``
        rounded to one value over q's tail), the cases where :func:`pareto_khat` is
        ``inf`` without fitting; else None. NumPy only: no ArviZ import.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64).ravel()
    finite = np.sort(log_weights[np.isfinite(log_weights)])
    tail = tail_length(finite.size)
    if tail < MIN_TAIL:
        return f"only {finite.size} of {log_weights.size} log weights are finite"
    if finite[-1] == finite[-tail]:
        return f"the largest {tail} of {finite.size} log weights are all equal"
    return None


def pareto_khat(log_weights: np.ndarray) -> float:
    """Pareto k-hat of importance weights p/q (Yao, Vehtari, Simpson & Gelman 2018).

    Args:
        log_weights: (S,) float, log p(x, theta_s) - log q(theta_s) for independent draws
            theta_s ~ q (any constant offset is irrelevant). Non-finite entries are dropped.

    Returns:
        k-hat of ArviZ's PSIS, the shape of a generalized Pareto distribution fitted to the
        largest :func:`tail_length` (S) weights: below 0.5 q is close to the posterior,
        0.5-0.7 usable, above 0.7 unreliable. ``inf`` when that tail has fewer than 6 draws
        (fewer than 30 finite weights), is constant (:func:`degenerate_weights`) or cannot
        be fitted.

    ArviZ 1.x (``arviz_stats.base.array_stats.psislw``, Python >= 3.12) is used where it is
    installed, else ArviZ 0.x (``arviz.psislw``); both give the same k-hat for the same
    weights (to rounding: their fits are the same code) because the tail length is set here.
    Where the weights tie at the tail's cutoff, or span more than 708 nats (exp underflows),
    the two versions select the tail differently and may differ.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64).ravel()
    if degenerate_weights(log_weights) is not None:
        return float("inf")
    log_weights = log_weights[np.isfinite(log_weights)]
    tail = tail_length(log_weights.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's FutureWarning on import, small-S notes
        try:
            from arviz_stats.base import array_stats
        except ImportError:
            khat = _khat_arviz_0x(log_weights, tail)
        else:
            khat = _khat_arviz_stats(array_stats, log_weights)
    khat = float(khat)
    return khat if np.isfinite(khat) else float("inf")


def _khat_arviz_stats(array_stats, log_weights: np.ndarray) -> float:
    """k-hat by ArviZ 1.x. Its ``psislw`` takes log-likelihoods, the negated log weights
    (``loo`` passes ``log_lik`` and smooths ``-log_lik``), and fits ``tail_length(S)`` draws
    at r_eff = 1."""
    try:
        _, khat = array_stats.psislw(-log_weights, r_eff=1)
    except ValueError:  # "All tail values are the same": nothing to fit
        return float("inf")
    return float(khat)


def _khat_arviz_0x(log_weights: np.ndarray, tail: int) -> float:
    """k-hat by ArviZ 0.x. Its ``psislw`` takes the log weights and fits
    ``ceil(min(S / 5, 3 sqrt(S / reff)))`` draws: ``reff`` here makes that ``tail``, as
    ``3 sqrt(S / reff)`` is ``tail - 1/2`` (the draws are independent; reff is used for
    nothing else)."""
    import arviz

    reff = 9.0 * log_weights.size / (tail - 0.5) ** 2
    _, khat = arviz.psislw(log_weights, reff=reff)
    return float(khat)

"""Diagnostics of a fitted approximation."""

from __future__ import annotations

import warnings

import numpy as np


def pareto_khat(log_weights: np.ndarray) -> float:
    """Pareto k-hat of importance weights p/q (Yao, Vehtari, Simpson & Gelman 2018).

    Args:
        log_weights: (S,) float, log p(x, theta_s) - log q(theta_s) for draws theta_s ~ q
            (any constant offset is irrelevant). Non-finite entries are dropped.

    Returns:
        k-hat from ArviZ's PSIS (``arviz.psislw``): below 0.5 q is close to the posterior,
        0.5-0.7 usable, above 0.7 unreliable; ``inf`` when fewer than 10 finite weights.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64).ravel()
    log_weights = log_weights[np.isfinite(log_weights)]
    if log_weights.size < 10:
        return float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's FutureWarning on import, small-S notes
        import arviz

        _, khat = arviz.psislw(log_weights)
    return float(khat)

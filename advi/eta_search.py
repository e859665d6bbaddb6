"""Stan's eta search (``advi::adapt_eta``, the journal version's Section 3.3) and the Stan
preset's restart policy, which steps down the same grid."""

from __future__ import annotations

import logging
import math

from jax import Array

from .compiled import CompiledADVI
from .driver import RestartPolicy
from .result import ADVIError
from .step import ADVIState

logger = logging.getLogger("advi")

ETA_GRID = (100.0, 10.0, 1.0, 0.1, 0.01)
"""Stan's eta search sequence (``advi::adapt_eta``)."""


def smaller_eta(eta: float) -> float | None:
    """The largest eta of :data:`ETA_GRID` below ``eta``, or None below the grid."""
    smaller = [e for e in ETA_GRID if e < eta * (1 - 1e-9)]
    return max(smaller) if smaller else None


STAN_POLICY = RestartPolicy(smaller_eta, f"the smallest eta of {ETA_GRID}")
"""Stan's preset restarts at the next smaller eta of :data:`ETA_GRID` (Stan itself stops)."""


def adapt_eta(runner: CompiledADVI, state0: ADVIState, key: Array, adapt_iter: int,
              default: float | None = None) -> float:
    """Stan's eta search (``advi::adapt_eta``).

    Each eta of :data:`ETA_GRID` runs ``adapt_iter`` iterations from the initial q; the
    search stops at the first eta whose ELBO is worse than the best so far once that best
    has improved on the initial ELBO, and keeps the best eta. Where none improves on it,
    ``default`` is returned when given (a q started at the Laplace mode may already be as
    good as ``adapt_iter`` iterations make it).

    Raises:
        ADVIError: when the initial ELBO is not finite, or no eta improves on it and
            ``default`` is None.
    """
    elbo_init, _ = runner.elbo(state0.params, key, 0, trial=True)
    if not math.isfinite(elbo_init):
        raise ADVIError(
            "the ELBO at the initial approximation is not finite (every draw gave a "
            "non-finite log density); check the model, or use init='zero'"
        )
    elbo_best, eta_best = -math.inf, None
    for index, eta in enumerate(ETA_GRID):
        state = runner.run(state0, eta, key, index, adapt_iter, trial=True)
        elbo = -math.inf
        if not bool(state.failed):
            elbo, _ = runner.elbo(state.params, key, index + 1, trial=True)
        logger.info("eta search: eta=%g elbo=%.6g (initial %.6g)", eta, elbo, elbo_init)
        if elbo < elbo_best and elbo_best > elbo_init:
            break
        if index < len(ETA_GRID) - 1:
            elbo_best, eta_best = elbo, eta
        elif elbo > elbo_init:
            eta_best = eta
        elif default is not None:
            logger.info("eta search: no eta improved on the initial ELBO; eta=%g", default)
            return default
        else:
            raise ADVIError(
                f"every eta in {ETA_GRID} failed to improve the initial ELBO {elbo_init:.6g} "
                f"within adapt_iter={adapt_iter} iterations; the model may be severely "
                "ill-conditioned or misspecified (or pass eta=... explicitly)"
            )
    logger.info("eta search: chose eta=%g", eta_best)
    assert eta_best is not None  # set at index 0, which never breaks
    return float(eta_best)

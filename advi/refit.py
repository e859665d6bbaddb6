"""A second Laplace start after a warned fit: where the first search for the mode was
refused and the fit from a random start warned, the fit starts once more, from the mode
that the Laplace start finds from where that fit ended, or from where the search ended.

The Laplace start's search runs from the fit's initial mean. In a narrow valley of log p
(an intercept and slope on an uncentred predictor, data far from zero under flat priors)
where that search ends depends chaotically on where it began, and it may stop short of the
mode where -H is not positive definite, so the start is refused (:mod:`advi.laplace`) and
the fit runs from its random start. That fit can end many posterior sds down the valley,
warned (by k-hat, :func:`advi.checks.fell_back_note`) but wrong, while the mode is a few
L-BFGS steps from where it ended. Here:

1. where log p at the fit's mean is above log p where the refused search ended (the
   search stopped short of where the fit went), the Laplace start
   (:func:`advi.laplace.laplace_start`) runs from the fit's mean with at most
   :data:`SEARCH_STEPS` L-BFGS steps, and must be accepted by its own tests;
2. elsewhere the search went past the fit: down a centred hierarchy's funnel it climbs
   above every point a Gaussian q settles on, and a Laplace start there is refused again
   after tens of steps and two Hessians, a third of a whole fit's time; in a valley whose
   floor leads to the mode (a mean far from 0 with an unknown noise scale) it stopped a
   few steps short. So plain L-BFGS, which forms no Hessian, runs from where the search
   ended for at most :data:`SEARCH_STEPS` steps, and only where it meets its gradient test
   does the Laplace start follow from there (measurements: docs/library/generalisation.md);
3. the fit runs again from it (:func:`advi.fit`), and of the two fits the one with the
   larger ELBO, both estimated from the same draws (:data:`ELBO_SALT`), is returned: ADVI
   maximises the ELBO, and a larger ELBO is a smaller KL(q || p).

Only a fit with the host's search (K up to :data:`advi.laplace.HESSIAN_MAX_DIM`), on all
the data (not minibatched or streamed), is started again.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from .families import Family
from .laplace import GRAD_RTOL, LaplaceStart, LogDensityFunctions, laplace_start
from .lbfgs import find_mode

SEARCH_STEPS = 30
"""L-BFGS iterations allowed to the second Laplace start (0: no second start)."""

ELBO_SALT = 0x7266
"""Salt of the draws (common to both fits) whose ELBO decides which fit is returned."""


def second_start(fns: LogDensityFunctions, family: Family, params: Any, data: Any,
                 refused_log_p: float, refused_end: np.ndarray | None = None
                 ) -> LaplaceStart | None:
    """The Laplace start from a fitted q's mean, or from a mode near where the refused search
    ended (module docstring), or None.

    Args:
        fns: the target's Laplace start functions (``precision`` set: the host's search).
        family: the variational family whose parameters to build.
        params: the fitted q's parameters; their mean's dtype is the start's.
        data: the second argument of ``fns``' functions.
        refused_log_p: log p (nats) where the refused start's search ended (NaN: nowhere
            finite).
        refused_end: (K,) where it ended, or None.

    Returns:
        the accepted :class:`advi.laplace.LaplaceStart` (its ``steps`` counting the plain
        search's), or None: refused, or not tried.
    """
    if SEARCH_STEPS <= 0:
        return None
    mu = np.asarray(params.mu)
    value = float(jax.device_get(fns.value_and_grad(mu, data))[0])
    start = (laplace_start(fns, family, mu, data, max_steps=SEARCH_STEPS)
             if value > (-math.inf if math.isnan(refused_log_p) else refused_log_p)
             else _from_the_end(fns, family, refused_end, data))
    return start if start is not None and start.ok else None


def _from_the_end(fns: LogDensityFunctions, family: Family, end: np.ndarray | None,
                  data: Any) -> LaplaceStart | None:
    """The Laplace start from the mode that plain L-BFGS (no Hessian) reaches from ``end``
    within :data:`SEARCH_STEPS`, or None where it does not (down a funnel's neck those
    steps are all it costs)."""
    if end is None:
        return None
    dtype = np.asarray(end).dtype
    found = find_mode(lambda z: jax.device_get(fns.value_and_grad(np.asarray(z, dtype), data)),
                      np.asarray(end, np.float64), SEARCH_STEPS, GRAD_RTOL)
    if not found.converged:
        return None
    start = laplace_start(fns, family, np.asarray(found.zeta, dtype), data,
                          max_steps=SEARCH_STEPS)
    return start._replace(steps=start.steps + found.steps)

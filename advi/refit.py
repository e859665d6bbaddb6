"""A second Laplace start from a warned fit's mean: where the first search for the mode was
refused and the fit from a random start warned, the fit starts once more, from the mode
that the Laplace start finds from where that fit ended.

The Laplace start's search runs from the fit's initial mean. In a narrow valley of log p
(an intercept and slope on an uncentred predictor, data far from zero under flat priors)
where that search ends depends chaotically on where it began, and it may stop short of the
mode where -H is not positive definite, so the start is refused (:mod:`advi.laplace`) and
the fit runs from its random start. That fit can end many posterior sds down the valley,
warned (by k-hat, :func:`advi.checks.fell_back_note`) but wrong, while the mode is a few
L-BFGS steps from where it ended. Here:

1. only where log p at the fit's mean is above log p where the refused search ended: the
   search stopped short of where the fit went. Down a centred hierarchy's funnel the search
   climbs above every point a Gaussian q settles on, and a second start there would be
   refused again after tens of steps and two or three Hessians, at a cost comparable to
   the whole fit's (measurements: docs/library/generalisation.md);
2. the Laplace start (:func:`advi.laplace.laplace_start`) runs from the fit's mean with at
   most :data:`SEARCH_STEPS` L-BFGS steps, and must be accepted by its own tests;
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
from .laplace import LaplaceStart, LogDensityFunctions, laplace_start

SEARCH_STEPS = 30
"""L-BFGS iterations allowed to the second Laplace start (0: no second start)."""

ELBO_SALT = 0x7266
"""Salt of the draws (common to both fits) whose ELBO decides which fit is returned."""


def second_start(fns: LogDensityFunctions, family: Family, params: Any, data: Any,
                 refused_log_p: float) -> LaplaceStart | None:
    """The Laplace start from a fitted q's mean (module docstring), or None.

    Args:
        fns: the target's Laplace start functions (``precision`` set: the host's search).
        family: the variational family whose parameters to build.
        params: the fitted q's parameters; their mean's dtype is the start's.
        data: the second argument of ``fns``' functions.
        refused_log_p: log p (nats) where the refused start's search ended (NaN: nowhere
            finite).

    Returns:
        the accepted :class:`advi.laplace.LaplaceStart`, or None: log p at q's mean is not
        above ``refused_log_p``, or the start from there was refused.
    """
    if SEARCH_STEPS <= 0:
        return None
    mu = np.asarray(params.mu)
    value = float(jax.device_get(fns.value_and_grad(mu, data))[0])
    if not value > (-math.inf if math.isnan(refused_log_p) else refused_log_p):
        return None
    start = laplace_start(fns, family, mu, data, max_steps=SEARCH_STEPS)
    return start if start.ok else None

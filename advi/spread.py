"""A mean-field q's sds against the posterior's: the end-of-fit note where they are far
too small.

The KL(q || p)-optimal mean-field Gaussian of a Gaussian posterior N(m, Lambda^-1) has
variances 1 / Lambda_kk, the posterior's *conditional* variances, not its marginal ones,
(Lambda^-1)_kk (Bishop 2006, Section 10.1.2). Their ratio is the variance inflation

    VIF_k = (Lambda^-1)_kk Lambda_kk >= 1,

1 for an uncorrelated coordinate, large where the coordinate is nearly a linear function
of the others; sqrt(VIF_k) is the factor by which the posterior's marginal sd exceeds a
mean-field q's. A fit estimates it with Lambda = -H of log p at q's mean.

Where to take -H (benchmarks/README.md, "Mean-field's sds: what predicts them", per
compared quantity on the validation suite):

- **At the Laplace mode** (free: the start formed -H there) it predicts a correlated
  posterior's sd errors but not a funnel's, whose mode sits in its neck: on the Inference
  Gym's eight schools it says 214 where q's sds are within 2x.
- **At q's mean** it predicts both, and costs one more -H.

So the mode's is a free screen and q's mean decides: a mean-field fit from an accepted
Laplace start whose largest sqrt(VIF_k) at the mode exceeds :data:`SD_INFLATION_MAX`
forms -H at q's mean (:meth:`advi.compiled.CompiledADVI.curvature`: 2K gradients by
differences, or the exact Hessian already compiled), and notes its sds where the largest
sqrt(VIF_k) there exceeds it too (:func:`fitted_inflation`, :func:`spread_note`). Where -H
at q's mean is not positive definite (log p is not concave there) the mode's factors
decide: a latent AR(1)'s mean-field fit ended there with its coefficient 8.7 posterior sds
off (full-rank: 0.13), and stochastic volatility models, a regularised horseshoe, a
Brownian bridge and a Gaussian process with sds 3-25x too small (benchmarks/README.md,
"Where -H at q's mean is not positive definite"). Nothing is said
where no -H was formed (a refused or random start, K above ``hessian_max_dim``), or for a
full-rank q, whose covariance can express the correlations. Curvature that is not
correlation (a banana) is not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .curvature import whitening

SD_INFLATION_MAX = 2.0
"""A mean-field fit notes its sds where the posterior's marginal sd exceeds q's by more
than this factor in some coordinate (sqrt(VIF) at the Laplace mode and at q's mean)."""

class SpreadWarning(RuntimeWarning):
    """A mean-field fit's sds are far smaller than the posterior's (:func:`spread_note`);
    the note is about its sds, though where it reads the Laplace mode's factors
    (:data:`AT_MODE`) a full-rank q may move some means too. Silence it alone with
    ``warnings.filterwarnings("ignore", category=advi.SpreadWarning)``."""


SPREAD_NOTE = "q's sds are a mean-field q's"
"""How the note of :func:`spread_note` begins."""

NAMED_SITES = 3
"""The note names at most this many sites, those of the largest factors."""


def inflation(marginal_sd: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """sqrt(VIF_k), (K,) float64: ``marginal_sd`` (K,), sqrt(((-H)^-1)_kk), over the
    conditional sd 1 / sqrt((-H)_kk) of ``precision`` (-H, (K, K)); at least 1."""
    return np.sqrt(np.maximum(np.square(marginal_sd) * np.diagonal(precision), 1.0))


def sd_inflation(precision: np.ndarray | None) -> np.ndarray | None:
    """sqrt(((-H)^-1)_kk (-H)_kk): (K,) float64, the factor by which each marginal sd of
    N(m, (-H)^-1) exceeds its conditional sd 1 / sqrt((-H)_kk) (module docstring), from a
    (K, K) ``precision`` (-H; symmetrised here); None where it is None or not positive
    definite."""
    if precision is None:
        return None
    precision = 0.5 * (precision + precision.T)
    whiten, definite = whitening(precision, precision.shape[-1])
    if not definite:
        return None
    marginal = np.sum(np.asarray(whiten, np.float64) ** 2, axis=1)  # C C^T = (-H)^-1
    return inflation(np.sqrt(marginal), precision)


class Spread(NamedTuple):
    """What :func:`fitted_inflation` found: sqrt(VIF_k), (K,) float64, and where -H was
    taken (``at``: "q's mean", or the mode where -H at q's mean is not definite)."""

    inflation: np.ndarray
    at: str


AT_MODE = "the Laplace mode (-H at q's mean is not positive definite)"
""":attr:`Spread.at` where the mode's factors decide."""


def fitted_inflation(at_mode: np.ndarray | None,
                     curvature_at_mean: Callable[[], np.ndarray | None]) -> Spread | None:
    """:func:`sd_inflation` at q's mean from ``curvature_at_mean()`` (-H there, (K, K), or
    None where no -H can be formed), formed only where the mode's ``at_mode`` ((K,), or
    None: no note) exceeds :data:`SD_INFLATION_MAX` somewhere; the mode's own where -H at
    q's mean is not positive definite (:data:`AT_MODE`); else None."""
    if at_mode is None or not np.max(at_mode) > SD_INFLATION_MAX:
        return None
    precision = curvature_at_mean()
    if precision is None:
        return None
    at_mean = sd_inflation(precision)
    return Spread(at_mode, AT_MODE) if at_mean is None else Spread(at_mean, "q's mean")


def spread_note(spread: Spread | None,
                unravel: Callable[[Any], dict] | None = None) -> str | None:
    """The end-of-fit note of a mean-field fit whose :func:`fitted_inflation` is ``spread``
    (or None: no note), where its largest factor exceeds :data:`SD_INFLATION_MAX`; else
    None. ``unravel`` (zeta (K,) -> {site: array}, a NumPyro target's layout) names the
    sites of the largest factors."""
    if spread is None or not np.max(spread.inflation) > SD_INFLATION_MAX:
        return None
    inflation = spread.inflation
    wide = int(np.sum(inflation > SD_INFLATION_MAX))
    where = f"{wide} of {inflation.size} coordinates above {SD_INFLATION_MAX:g}x"
    if unravel is not None:
        largest = {site: float(np.max(v)) for site, v in unravel(inflation).items()}
        top = sorted((s for s in largest if largest[s] > SD_INFLATION_MAX),
                     key=largest.__getitem__, reverse=True)[:NAMED_SITES]
        where += ": " + ", ".join(f"{site} {largest[site]:.3g}x" for site in top)
    return (f"{SPREAD_NOTE}, the posterior's conditional sds: at {spread.at} the posterior's "
            f"marginal sds are up to {float(np.max(inflation)):.3g} times larger ({where}; "
            "correlations a mean-field q cannot express), so draws and intervals "
            "understate the uncertainty there; fit family='fullrank', or use "
            "result.covariance('linear_response')")

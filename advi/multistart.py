"""Several L-BFGS starts for the Laplace start: a fit that would begin (and, being a local
optimisation, end) in a worse mode begins in the better one, and a posterior with another
mode of comparable mass says so.

ADVI maximises the ELBO locally: started in the basin of a minor mode of a multimodal
posterior (e.g. the swapped labels of a two-component mixture with unequal weights), it
converges there and nothing in its result tells. Here, besides the start from the fit's
initial mean (:func:`advi.laplace.laplace_start`), :data:`EXTRA_STARTS` L-BFGS runs start
from Stan's random inits, U(-2, 2) per coordinate (``stan/services``), as multiple chains
do. Each converged mode is scored by its Laplace approximation of the log evidence,

    log Z ~= log p(mode) + (K/2) log(2 pi) - (1/2) log det(-H(mode)),

(MacKay 2003, Chapter 27), the mass of the posterior near that mode. A mode is distinct
when it lies more than :data:`DISTINCT_SD` Laplace standard deviations of the first mode
from it along some coordinate. Then:

- a distinct mode better by more than :data:`MODE_GAP_NATS` nats: the fit starts from it
  (the first mode's mass is below e^-1 of it), with a note giving both scores and the
  distance (a warning while the first still holds >= e^-:data:`MULTIMODAL_NATS` as much);
- otherwise a distinct mode within :data:`MULTIMODAL_NATS` nats (at least e^-3 = 5% of the
  mass of the first): q, one Gaussian, covers one mode of several; a warning gives the
  numbers.

Mode search and scores run on the host in float64 with the compiled value, gradient and
Hessian the Laplace start already has; without a Hessian (K above
:data:`advi.laplace.HESSIAN_MAX_DIM`) there is one start only.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from .families import Family
from .laplace import (
    LAPLACE_MAX_STEPS,
    LaplaceStart,
    LogDensityFunctions,
    find_mode,
    laplace_start,
)

EXTRA_STARTS = 5
"""L-BFGS starts from U(-2, 2) besides the one from the fit's initial mean."""

MODE_GAP_NATS = 1.0
"""A distinct mode better than the first by more than this (log evidence, nats) is used."""

MULTIMODAL_NATS = 3.0
"""A distinct mode within this many nats of the better holds >= 5% of its mass: warn."""

DISTINCT_SD = 1.0
"""Modes farther apart than this many Laplace sds (along some coordinate) are distinct."""


class Mode(NamedTuple):
    """A converged mode: where (K,) float64, its log evidence (nats), its Laplace sds (K,)."""

    zeta: np.ndarray
    log_evidence: float
    sd: np.ndarray


class MultiStart(NamedTuple):
    """What :func:`multistart_laplace` returns: the start to use (``steps`` counts the
    L-BFGS iterations of every start); a sentence with the numbers, or None; and whether it
    is a warning (another mode holds >= e^-:data:`MULTIMODAL_NATS` of the mass of the one
    q starts in) rather than a note (the start moved to a much better mode)."""

    start: LaplaceStart
    note: str | None = None
    warn: bool = False


def _mode(fns: LogDensityFunctions, zeta: np.ndarray, data: Any, dtype: Any) -> Mode | None:
    """The :class:`Mode` at ``zeta``, or None where -H is not positive definite."""
    point = jnp.asarray(np.asarray(zeta, dtype))
    value = float(fns.value_and_grad(point, data)[0])
    precision = np.asarray(fns.precision(point, data), np.float64)
    try:
        chol = np.linalg.cholesky(0.5 * (precision + precision.T))
    except np.linalg.LinAlgError:
        return None
    if not (math.isfinite(value) and np.all(np.isfinite(chol))):
        return None
    inverse = np.linalg.inv(chol)
    sd = np.sqrt(np.sum(inverse**2, axis=0))
    log_evidence = value + 0.5 * zeta.size * math.log(2 * math.pi) - np.sum(
        np.log(np.diagonal(chol)))
    return Mode(np.asarray(zeta, np.float64), float(log_evidence), sd)


def _extra_modes(fns: LogDensityFunctions, dim: int, data: Any, dtype: Any, seed: int,
                 extra_starts: int) -> tuple[list[Mode], int]:
    """The modes L-BFGS reaches from ``extra_starts`` U(-2, 2) inits, and its iterations."""
    rng = np.random.default_rng(seed)
    modes, steps = [], 0

    def value_and_grad(zeta: np.ndarray) -> Any:
        return fns.value_and_grad(jnp.asarray(np.asarray(zeta, dtype)), data)

    for _ in range(extra_starts):
        zeta, converged, used = find_mode(value_and_grad, rng.uniform(-2.0, 2.0, dim),
                                          LAPLACE_MAX_STEPS // 2)
        steps += used
        mode = _mode(fns, zeta, data, dtype) if converged else None
        if mode is not None:
            modes.append(mode)
    return modes, steps


def multistart_laplace(fns: LogDensityFunctions, family: Family, zeta0: Any, data: Any,
                       seed: int, extra_starts: int = EXTRA_STARTS) -> MultiStart:
    """The Laplace start from ``zeta0`` checked against ``extra_starts`` others (module
    docstring); runs on the host.

    Args:
        fns: the target's :func:`advi.laplace.log_density_functions`.
        family: the variational family whose parameters to build.
        zeta0: (K,) float, the fit's initial mean; its dtype is the parameters'.
        data: the second argument of ``fns``' functions.
        seed: seeds the extra starts' inits.
        extra_starts: L-BFGS runs besides the first (0: the first only).

    Returns:
        :class:`MultiStart`; the first start unchanged when it was refused (no usable
        mode: the caller falls back to its random start) or there is no Hessian.
    """
    first = laplace_start(fns, family, zeta0, data)
    if not first.ok or fns.precision is None or extra_starts == 0:
        return MultiStart(first)
    dtype = jnp.asarray(zeta0).dtype
    here = _mode(fns, np.asarray(first.params.mu, np.float64), data, dtype)
    modes, steps = _extra_modes(fns, here.zeta.size, data, dtype, seed, extra_starts)
    distinct = [m for m in modes if np.max(np.abs(m.zeta - here.zeta) / here.sd) > DISTINCT_SD]
    total = first.steps + steps
    if not distinct:
        return MultiStart(first._replace(steps=total))
    best = max(distinct, key=lambda m: m.log_evidence)
    gap = best.log_evidence - here.log_evidence
    distance = float(np.max(np.abs(best.zeta - here.zeta) / here.sd))
    numbers = (f"log evidence (Laplace) {here.log_evidence:.2f} at the mode reached from the "
               f"initial mean, {best.log_evidence:.2f} at a mode {distance:.1f} sds away "
               f"found by one of {extra_starts} more L-BFGS starts")
    if gap > MODE_GAP_NATS:
        better = laplace_start(fns, family, jnp.asarray(best.zeta, dtype), data)
        if better.ok:
            return MultiStart(better._replace(steps=total + better.steps),
                              f"the fit starts from the better of two modes: {numbers}",
                              gap < MULTIMODAL_NATS)
    if gap > -MULTIMODAL_NATS:
        return MultiStart(first._replace(steps=total), (
            f"the posterior has at least two modes with comparable mass ({numbers}); q, a "
            "single Gaussian, approximates one of them: its means and sds are not the "
            "posterior's"), True)
    return MultiStart(first._replace(steps=total))

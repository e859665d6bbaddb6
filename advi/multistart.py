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

(MacKay 2003, Chapter 27), the mass of the posterior near that mode; to keep the cost to
a few Hessians, only the first mode and the extra mode of highest log density are scored,
and only when that mode is distinct from the first (more than :data:`DISTINCT_SD` Laplace
standard deviations away along some coordinate) and its log density is within
:data:`MULTIMODAL_NATS` of the first's (a less dense mode would need a much wider peak to
matter; L-BFGS's relative gradient test also stops short of the mode in flat directions,
so the candidate is polished by the Laplace start's own search before it is scored). Then:

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

import jax
import numpy as np

from .families import Family
from .laplace import GRAD_RTOL, LaplaceStart, LogDensityFunctions, laplace_start
from .lbfgs import find_mode
from .precision import log_p_spacing, start_resolution

EXTRA_STARTS = 8
"""L-BFGS starts from U(-2, 2) besides the one from the fit's initial mean. Lotka-Volterra's
searches reach its main mode from about 2 U(-2, 2) inits in 5, and a minor one 40 nats
below (8.2-8.4 sd off) from most others: with 4, the fit started and ended at the minor
mode, unwarned, at 3 of 24 seeds (3-14, both families); with 8, at none, and no row of the
suite changed (benchmarks/README.md)."""

EXTRA_START_STEPS = 100
"""L-BFGS iterations allowed per extra start (a start that has not converged is dropped)."""

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


class StartInfo(NamedTuple):
    """How the initial state was chosen: ``laplace`` (the Laplace start was used), ``steps``
    (L-BFGS iterations of every start), ``grad_norm`` (||grad log p|| there), the extra
    starts' ``note`` and ``warn`` (:class:`advi.multistart.MultiStart`), ``scaled`` (q's
    scales from the Hessian; False above :data:`advi.laplace.HESSIAN_MAX_DIM`), and for
    ``dtype="auto"`` (:mod:`advi.precision`): ``resolution`` (:func:`advi.precision.
    start_resolution`), ``log_p_spacing`` (nats), and the :class:`advi.laplace.LaplaceStart`'s
    ``nonfinite``; ``log_p`` (nats) where the start's search ended; ``again``: the start
    is a second one: with ``laplace``, from a fit's mean (:mod:`advi.refit`); without, the
    initial q after the fit from the Laplace start did not reach the optimum; ``inflation``:
    the start's :attr:`advi.laplace.LaplaceStart.inflation`; ``failing``: where a start
    refused met non-finite values, the draws around where its search ended, at the initial
    q's scales, at which log p is not finite (:func:`advi.initial.failing_draws`, (n, K)),
    else None."""

    laplace: bool
    steps: int
    grad_norm: float
    note: str | None = None
    warn: bool = False
    scaled: bool = False
    resolution: float = 0.0
    log_p_spacing: float = 0.0
    nonfinite: bool = False
    log_p: float = math.nan
    again: bool = False
    inflation: np.ndarray | None = None
    failing: np.ndarray | None = None


def start_info(start: LaplaceStart, note: str | None, warn: bool, hessian: bool,
               failing: np.ndarray | None) -> StartInfo:
    """The :class:`StartInfo` of a Laplace start (``hessian``: it can form -H)."""
    return StartInfo(start.ok, start.steps, start.grad_norm, note, warn,
                     scaled=start.ok and hessian, resolution=start_resolution(start),
                     log_p_spacing=log_p_spacing(start.log_p), nonfinite=start.nonfinite,
                     log_p=start.log_p, inflation=start.inflation, failing=failing)


def _mode(fns: LogDensityFunctions, zeta: np.ndarray, data: Any, dtype: Any) -> Mode | None:
    """The :class:`Mode` at ``zeta``, or None where -H is not positive definite."""
    point = np.asarray(zeta, dtype)
    if fns.precision is None:
        return None
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


def _extra_modes(fns: LogDensityFunctions, start: LaplaceStart, family: Family, data: Any,
                 seed: int, extra_starts: int) -> tuple[list[np.ndarray], list[float], int]:
    """The converged modes L-BFGS reaches from ``extra_starts`` U(-2, 2) inits (searching in
    coordinates scaled by the first mode's conditional sds 1 / sqrt(-H_kk), zeta = init +
    diag(sd) u, whatever q's family: whitened by a full-rank start's L, fitted to the first
    mode's correlations, 3 of 4 extra starts of a Lotka-Volterra ODE went back to that
    minor mode, 40 nats below the one the diagonal scale finds) that lie more than
    :data:`DISTINCT_SD` of q's start sds from ``start`` and from each other (for
    mean-field, the conditional sds) with a log density within :data:`MULTIMODAL_NATS` of
    the start's, their log densities, and the iterations used (no Hessian is formed
    here)."""
    dtype = start.params.mu.dtype
    here = np.asarray(start.params.mu, np.float64)
    sd = start.sd
    rng = np.random.default_rng(seed)
    modes: list[np.ndarray] = []
    log_p: list[float] = []
    steps = 0

    scale = sd
    if family.name == "fullrank":  # 1 / sqrt(diag((L L^T)^-1))
        inverse = np.linalg.inv(np.tril(np.asarray(start.params.L, np.float64)))
        scale = 1 / np.sqrt(np.sum(inverse**2, axis=0))

    def value_and_grad(zeta: np.ndarray) -> Any:
        return jax.device_get(fns.value_and_grad(np.asarray(zeta, dtype), data))

    floor = float(value_and_grad(here)[0]) - MULTIMODAL_NATS
    for _ in range(extra_starts):
        init = rng.uniform(-2.0, 2.0, here.size)

        def whitened(u: np.ndarray, init: np.ndarray = init) -> Any:
            with np.errstate(all="ignore"):  # non-finite points end the search in find_mode
                value, grad = value_and_grad(init + scale * u)
                return value, scale * np.asarray(grad, np.float64)

        # a non-finite value ends an extra start (dropped unless it converged): a cheap look
        # for another mode, not a search that must succeed
        shift, converged, used = find_mode(whitened, np.zeros(here.size),
                                           EXTRA_START_STEPS, GRAD_RTOL, restart=False)[:3]
        zeta = init + scale * shift
        steps += used
        value = float(value_and_grad(zeta)[0])
        if converged and value > floor and all(np.max(np.abs(zeta - seen) / sd) > DISTINCT_SD
                                               for seen in (here, *modes)):
            modes.append(zeta)
            log_p.append(value)
    return modes, log_p, steps


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
    dtype = np.asarray(zeta0).dtype  # jnp.result_type would read this thread's x64 flag
    found, log_p, steps = _extra_modes(fns, first, family, data, seed, extra_starts)
    total = first.steps + steps
    here = _mode(fns, np.asarray(first.params.mu, np.float64), data, dtype) if found else None
    if here is not None:  # distinct by the marginal sds too
        kept = [i for i, z in enumerate(found)
                if np.max(np.abs(z - here.zeta) / here.sd) > DISTINCT_SD]
        found, log_p = [found[i] for i in kept], [log_p[i] for i in kept]
    if here is None or not found:
        return MultiStart(first._replace(steps=total))
    polished = laplace_start(fns, family, np.asarray(found[int(np.argmax(log_p))], dtype),
                             data)
    total += polished.steps
    best = _mode(fns, np.asarray(polished.params.mu, np.float64), data, dtype)
    if not polished.ok or best is None or np.max(
            np.abs(best.zeta - here.zeta) / here.sd) <= DISTINCT_SD:
        return MultiStart(first._replace(steps=total))
    gap = best.log_evidence - here.log_evidence
    distance = float(np.max(np.abs(best.zeta - here.zeta) / here.sd))
    numbers = (f"log evidence (Laplace) {here.log_evidence:.2f} at the mode reached from the "
               f"initial mean, {best.log_evidence:.2f} at a mode {distance:.1f} sds away "
               f"found by one of {extra_starts} more L-BFGS starts")
    if gap > MODE_GAP_NATS:
        return MultiStart(polished._replace(steps=total),
                          f"the fit starts from the better of two modes: {numbers}",
                          gap < MULTIMODAL_NATS)
    if gap > -MULTIMODAL_NATS:
        return MultiStart(first._replace(steps=total), (
            f"the posterior has at least two modes with comparable mass ({numbers}); q, a "
            "single Gaussian, approximates one of them: its means and sds are not the "
            "posterior's"), True)
    return MultiStart(first._replace(steps=total))

"""The floating-point precision of a fit: float32 (JAX's default), float64, or float32 unless
float32 cannot resolve q (``dtype="auto"``, the robust preset).

A float32 number near x is only known to ``spacing(x)``, about 6e-8 |x|. A posterior whose
mean is large against its standard deviation (unstandardised data: a mean of 1e6 with sd
0.1) cannot be represented in float32 at all: q's mean moves in steps of 0.06 there, 0.6
posterior sds, and at 1e8 the data themselves are rounded to multiples of 8. No step size,
start or rescaling of the parameters fixes that, because the model's own arithmetic is in
float32. ``dtype="auto"`` therefore measures, at the Laplace start's mode (or the best point
its L-BFGS reached), the worst coordinate's float32 spacing in units of its Laplace sd
(:func:`resolution`), and where that exceeds :data:`RESOLUTION_SD` (or where the start was
refused because float32 could not resolve log p, :data:`LOG_P_SPACING`) runs the fit again,
from the start, in float64 (:func:`float32_shortfall`). Everything computed later from a float64 q
(draws, k-hat, covariances) runs in float64 too (:func:`scope_of`).

The switch uses JAX's public context manager ``jax.enable_x64`` (JAX >= 0.8), which is local
to the calling thread and leaves the process's global setting alone.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .initial import FAILING_PROBES as PROBES
from .laplace import LaplaceStart
from .target import device_array

DTYPES = (None, "float32", "float64", "auto")
"""Values of the ``dtype`` option: None follows JAX's default float (float32 unless
``jax_enable_x64`` is set), "float32" and "float64" force it for the fit, "auto" is float32
promoted to float64 where float32 cannot resolve q."""

RESOLUTION_SD = 0.01
"""``dtype="auto"`` refits in float64 when some coordinate's float32 spacing at the start's
mode exceeds this many of its Laplace standard deviations (a ratio, spacing / sd). Not the
0.1 sd the result must reach, but ten times less: near the optimum the robust preset's
steps are eta = 0.1 q-sds times Adam's direction, often 0.1-0.5, and a step smaller than
half the spacing leaves the mean where it is, so the iterates stall
(``benchmarks/bench_scale.py``; measurements: benchmarks/README.md, "Measurements behind
the library's defaults")."""

ROUNDING_STEPS = 10.0
"""A refused Laplace start whose Newton step is within this many float32 resolutions
(:func:`start_resolution`) stopped at a mode up to rounding."""

FAILING_SHARE = 0.3
"""``dtype="auto"`` refits in float64 before the main loop when a refused Laplace start met
non-finite values and log p is not finite in float32 at this share or more of the draws
around where its search ended (:func:`float32_shortfall`). On the validation suite
(robust, seeds 0-2) it fires on the latent GP classifier alone (3-6 of 10); the three
hierarchies whose refused starts also met non-finite values (a line search's overflow
far out) read 0 (one start each, seed 0), and E2's refused start meets none."""

LOG_P_SPACING = 1.0
"""``dtype="auto"`` also refits in float64 when the Laplace start was refused where float32's
spacing of log p exceeds this many nats."""


MATMUL_PRECISION = "highest"
"""JAX's ``default_matmul_precision`` in a fit whose caller has set none: matrix products in
the dtype's own precision. JAX's default lets the backend choose, and on NVIDIA GPUs since
Ampere it runs float32 products in TensorFloat-32 (10-bit mantissa, about 5e-4 relative),
which moved a full-rank fit of an ill-conditioned regression 0.23 posterior sds on an H200
where float32 keeps it within 0.1 (benchmarks/README.md, "On a GPU"). CPUs compute float32
products in float32 either way."""


@contextlib.contextmanager
def matmul_scope() -> Iterator[None]:
    """A context in which JAX traces matrix products at :data:`MATMUL_PRECISION`, unless
    the caller chose a precision (``jax_default_matmul_precision`` set globally or by
    ``jax.default_matmul_precision``), which is kept: TensorFloat-32 stays available to a
    user who asks for it. Uses JAX's public ``jax.default_matmul_precision``, local to the
    calling thread."""
    if jax.config.jax_default_matmul_precision is not None:
        yield
    else:
        with jax.default_matmul_precision(MATMUL_PRECISION):
            yield


@contextlib.contextmanager
def scope(dtype: str | None) -> Iterator[None]:
    """A context in which JAX's default float is ``dtype``'s ("float32", "float64"); None
    and "auto" leave it as it is (the caller's setting). Matrix products are traced at the
    dtype's full precision (:func:`matmul_scope`).

    Raises:
        ValueError: for a value not in :data:`DTYPES`.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not valid; use one of {DTYPES}")
    with matmul_scope():
        if dtype in ("float32", "float64"):
            with jax.enable_x64(dtype == "float64"):
                yield
        else:
            yield


def scope_of(params: Any) -> contextlib.AbstractContextManager:
    """The context for computations on the parameters ``params`` (a pytree of arrays whose
    first leaf gives the dtype): float64 where they are float64, so that JAX does not
    truncate them to float32 outside the fit that made them; else the caller's setting."""
    leaf = jax.tree.leaves(params)[0]
    return scope("float64" if np.dtype(leaf.dtype) == np.float64 else None)


def resolution(mode: Any, sd: np.ndarray) -> float:
    """The worst coordinate's float32 spacing at ``mode`` in units of ``sd``.

    Args:
        mode: (K,) the point q starts at (the Laplace start's mode, or the best point its
            L-BFGS reached).
        sd: (K,) positive standard deviations there (the Laplace start's).

    Returns:
        max_k spacing_float32(mode_k) / sd_k, a float >= 0 (0 where ``sd`` is not finite
        or not positive: nothing to compare with).
    """
    mode32 = np.abs(np.asarray(mode, np.float64)).astype(np.float32)
    sd = np.asarray(sd, np.float64)
    usable = np.isfinite(sd) & (sd > 0) & np.isfinite(mode32)
    if not np.any(usable):
        return 0.0
    return float(np.max(np.spacing(mode32[usable]).astype(np.float64) / sd[usable]))


def start_resolution(start: LaplaceStart) -> float:
    """:func:`resolution` at the Laplace start's point where that point is a mode up to
    float32's rounding: the start was accepted, or it was refused with a Newton step of at
    most :data:`ROUNDING_STEPS` times that resolution (L-BFGS stopped within rounding of
    the mode: a normal mean of 1e6 with sd 0.1, resolution 0.62 sd, Newton step 0.21 sd);
    else 0. A start refused because there is no mode (a funnel, whose -H is not definite
    where L-BFGS stopped, or whose Newton step is large) says nothing about float32."""
    found = resolution(start.params.mu, start.sd)
    if start.ok or start.newton_sd <= ROUNDING_STEPS * found:
        return found
    return 0.0


def log_p_spacing(log_p: float) -> float:
    """float32's spacing at the log density ``log_p`` (nats): the smallest change of log p
    that float32 can show there (inf where ``log_p`` is not finite)."""
    if not np.isfinite(log_p):
        return float("inf")
    return float(np.spacing(np.float32(abs(log_p))))


def float32_shortfall(dtype: str | None, resolution_sd: float, start_ok: bool,
                      log_p_spacing_nats: float, failing: np.ndarray | None = None,
                      target: Any = None) -> str | None:
    """Why a fit run in JAX's current default float must run again in float64 before its
    main loop, or None.

    Only with ``dtype="auto"`` where that default is float32. Either float32 cannot
    represent q's mean to :data:`RESOLUTION_SD` of its sd at the start's mode
    (``resolution_sd``, :func:`resolution`), or the Laplace start was refused
    (``start_ok`` False) where float32 cannot tell apart log densities
    :data:`LOG_P_SPACING` nats apart at the best point L-BFGS reached
    (``log_p_spacing_nats``, :func:`log_p_spacing`): its line search then sees no decrease
    and stops far from the mode (a normal mean of 1e8: log p = -5e17 at the start, whose
    float32 spacing is 3e10 nats); or, the start refused after meeting non-finite values,
    log p is not finite in float32 at :data:`FAILING_SHARE` or more of
    :data:`advi.initial.FAILING_PROBES` draws around where its search ended, at the initial
    q's scales (``failing``, (n, K): :func:`advi.initial.failing_draws`), and finite in
    float64 at more than half of those (:func:`float64_values` of ``target``, an
    :class:`advi.Target`): a Gaussian process whose kernel has a small jitter, whose
    Cholesky factor float32 cannot form where q's mass is (a full-rank fit in float32
    then redrew half its draws for 10,000 iterations, 807 s, before its float64 redo).
    """
    if dtype != "auto" or jnp.result_type(float) != jnp.float32:
        return None
    if resolution_sd > RESOLUTION_SD:
        return f"float32 resolves q's mean to only {resolution_sd:.2g} sd at the start's mode"
    if not start_ok and math.isinf(log_p_spacing_nats):
        return "float32 gives a non-finite log p where the Laplace start's L-BFGS stopped"
    if not start_ok and log_p_spacing_nats > LOG_P_SPACING:
        return (f"float32 resolves log p to only {log_p_spacing_nats:.2g} nats where the "
                "Laplace start's L-BFGS stopped")
    if (not start_ok and failing is not None and len(failing) >= FAILING_SHARE * PROBES
            and 2 * int(np.sum(np.isfinite(float64_values(target, failing)))) > len(failing)):
        return (f"float32 gives a non-finite log p at {len(failing)} of {PROBES} draws "
                "around where the Laplace start's L-BFGS stopped, float64 a finite one")
    return None


def float64_values(target: Any, points: np.ndarray) -> list[float]:
    """``target``'s log density (an :class:`advi.Target`) at ``points`` ((n, K), zeta) in
    float64, its float32 data widened as a float64 fit widens them
    (:func:`advi.target.device_array`); compiles the log density in float64 once."""
    with jax.enable_x64(True):
        data = jax.tree.map(device_array, target.data)
        log_density = jax.jit(target.log_density_fn)
        zero = np.zeros(2, np.uint32)
        return [float(log_density(np.asarray(p, np.float64), zero, data)) for p in points]


def float32_doubt(dtype: str | None, promoted: str | None, nonfinite: bool,
                  notes: tuple[str, ...], redraws: int | None, restarted: bool,
                  slow: bool = False) -> str | None:
    """Why a float32 fit that ended with warnings must be redone in float64, or None.

    Only with ``dtype="auto"``, where the fit ran in float32 (JAX's default, not already
    promoted) and ended with warnings (``notes``: the end-of-fit checks, max_iter, ...), and
    float32 is a likely cause:

    - the Laplace start's search met non-finite values (``nonfinite``): a Gaussian process
      whose covariance has a 1e-10 jitter, whose Cholesky factor float32 cannot form near
      the mode; unless ``slow``: the start was accepted (float32 carried the mode) and the
      only warning is max_iter's (:data:`advi.driver.MAX_ITER_PREFIX`), which float64 does
      not hasten (the everyday stochastic volatility model and Poisson GLMM meet overflows
      on their way up from a random q, then converge slowly: redone, they ended as far
      off, at twice the cost);
    - the main loop met non-finite draws (``redraws`` > 0, or ``restarted``).

    Each signal alone also fires on fits that float64 would not mend (E2's centred funnel
    meets overflows in its start's line searches), which end without warnings (the random
    start's k-hat warning, :data:`advi.checks.FELL_BACK_NOTE`, is not among ``notes``, nor
    the note of a mean-field q's sds, :data:`advi.spread.SPREAD_NOTE`: float32 does not
    narrow them, and on the validation suite it sent three fits to float64): the
    warnings gate the redo, so that only a fit that float32 has plausibly spoiled pays for
    float64.
    """
    if dtype != "auto" or promoted is not None or not notes:
        return None
    if jnp.result_type(float) != jnp.float32:
        return None
    if nonfinite and not slow:
        return "the float32 fit warned, and its Laplace start met non-finite log densities"
    if redraws or restarted:
        return "the float32 fit warned after non-finite draws"
    return None


def float32_failure(dtype: str | None, promoted: str | None, error: Exception) -> str | None:
    """Why a float32 fit that raised ``error`` (:class:`advi.ADVIError`: non-finite draws
    beyond the redraws at the smallest eta, ...) must be redone in float64, or None: only with
    ``dtype="auto"``, where the fit ran in float32 (not already promoted). Float32 overflows
    where float64 does not (exp of 89 against 710): on posteriordb's heteroscedastic GP
    (``mcycle_gp-accel_gp``) a float32 fit from a random start raised at one seed of three,
    and its float64 redo ends with a warning instead."""
    if dtype != "auto" or promoted is not None or jnp.result_type(float) != jnp.float32:
        return None
    return f"the float32 fit raised: {str(error).split(';')[0]}"


PINNED_PROBES = 2
"""Points at which :func:`carries_float64` evaluates a log density in float64."""


def carries_float64(target: Any, at: Any) -> bool:
    """Whether ``target``'s log density computes in float64 when given float64 zeta, so
    that redoing a float32 fit in float64 can change it.

    Two tests, cheapest first: the output's dtype (``jax.eval_shape`` in a float64 scope:
    traced, not run), which finds a model that casts its parameters to float32; then the
    value at :data:`PINNED_PROBES` float64 points near ``at``, which finds a float32 part
    added to a float64 term that is constant (a NumPyro ``factor`` of a TensorFlow
    Probability density beside an improper prior: the sum reads as float64, and every
    value is a float32 number). A density that computes in float64 returns a value that
    float32 cannot hold exactly at such a point (the chance that it does not is about
    2^-29 a point). Only the value is compiled, in float64, and only when a redo is
    already in doubt.

    Args:
        target: the :class:`advi.Target` fitted.
        at: (n, K) points in zeta-space (draws of the float32 q); each is moved by a
            relative 1e-9, so that the probes are float64 points and not float32 ones.

    Returns:
        False where the density is pinned to float32 (the fit is kept); True where it
        carries float64 or nothing can be told (no finite value at the probes).
    """
    with jax.enable_x64(True):
        zeta = jax.ShapeDtypeStruct((target.dim,), np.float64)
        key = jax.ShapeDtypeStruct((2,), np.uint32)
        out = jax.eval_shape(target.log_density_fn, zeta, key, target.data)
        if np.dtype(out.dtype) != np.float64:
            return False
    points = np.asarray(at, np.float64)[:PINNED_PROBES]
    rng = np.random.default_rng(0)
    values = float64_values(target, points * (1.0 + 1e-9 * rng.uniform(0.5, 1.0, points.shape)))
    finite = [v for v in values if np.isfinite(v)]
    return not finite or any(float(np.float32(v)) != v for v in finite)

"""A Laplace start for ADVI: q centred at the mode of the log joint, scaled by its curvature.

The mode of log p(X, T^-1(zeta)) + log|det J| in zeta-space is found by L-BFGS, as
Pathfinder (Zhang, Carpenter, Gelman & Vehtari 2022, JMLR 23) starts its variational
search. With H the Hessian there:

- mean-field: mu = mode, sigma_k = 1 / sqrt(-H_kk). For a Gaussian posterior this *is* the
  optimum of the mean-field family (the KL(q || p)-optimal mean-field Gaussian of
  N(m, Lambda^-1) has mean m and variances 1 / Lambda_kk; Bishop 2006, Section 10.1.2);
- full-rank: mu = mode, L = cholesky((-H)^-1), the Laplace approximation itself.

Up to ``hessian_max_dim`` L-BFGS runs on the host in float64 (SciPy's L-BFGS-B, Byrd, Lu,
Nocedal & Zhu 1995) on the compiled value and gradient: a compiled L-BFGS took longer to
compile than a small model's whole fit, and float32 iterates could not reach the exact
mode the Newton-step test below asks. Above it the search is compiled (:mod:`advi.lbfgs`).

The search runs in :data:`LAPLACE_STAGES` stages; each after the first works in coordinates
whitened by the curvature where the previous one ended (zeta = zeta_prev + C u with C C^T =
(-H)^-1 from its Cholesky factor, or the diagonal 1 / sqrt(-H_kk) where -H is not positive
definite), in which a Gaussian posterior is N(0, I), and stops when every gradient
coordinate is below MODE_SD_TOL / 10 there; the last may use the steps the earlier ones
left of ``max_steps``. Up to :data:`LAPLACE_EXTRA_STAGES` more follow where the last met its
test, or stopped short of it where -H is positive definite, and there -H is not positive
definite or the Newton step is still too long. The first stage runs unwhitened for up to
:data:`UNWHITENED_STEPS_PER_DIM` K steps, and only where it has not met its test by then
(or ran away sooner) is its rest whitened by the curvature there, by |-H|
(:func:`advi.curvature.saddle_free`) where -H is not positive definite (a regression on an
uncentred predictor, far from its mode: -H indefinite, its eigenvalues 1e-2 .. 1e9). Up to
``hessian_max_dim`` a stage also ends when its gradient runs away (:data:`advi.lbfgs.RUNAWAY`).
Where a whitened stage stopped short of its test before its step cap (ran away, or found
no step: its line search met non-finite values or no increase) and -H is not positive
definite there (a centred hierarchy's funnel: its log density is not concave in a group
effect and the log scale jointly), no later stage runs and the start is refused; Lanczos
in the stage's whitened coordinates (:func:`advi.lanczos.curves_upward`) shows that
from a few gradients before -H is formed.

Up to ``hessian_max_dim`` -H is formed by ``precision`` where a stage met its test (a
candidate mode) and where a start is to be accepted; elsewhere (the first stage's
whitening, a stage that ended short) by central differences of the compiled gradient
(:func:`advi.curvature.central_differences`, 2K gradients, no compile), unless the exact
-H's program has run already (E1 at seed 1: 1.67 s of differences against 0.13 s). A
fit's ``precision`` is itself those differences where 2K gradients are cheap
(:func:`advi.curvature.cheaper_precision`), else the exact Hessian (reverse over reverse).

Above ``hessian_max_dim`` the second stage is whitened by one common scale and stops when
every gradient coordinate times that scale is below MODE_SD_TOL / 10 (the first stage's
relative test alone stops L-BFGS far short of the mode in 10,000 dimensions), or when it
stalls after :data:`STALL_AFTER_STEPS`, log p rising by less than :data:`GAIN_RTOL` of
itself over :data:`advi.lbfgs.GAIN_WINDOW` iterations (on a factorisation L-BFGS moves the
means along ridges where ADVI's diagonal steps crawl: :data:`SEARCH_MAX_STEPS`); every
coordinate of q starts at that scale, 1 / sqrt(median_k d_k), where d is Hutchinson's (1990)
estimate of the diagonal of -H from :data:`CURVATURE_PROBES` Rademacher probes
(:func:`common_scale`): each d_k alone is too noisy (a factorisation's off-diagonal
curvature swamps it), their median places q's scales at the posterior's typical one.

The start is refused (``ok`` False; the caller falls back to its usual start) where -H is
not positive definite, or the Newton step (-H)^-1 grad exceeds :data:`MODE_SD_TOL` Laplace
sds (sqrt((-H)^-1_kk)) on some coordinate (scale-free, unlike a gradient norm): a funnel's
mode, which runs off to a boundary, fails both. Above ``hessian_max_dim`` a stage's test
met, or ||grad|| <= GRAD_RTOL max(1, |log p|) where it ended, accepts it; a search that
found no step (:class:`advi.lbfgs.Search`'s ``failed``: log p rising without bound, as
down a funnel's neck) refuses it. Measurements: benchmarks/README.md, "Measurements behind
the library's defaults"."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
from jax import Array
from jax.typing import ArrayLike

from . import curvature
from .curvature import newton_sd, times, whitening
from .families import Family, FullRankParams, MeanFieldParams
from .lanczos import curves_upward
from .lbfgs import RUNAWAY, HostSearch, Search, find_mode, mode_search, run_search
from .spread import inflation

LAPLACE_MAX_STEPS = 1300
"""L-BFGS iterations allowed for the mode by the host's search (K <= ``hessian_max_dim``),
over all stages: the mixture of Figure 1 (a Dirichlet(10,000) weight) needs about 400."""

SEARCH_MAX_STEPS = 5000
"""L-BFGS iterations allowed by the compiled search (K > ``hessian_max_dim``) over all stages:
on the paper's factorisations L-BFGS climbs long after its gradient test holds, along ridges
where ADVI's diagonal steps crawl; a stage ends sooner when it stalls (:data:`GAIN_RTOL`)."""

HESSIAN_MAX_DIM = 2000
"""Largest K whose Hessian is formed for the initial scales (K^2 floats, K gradients)."""

GRAD_RTOL = 1e-3
"""The first stage stops when ||grad|| <= GRAD_RTOL * max(1, |log p|)."""

GAIN_RTOL = 5e-4
"""Above ``hessian_max_dim`` a stage also ends when log p rose by less than GAIN_RTOL |log p|
over the last :data:`advi.lbfgs.GAIN_WINDOW` iterations: a late stall costs a few hundred
L-BFGS steps, an early one thousands of ADVI iterations (benchmarks/README.md)."""

STALL_AFTER_STEPS = 1000
"""A stage's stall test (:data:`GAIN_RTOL`) starts after this many iterations: a mixture's
search crosses plateaus for hundreds of steps before it climbs by tens of thousands of
nats, and robust ADVI stays where a stall ends it (benchmarks/README.md)."""

LAPLACE_STAGES = 2
"""L-BFGS runs, each after the first whitened by the curvature where the last ended."""

LAPLACE_EXTRA_STAGES = 2
"""Whitened stages the host's search may add where the last met its test, or stopped short of
it where -H is positive definite, but -H there is not definite or the Newton step is above
:data:`MODE_SD_TOL`: data near 1e4 with flat priors meet the relative test far from the
mode; an uncentred trend's stage, whitened far off, runs away (gradient grown 100-fold as
sigma falls) a few sds from its mode."""

CURVATURE_PROBES = 8
"""Rademacher probes of the common start scale above ``hessian_max_dim`` (each a central
difference of the gradient along it)."""

UNWHITENED_STEPS_PER_DIM = 0.5
"""The host's first stage runs unwhitened for up to this many steps per dimension K, and forms
the curvature that whitens its rest only where it has not met its test by then (-H by
differences: 2K gradients): a well-posed start pays for none (benchmarks/README.md)."""

MODE_SD_TOL = 0.1
"""The mode is accepted when the Newton step |((-H)^-1 g)_k| is below this many Laplace
standard deviations sqrt((-H)^-1_kk) on every coordinate."""


class LaplaceStart(NamedTuple):
    """What :func:`laplace_start` returns.

    Attributes:
        params: the family's parameters (valid where ``ok``), host arrays of zeta0's dtype.
        ok: bool, True when the mode was found and its curvature is usable.
        steps: int, L-BFGS iterations used.
        grad_norm: float, ||grad log p|| at the returned point.
        sd: (K,) float64 on the host, q's marginal standard deviations at the start.
        log_p: float, log p (nats) at the returned point.
        newton_sd: float, the largest Newton step |((-H)^-1 g)_k| there in Laplace sds (inf
            where -H is not positive definite or not formed).
        nonfinite: bool, the host's search met a non-finite log p or gradient at a point
            it tried (float32 overflow, or a Cholesky factor that float32 cannot form).
        inflation: (K,) :func:`advi.spread.inflation` at an accepted mean-field start.
    """

    params: Any
    ok: bool
    steps: int
    grad_norm: float
    sd: np.ndarray
    log_p: float = float("nan")
    newton_sd: float = float("inf")
    nonfinite: bool = False
    inflation: np.ndarray | None = None


class LogDensityFunctions(NamedTuple):
    """The compiled pieces the Laplace start calls, each taking the data as an argument.

    Attributes:
        value_and_grad: ``(zeta (K,), data) -> (log p (), grad (K,))``.
        precision: ``(zeta (K,), data) -> -Hessian (K, K)``, or None (no Hessian formed).
        search: the compiled L-BFGS of :func:`advi.lbfgs.mode_search`, ``(base (K,), scale
            (), max_steps () int32, abs_tol (), data) -> Search``, which the stages use in
            place of the host's :func:`advi.lbfgs.find_mode` where ``precision`` is None
            (above ``hessian_max_dim``); or None (the host's).
    """

    value_and_grad: Callable[[ArrayLike, Any], tuple[Array, Array]]
    precision: Callable[[ArrayLike, Any], Array] | None
    search: Callable[..., Search] | None = None


def log_density_functions(log_density: Callable[[Array, Any], Array], dim: int,
                          hessian_max_dim: int = HESSIAN_MAX_DIM) -> LogDensityFunctions:
    """Jitted :class:`LogDensityFunctions` of ``log_density(zeta, data) -> ()`` (not yet
    compiled: the first call, or ``.lower(...).compile()``, compiles them). Above
    ``hessian_max_dim`` they carry the compiled L-BFGS search in place of the Hessian."""
    value_and_grad = jax.jit(jax.value_and_grad(log_density))
    if dim > hessian_max_dim:
        return LogDensityFunctions(value_and_grad, None, jax.jit(mode_search(
            log_density, GRAD_RTOL, GAIN_RTOL, STALL_AFTER_STEPS)))
    # reverse over the jitted gradient (the model traced once for both): faster per call than
    # jax.hessian's jacfwd(jacrev) (benchmarks/README.md)
    def precision(zeta: Array, data: Any) -> Array:
        return -jax.jacrev(lambda z: value_and_grad(z, data)[1])(zeta)

    return LogDensityFunctions(value_and_grad, jax.jit(precision))


def common_scale(fns: LogDensityFunctions, mode: np.ndarray, data: Any, dtype: Any,
                 probes: int = CURVATURE_PROBES) -> float:
    """The common start scale of the module docstring, 1 / sqrt(median_k d_k) (a float, in
    zeta units), d Hutchinson's estimate of -H's diagonal by differences of the compiled
    gradient (:func:`advi.curvature.hutchinson_diagonal`); 1.0 where ``fns`` has no
    compiled search (K <= ``hessian_max_dim``: the Hessian scales q there) or the median
    is not positive and finite. The probes are drawn from a fixed seed: the same mode gives
    the same scale."""
    if fns.search is None:
        return 1.0
    signs = np.random.default_rng(0).integers(0, 2, size=(probes, mode.size))
    d = curvature.hutchinson_diagonal(lambda z: fns.value_and_grad(z, data)[1], mode,
                                      2.0 * signs - 1, dtype)
    median = float(np.median(d))
    return 1 / math.sqrt(median) if math.isfinite(median) and median > 0 else 1.0


def _host(fn: Callable, data: Any, dtype: Any) -> Callable[[np.ndarray], Any]:
    """``fn(zeta, data)`` for a host search, its outputs fetched in one wait (device_get)."""
    return lambda zeta: jax.device_get(fn(_cast(zeta, dtype), data))


def _cast(x: Any, dtype: Any) -> np.ndarray:
    """``x`` as a NumPy array of ``dtype`` (``jnp.asarray`` would compile a program)."""
    return np.asarray(x, dtype)


class _Staged(NamedTuple):
    mode: np.ndarray  # (K,) float64
    precision: np.ndarray | None  # -H there, or None
    scale: float  # the common scale (1.0 where there is a Hessian or no diagonal estimate)
    steps: int  # over all stages
    reached: bool  # some stage ended with its gradient test met
    refused: bool = False  # no mode to find: no later stage ran
    nonfinite: bool = False  # a host stage met non-finite values


def _staged_mode(fns: LogDensityFunctions, zeta0: np.ndarray, data: Any, dtype: Any,
                 max_steps: int) -> _Staged:
    """The stages of the module docstring."""
    value_and_grad = _host(fns.value_and_grad, data, dtype)
    zeta, precision, scale, steps = np.asarray(zeta0, np.float64), None, 1.0, 0
    reached = nonfinite = exact = short = formed = False
    stages = LAPLACE_STAGES if fns.precision is not None or fns.search is not None else 1
    stage = -1  # the planned stages, then while _another_stage
    while (stage := stage + 1) < stages or _another_stage(
            fns, zeta, precision, exact or short, stage, max_steps - steps, data, dtype):
        cap = max_steps // stages if stage < stages - 1 else max_steps - steps
        abs_tol, refused, short = (MODE_SD_TOL / 10 if stage > 0 else 0.0), False, False
        if fns.search is not None:
            shift, met, used, refused = run_search(fns.search, zeta, scale, cap, abs_tol, data,
                                                   dtype)
            zeta = zeta + scale * shift
        else:
            found, whiten = (_first_host_stage(fns, zeta, cap, data, dtype) if stage == 0 else
                             _host_stage(value_and_grad, zeta, precision, cap, abs_tol))
            zeta, met, used = found[:3]
            short = not met and (found.ran_away or used < cap)  # ran away, or could not step
            nonfinite = nonfinite or found.nonfinite
        steps, reached = steps + used, reached or met
        if refused or (short and not formed and fns.precision is not None and curves_upward(
                lambda z: fns.value_and_grad(z, data)[1], zeta, whiten, dtype)):
            return _Staged(zeta, None, scale, steps, False, True, nonfinite)
        if fns.precision is not None:
            exact = met  # a candidate mode; elsewhere -H by differences compiles nothing,
            formed = formed or exact  # unless the exact -H's program has run already
            precision = (_precision if formed else _differenced)(fns, zeta, data, dtype)
            if short and not whitening(precision, zeta.size)[1]:
                break  # stopped short where -H is not definite: no mode to find
        elif fns.search is not None:
            scale = common_scale(fns, zeta, data, dtype)
    if precision is not None and not formed and whitening(precision, zeta.size)[1]:
        precision = _precision(fns, zeta, data, dtype)  # a start to accept: the exact -H
    return _Staged(zeta, precision, scale, steps, reached, nonfinite=nonfinite)


def _another_stage(fns: LogDensityFunctions, zeta: np.ndarray, precision: np.ndarray | None,
                   ended: bool, stage: int, left: int, data: Any, dtype: Any) -> bool:
    """Whether another whitened stage runs (:data:`LAPLACE_EXTRA_STAGES`) after one that
    ``ended`` (met its test, or stopped short where -H is definite) short of the mode."""
    if not ended or precision is None or left <= 0 or (
            stage >= LAPLACE_STAGES + LAPLACE_EXTRA_STAGES):
        return False
    definite, steps_sd, _ = newton_sd(precision, np.asarray(
        fns.value_and_grad(_cast(zeta, dtype), data)[1], np.float64))
    return not (definite and float(np.max(steps_sd)) < MODE_SD_TOL)


def _precision(fns: LogDensityFunctions, zeta: np.ndarray, data: Any, dtype: Any
               ) -> np.ndarray:
    """-H at zeta, (K, K) float64, symmetrised (``fns.precision`` must be set)."""
    assert fns.precision is not None
    precision = np.asarray(fns.precision(_cast(zeta, dtype), data), np.float64)
    return 0.5 * (precision + precision.T)


def _differenced(fns: LogDensityFunctions, zeta: np.ndarray, data: Any, dtype: Any
                 ) -> np.ndarray:
    """-H at zeta, (K, K) float64, by central differences of the compiled gradient
    (:func:`advi.curvature.central_differences`)."""
    return curvature.central_differences(lambda z: fns.value_and_grad(z, data)[1], zeta,
                                         dtype)


def _host_stage(value_and_grad: Callable, zeta: np.ndarray, precision: np.ndarray | None,
                cap: int, abs_tol: float) -> tuple[HostSearch, np.ndarray]:
    """One stage of the host's search from ``zeta`` in coordinates whitened by
    ``precision`` (:func:`advi.curvature.whitening`): :class:`advi.lbfgs.HostSearch` with
    ``zeta`` where it ended (zeta-space), and the whitening C."""
    whiten = whitening(precision, zeta.size)[0]
    found = find_mode(_whitened(value_and_grad, zeta, whiten), np.zeros_like(zeta), cap,
                      GRAD_RTOL, abs_tol, RUNAWAY)
    return found._replace(zeta=zeta + times(whiten, found.zeta)), whiten


def _first_host_stage(fns: LogDensityFunctions, zeta: np.ndarray, cap: int, data: Any,
                      dtype: Any) -> tuple[HostSearch, np.ndarray]:
    """The first stage on the host (as :func:`_host_stage`) and the whitening it ended in:
    unwhitened for up to :data:`UNWHITENED_STEPS_PER_DIM` K steps; where that ended short
    of its test (ran away, found no step, or used its steps), its rest whitened by
    :func:`_differenced` -H there (or |-H|): unwhitened, a gradient's growth is no sign of
    a funnel."""
    value_and_grad = _host(fns.value_and_grad, data, dtype)
    rental = cap if fns.precision is None else min(
        cap, math.ceil(UNWHITENED_STEPS_PER_DIM * zeta.size))
    first, none = _host_stage(value_and_grad, zeta, None, rental, 0.0)
    if first.converged or first.steps >= cap or fns.precision is None:
        return first, none
    rest, whiten = _host_stage(value_and_grad, first.zeta,
                               _differenced(fns, first.zeta, data, dtype), cap - first.steps, 0.0)
    return rest._replace(steps=first.steps + rest.steps,
                         nonfinite=first.nonfinite or rest.nonfinite), whiten


def _whitened(value_and_grad: Callable, base: np.ndarray, whiten: np.ndarray) -> Callable:
    """``u -> (log p, C^T grad)`` at zeta = base + C u, on the host."""

    def whitened(u: np.ndarray) -> Any:
        value, grad = value_and_grad(base + times(whiten, u))
        with np.errstate(all="ignore"):  # non-finite draws end the search in find_mode
            return value, times(whiten, np.asarray(grad, np.float64), transpose=True)

    return whitened


def laplace_start(
    fns: LogDensityFunctions,
    family: Family,
    zeta0: ArrayLike,
    data: Any = None,
    *,
    max_steps: int | None = None,
) -> LaplaceStart:
    """The Laplace start of the module docstring (runs on the host; not jit-compatible).

    Args:
        fns: the target's :func:`log_density_functions` (``precision`` None: the common
            scale from ``diagonal``, or 1 without it).
        family: the variational family whose parameters to build.
        zeta0: (K,) float, where L-BFGS starts; its dtype is the parameters' dtype.
        data: the second argument of ``fns``' functions (the model's arrays).
        max_steps: L-BFGS iteration bound (over all stages); None: :data:`LAPLACE_MAX_STEPS`
            for the host's search, :data:`SEARCH_MAX_STEPS` for the compiled one.

    Returns:
        :class:`LaplaceStart`.
    """
    dtype = np.asarray(zeta0).dtype  # jnp.result_type would read this thread's x64 flag
    if max_steps is None:
        max_steps = LAPLACE_MAX_STEPS if fns.search is None else SEARCH_MAX_STEPS
    mode, precision, common, steps, reached, refused, nonfinite = _staged_mode(
        fns, np.asarray(zeta0), data, dtype, max_steps)
    value, grad = (np.asarray(a, np.float64)
                   for a in fns.value_and_grad(_cast(mode, dtype), data))
    grad_norm, dim = float(np.linalg.norm(grad)), mode.shape[-1]
    sd, scale, newton, spread = np.ones(dim), None, np.inf, None  # scale: full-rank's factor
    if precision is None:
        ok = bool(np.all(np.isfinite(grad)) and np.isfinite(value) and not refused and (
            reached or grad_norm <= GRAD_RTOL * max(1.0, abs(float(value)))))
        if ok:
            sd = np.full(dim, common)
    else:
        definite, steps_sd, marginal = newton_sd(precision, grad)
        newton = float(np.max(steps_sd)) if np.all(np.isfinite(steps_sd)) else np.inf
        ok = definite and newton < MODE_SD_TOL
        diag, spread = np.diagonal(precision), inflation(marginal, precision) if ok else None
        sd = 1 / np.sqrt(np.where(np.isfinite(diag) & (diag > 0), diag, 1.0))
        if definite and family.name == "fullrank":
            whiten, _ = whitening(precision, dim)
            scale = np.linalg.cholesky(whiten @ whiten.T)
            sd = np.sqrt(np.sum(scale**2, axis=1))
    mu = _cast(mode, dtype)
    if family.name == "fullrank":
        scale = np.diag(sd) if scale is None else scale
        return LaplaceStart(FullRankParams(mu, _cast(scale, dtype)), ok, steps, grad_norm, sd,
                            float(value), newton, nonfinite)
    return LaplaceStart(MeanFieldParams(mu, _cast(np.log(sd), dtype)), ok, steps, grad_norm, sd,
                        float(value), newton, nonfinite, spread)

"""advi.fit: ADVI from a model to a fitted approximation, with Stan's algorithm or ours.

``preset="stan"`` (the default) is Algorithm 1 of the paper with Stan's refinements
(``stan/variational/advi.hpp``): the eta search of :func:`advi.eta_search.adapt_eta`, the step-size
sequence of :mod:`advi.step_size`, the relative-ELBO test of :mod:`advi.convergence`.
``preset="robust"`` is the library's own algorithm (:mod:`advi.presets`): Laplace start,
preconditioned Adam steps, a stationarity test and iterate averaging (:mod:`advi.robust`).
Both run the compiled functions of :mod:`advi.compiled` in the one main loop of
:mod:`advi.driver`, with their own stopping rule and restart policy.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import jax.numpy as jnp
import numpy as np
from jax import Array

from . import precision, robust, streaming
from .cache import enable_default_cache
from .checks import FELL_BACK_NOTE, end_of_fit_warnings
from .chunk import host_chunk_len
from .compiled import CompiledADVI, CompileSpec
from .convergence import RelativeELBORule
from .driver import MAX_ITER_PREFIX, Clock, Outcome, StoppingRule, drive, warn
from .eta_search import STAN_POLICY, adapt_eta
from .families import get_family
from .keys import raw_key
from .options import Options
from .presets import PRESETS, resolve
from .progress import Progress
from .result import (
    ADVIResult,
    Approximation,
    CheckpointInfo,
)
from .step import ADVIState
from .step_size import get_optimizer
from .target import Target, from_numpyro
from .whitening import checked_fullrank

logger = logging.getLogger("advi")

def fit(
    model: Callable | Target,
    *model_args: Any,
    rng_key: Array,
    preset: str | Options = "stan",
    model_kwargs: dict[str, Any] | None = None,
    checkpoint: Callable[[CheckpointInfo], bool | None] | None = None,
    clock: Clock = time.perf_counter,
    progress_bar: bool | None = None,
    **options: Any,
) -> ADVIResult:
    """Fit a Gaussian approximation in the unconstrained space by ADVI (paper Algorithm 1).

    Args:
        model: a NumPyro model (called as ``model(*model_args, **model_kwargs)``) or a
            :class:`advi.Target` (e.g. from :func:`advi.from_log_density`).
        model_args: the model's positional arguments (the data). An argument (positional
            or keyword) wrapped in :func:`advi.stream` is read from the host a pool of rows
            at a time, never held whole (:mod:`advi.streaming`; needs ``minibatch_size``).
        rng_key: a JAX PRNG key, raw (``jax.random.PRNGKey(seed)``) or typed
            (``jax.random.key(seed)``); the same key gives the same result on the same
            machine.
        preset: "stan" (Stan's ADVI, the paper's algorithm; the default) or "robust" (this
            library's: Laplace start, preconditioned Adam, split-R-hat stop and iterate
            averaging; :mod:`advi.presets`), or an :class:`advi.Options`. Options given
            explicitly override the preset.
        model_kwargs: the model's keyword arguments, kept apart from the options so that a
            model keyword can never be taken for an option (as NumPyro's ``SVI.run``).
        checkpoint: ``hook(info: CheckpointInfo) -> bool | None`` called every
            ``checkpoint_every`` iterations (robust preset: at the end of the first chunk
            of ``eval_elbo`` iterations past each multiple), before the first of those at
            log-spaced ones (:func:`advi.driver.checkpoint_due`), and once at the end; its
            time is excluded from the reported seconds; returning True stops the fit
            ("stopped by checkpoint"). The checkpoints change nothing in the fit.
        clock: ``() -> seconds`` behind every reported time (compile_s, adapt_s, wall_s);
            ``time.perf_counter`` unless a test injects a fake one.
        progress_bar: a tqdm bar of the main loop (iterations of ``max_iter``, the ELBO,
            the stopping statistic; :mod:`advi.progress`): None (the default) shows it
            where standard error is an interactive terminal, True anywhere, False never.
        **options: any of :data:`advi.presets.OPTIONS`, defaults in :data:`advi.PRESETS`:
            family ("meanfield" or "fullrank"); grad_samples (M, draws per gradient);
            elbo_samples (draws per ELBO estimate, Stan: 100); eta (step-size scale; None
            runs Stan's search over 100, 10, 1, 0.1, 0.01); adapt_iter (iterations per eta
            in the search); tol_rel_obj (relative-ELBO tolerance, Stan: 0.01);
            eval_elbo (iterations between ELBO estimates, or between stationarity checks);
            max_iter; minibatch_size (B, paper Section 2.6; None for all data);
            minibatch_plate (the data plate; None: the only plate, or "data");
            checkpoint_every (default eval_elbo); init ("random": mu ~ N(0, I), "zero",
            "stan": U(-2, 2)); optimizer ("stan", an optax name or transform);
            khat_samples (draws for Pareto k-hat, 0 skips); start ("init" or "laplace");
            stop ("relative_elbo" or "rhat"); precondition (scale mean steps by q's sd);
            fullrank_max_dim (largest K for family="fullrank", default 5,000);
            laplace_starts (L-BFGS starts of the Laplace start, default 5;
            :mod:`advi.multistart`).

    Returns:
        :class:`ADVIResult`; ``convergence_reason`` says which rule stopped the run.

    Raises:
        ValueError: for invalid arguments, unknown options, non-finite data, an empty
            latent space or a full-rank q beyond ``fullrank_max_dim`` (naming the value and
            the bytes needed), before any compilation.
        ADVIError: when the eta search fails, or when non-finite draws persist at the
            smallest eta; ``err.result`` keeps the last finite state and its history.

    Non-finite draws are redrawn (at most 10 M per gradient); when that budget runs out the
    run restarts with a smaller eta from the last state whose ELBO estimate was finite,
    with a warning, instead of stopping as Stan does.

    At the end, checks that need no reference posterior (:mod:`advi.checks`: the ELBO's
    gradient at the returned mean against its Monte Carlo noise, Pareto k-hat, a mean that
    never left its start) warn with a ``RuntimeWarning`` naming the likely cause and the
    remedy (standardise the data, float64, another start; running longer, where the
    gradient's check fires after a stop by the ELBO rule or max_iter), also kept in
    ``result.warnings``; minibatched fits are not checked. The robust preset also warns where
    its ELBO settled while q still travels (:data:`advi.stationarity.TRAVEL_SD`).

    The first fit of a process turns on JAX's persistent compilation cache unless the user
    configured it or set ``ADVI_COMPILATION_CACHE=0`` (:mod:`advi.cache`).
    """
    o = resolve(preset, options)
    rng_key = raw_key(rng_key)
    name = preset if isinstance(preset, str) else None
    with precision.scope(o.dtype):
        begun = _begin(model, model_args, model_kwargs, o, rng_key, clock)
    info = begun.start_info
    shortfall = precision.float32_shortfall(o.dtype, info.resolution, bool(info.laplace),
                                            info.log_p_spacing)
    again = functools.partial(_in_float64, model, model_args, model_kwargs, o, rng_key, clock)
    if shortfall is not None:
        begun = again(begun, shortfall)
    doubtful = functools.partial(precision.float32_doubt, o.dtype, begun.promoted,
                                 info.nonfinite)
    with warnings.catch_warnings(record=True) as caught:  # kept unless the fit is redone
        warnings.simplefilter("always")
        result = _finish_in_scope(begun, o, checkpoint, clock, progress_bar, name)
    notes = tuple(n for n in result.warnings if not n.startswith(FELL_BACK_NOTE))
    doubt = doubtful(notes, result.redraws, bool(result.restarts), bool(info.laplace) and all(
        n.startswith(MAX_ITER_PREFIX) for n in notes))
    if doubt is None or not precision.carries_float64(
            begun.compiled.target, result.approximation.sample_zeta(begun.keys[2], 2)):
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return result
    begun = again(begun, doubt, spent=result)
    return _finish_in_scope(begun, o, checkpoint, clock, progress_bar, name)


def _in_float64(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
                o: Options, rng_key: Array, clock: Clock, begun: _Begun, reason: str,
                spent: ADVIResult | None = None) -> _Begun:
    """The fit begun again in float64 because ``reason`` (``dtype="auto"``); its seconds
    add those of ``begun`` and, where a float32 fit ``spent`` was run and discarded, its
    compilation and wall time (so that the new fit's times continue from it)."""
    logger.info("%s: the fit runs again in float64 (dtype='auto')", reason)
    with precision.scope("float64"):
        again = _begin(model, model_args, model_kwargs, o, rng_key, clock)
    compile_s = begun.compile_s + again.compile_s
    start_s = begun.start_s + again.start_s
    if spent is not None:
        compile_s, start_s = compile_s + spent.compile_s - begun.compile_s, start_s + (
            spent.wall_s - begun.start_s)
    return again._replace(compile_s=compile_s, start_s=start_s, promoted=reason)


def _finish_in_scope(begun: _Begun, o: Options, checkpoint: Callable | None, clock: Clock,
                     progress_bar: bool | None, preset: str | None) -> ADVIResult:
    """:func:`_finish` in the precision of the begun fit's parameters, with its bar; a
    streamed fit's reader is closed at the end (:mod:`advi.streaming`)."""
    try:
        with precision.scope_of(begun.state0.params), Progress(progress_bar,
                                                               o.max_iter) as bar:
            return _finish(begun, o, checkpoint, clock, bar, preset=preset)
    finally:
        if isinstance(begun.compiled, streaming.StreamedADVI):
            begun.compiled.close()


class _Begun(NamedTuple):
    """A fit up to its main loop: the compiled functions, keys (adapt, run, elbo), the
    initial state, how it was chosen, and seconds of compilation and of the start; where
    ``dtype="auto"`` refitted in float64, why (:func:`advi.precision.float32_shortfall`;
    else None)."""

    compiled: CompiledADVI
    keys: tuple[Array, Array, Array]
    state0: ADVIState
    start_info: Any
    compile_s: float
    start_s: float
    promoted: str | None = None


def _begin(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
           o: Options, rng_key: Array, clock: Clock) -> _Begun:
    """The target, its compiled functions and the start, in JAX's current default float."""
    stream = None
    if streaming.is_streamed(model_args, model_kwargs):
        target, stream = streaming.streamed_target(model, model_args, model_kwargs, o, rng_key)
    else:
        target = _target(model, model_args, model_kwargs, o)
    _check_size(target, o)
    opt = get_optimizer(o.optimizer)
    enable_default_cache()
    begun = clock()
    compiled = _compile(target, o, opt, stream)
    start = clock()
    logger.info("compiled in %.1f s", start - begun)
    compiled.use_clock(clock)  # the start's Hessian compiles on first need: compile_s
    before = compiled.lazy_compile_s
    keys, state0, start_info = compiled.setup(rng_key, extra_starts=o.laplace_starts - 1)
    lazy = compiled.lazy_compile_s - before
    start_s = clock() - start - lazy
    _report_start(o, start_info, start_s)
    return _Begun(compiled, keys, state0, start_info, start - begun + lazy, start_s)


def _finish(begun: _Begun, o: Options, checkpoint: Callable | None, clock: Clock,
            progress: Progress, *, preset: str | None) -> ADVIResult:
    """The eta search (where eta is None), the main loop and the end-of-fit checks; the
    result records ``preset``, the preset's name (None: an :class:`advi.Options`)."""
    compiled, state0, start_info = begun.compiled, begun.state0, begun.start_info
    adapt_key, run_key, elbo_key = begun.keys
    compiled.use_clock(clock)  # what compiles on first need is compile_s, not wall_s
    start, compiled_s = clock(), compiled.lazy_compile_s
    eta_adapted = o.eta is None
    # from the Laplace mode no eta may improve on the initial q: the robust preset's eta
    default = PRESETS["robust"].eta if start_info.laplace else None
    eta = (adapt_eta(compiled, state0, adapt_key, o.adapt_iter, default) if o.eta is None
           else o.eta)
    adapt_s = begun.start_s + clock() - start - (compiled.lazy_compile_s - compiled_s)
    result = _run(compiled, state0, float(eta), o, run_key=run_key, elbo_key=elbo_key,
                  burn_in=not start_info.scaled, checkpoint=checkpoint, clock=clock,
                  wall_s=adapt_s, progress=progress, result_fields=dict(
                      compile_s=begun.compile_s, adapt_s=adapt_s, eta_adapted=eta_adapted,
                      start=_start_name(o, start_info, begun.promoted), preset=preset))
    result = dataclasses.replace(
        result, compile_s=result.compile_s + compiled.lazy_compile_s - compiled_s)
    if o.family == "fullrank":
        result = checked_fullrank(result, state0.params if start_info.laplace else None)
    fell_back = (result.start if o.start == "laplace" and not bool(start_info.laplace)
                 else None)
    start_mu = None if bool(start_info.laplace) else state0.params.mu
    return _checked(result, compiled, start_mu, fell_back, elbo_key)


def _checked(result: ADVIResult, compiled: CompiledADVI, start_mu: Array | None,
             fell_back: str | None, elbo_key: Array) -> ADVIResult:
    """``result`` with the end-of-fit checks' warnings (:mod:`advi.checks`) issued and
    appended to ``warnings``."""
    notes = end_of_fit_warnings(result, compiled, start_mu, fell_back, elbo_key)
    if not notes:
        return result
    for note in notes:
        warn(note)
    return dataclasses.replace(result, warnings=(*result.warnings, *notes))


def _compile(target: Target, o: Options, opt: Any, stream: streaming.Stream | None = None
             ) -> CompiledADVI:
    """The fit's compiled functions (start, iterations, ELBO) for options ``o``, compiled
    now (``jax.jit(...).lower(...).compile()``) unless the in-process cache has them; with
    a ``stream``, reading a new pool of rows for each call (:mod:`advi.streaming`)."""
    logger.info("compiling the start, iteration and ELBO functions ...")
    spec = CompileSpec(
        family=get_family(o.family), optimizer=o.optimizer,
        grad_samples=cast(int, o.grad_samples),  # resolve() turns None into the family's M
        elbo_samples=o.elbo_samples, init=o.init, laplace=o.start == "laplace",
        precondition=o.precondition, moments=o.stop == "rhat",
        chunk_len=host_chunk_len(o.eval_elbo, cast(int, o.grad_samples), target.dim)
        if o.stop == "rhat" else 0,
    )
    if stream is None:
        return CompiledADVI(target, spec, opt)
    return streaming.StreamedADVI(target, spec, opt, stream)


def _report_start(o: Options, start_info: Any, seconds: float) -> None:
    """Logs how the fit started and warns with what the extra Laplace starts found when
    they found a rival mode (:mod:`advi.multistart`)."""
    if o.start == "laplace":
        logger.info("start: %s after %d L-BFGS steps (%.2f s)",
                    "Laplace" if bool(start_info.laplace) else "random (no usable mode)",
                    int(start_info.steps), seconds)
    if start_info.note is not None:
        logger.info("start: %s", start_info.note)
        if start_info.warn:
            warnings.warn(start_info.note, RuntimeWarning, stacklevel=3)


def _target(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
            o: Options) -> Target:
    if isinstance(model, Target):
        if o.minibatch_size is not None:
            raise ValueError(
                "minibatch_size applies to NumPyro models only; a Target's log density "
                "does its own subsampling"
            )
        return model
    return from_numpyro(model, model_args, model_kwargs, minibatch_size=o.minibatch_size,
                        minibatch_plate=o.minibatch_plate)


def _check_size(target: Target, o: Options) -> None:
    """Refuse, before any allocation, a latent space of size 0 and a full-rank q too large."""
    dim = target.dim
    if dim == 0:
        raise ValueError("the model's latent sites have 0 unconstrained dimensions (every "
                         "latent site is empty): there is nothing to infer")
    if o.family == "fullrank" and dim > o.fullrank_max_dim:
        gib = dim * dim * np.dtype(jnp.result_type(float)).itemsize / 2**30
        raise ValueError(
            f"family='fullrank' with K={dim} latent dimensions needs a {dim}x{dim} Cholesky "
            f"factor: {gib:.2f} GiB for L alone, and as much again for its gradient and each "
            f"optimiser moment; above fullrank_max_dim={o.fullrank_max_dim} use "
            "family='meanfield' (or raise fullrank_max_dim)"
        )


def _start_name(o: Options, info: Any, promoted: str | None = None) -> str:
    """``ADVIResult.start``: how q started, and why the fit ran in float64 where it was
    promoted."""
    if o.start != "laplace":
        return f"init={o.init}"
    if bool(info.laplace):
        name = f"laplace ({int(info.steps)} L-BFGS steps)"
    else:
        name = f"init={o.init} (no usable mode after {int(info.steps)} L-BFGS steps)"
    if promoted is None:
        return name
    return f"{name}; float64 ({promoted})"


def _khat_weights(compiled: CompiledADVI, params: Any, elbo_key: Array, khat_samples: int
                  ) -> Callable[[], np.ndarray] | None:
    """A function drawing log p - log q of ``khat_samples`` draws from q (on first use of
    the result's ``khat_log_weights``), or None (skipped, or minibatched)."""
    if khat_samples == 0 or compiled.target.num_data is not None:
        return None

    def log_weights() -> np.ndarray:
        calls = -(-khat_samples // compiled.elbo_samples)
        return np.concatenate(
            [compiled.elbo(params, elbo_key, -1 - i)[1] for i in range(calls)]
        )[:khat_samples]

    return log_weights


def _run(compiled: CompiledADVI, state0: ADVIState, eta: float, o: Options, *,
         run_key: Array, elbo_key: Array, burn_in: bool, checkpoint: Callable | None,
         clock: Clock, wall_s: float, progress: Progress, result_fields: dict[str, Any]
         ) -> ADVIResult:
    """The main loop (:func:`advi.driver.drive`) with the preset's stopping rule and
    restart policy, and its :class:`ADVIResult`."""
    checkpoint_every = o.checkpoint_every or o.eval_elbo
    # the robust stop's unit is its chunk of eval_elbo iterations, whatever the checkpoints
    # (its moments and ELBO are per chunk); Stan's rule reads the ELBO every eval_elbo
    # iterations however the run is cut
    rhat = o.stop == "rhat"
    chunk_len = o.eval_elbo if rhat else math.gcd(o.eval_elbo, checkpoint_every)
    rule: StoppingRule
    if rhat:
        rule = robust.StationarityRule(chunk_len, burn_in, o.max_iter, o.tol_rel_obj)
        policy = robust.POLICY
    else:
        rule, policy = RelativeELBORule(compiled, elbo_key, state0, tol_rel_obj=o.tol_rel_obj,
                                        eval_elbo=o.eval_elbo, max_iter=o.max_iter), STAN_POLICY

    def make_result(out: Outcome, final: bool) -> ADVIResult:
        khat = _khat_weights(compiled, out.params, elbo_key, o.khat_samples) if final else None
        return ADVIResult(
            approximation=Approximation(compiled.family, out.params, compiled.target),
            eta=out.eta, converged=out.converged, convergence_reason=out.reason,
            num_iterations=int(out.state.iteration), elbo_history=out.history,
            wall_s=out.wall_s, khat_weights_fn=khat, restarts=out.restarts,
            warnings=out.notes, redraws=int(out.state.redraws), **result_fields)

    return drive(compiled, state0, eta, rule=rule, policy=policy, run_key=run_key,
                 chunk_len=chunk_len, max_iter=o.max_iter, checkpoint_every=checkpoint_every,
                 checkpoint=checkpoint, clock=clock, wall_s=wall_s, make_result=make_result,
                 progress=progress)

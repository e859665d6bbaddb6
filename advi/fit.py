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
from collections.abc import Callable
from typing import Any

import numpy as np
from jax import Array

from . import anneal, precision, robust, streaming
from .begin import Begun, begin, float64_probes, in_float64, start_name
from .checks import FELL_BACK_NOTE, STUCK_NOTE, end_of_fit_warnings
from .compiled import CompiledADVI
from .convergence import RelativeELBORule
from .driver import MAX_ITER_PREFIX, Clock, Outcome, StoppingRule, drive, emitted, recorded, warn
from .eta_search import STAN_POLICY, adapt_eta
from .host import one_blas_thread
from .importance import khat_weights
from .keys import raw_key
from .options import Options
from .presets import PRESETS, resolve
from .progress import Progress
from .refit import ELBO_SALT
from .result import ADVIError, ADVIResult, Approximation, CheckpointInfo
from .spread import SPREAD_NOTE, SpreadWarning, fitted_inflation, spread_note
from .step import ADVIState
from .target import Target
from .whitening import checked_fullrank

logger = logging.getLogger("advi")


@one_blas_thread
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
            laplace_starts (L-BFGS starts of the Laplace start, default 9;
            :mod:`advi.multistart`).

    Returns:
        :class:`ADVIResult`; ``convergence_reason`` says which rule stopped the run.

    Raises:
        ValueError: for invalid arguments, unknown options, non-finite data, an empty
            latent space or a full-rank q beyond ``fullrank_max_dim`` (naming the value and
            the bytes needed), before any compilation.
        ADVIError: when the eta search fails, or when non-finite draws persist at the
            smallest eta; ``err.result`` keeps the last finite state and its history. With
            ``dtype="auto"`` a float32 fit that raises it runs again in float64
            (:func:`advi.precision.float32_failure`), which raises in its turn.

    Non-finite draws are redrawn (at most 10 M per gradient); when that budget runs out the
    run restarts with a smaller eta from the last state whose ELBO estimate was finite,
    with a warning, instead of stopping as Stan does.

    At the end, checks that need no reference posterior (:mod:`advi.checks`: the ELBO's
    gradient at the returned mean against its Monte Carlo noise, Pareto k-hat, a mean that
    never left its start) warn with a ``RuntimeWarning`` naming the likely cause and the
    remedy (standardise the data, float64, another start; running longer, where the
    gradient's check fires after a stop by the ELBO rule or max_iter), also kept in
    ``result.warnings``; a minibatched fit has the gradient check alone (a minibatch per
    pair of draws), a streamed fit none. The robust preset also warns where
    its ELBO settled while q still travels (:data:`advi.stationarity.TRAVEL_SD`).

    Where the Laplace start was refused and the fit from the random start warned, the
    Laplace start runs again from that fit's mean where log p there is above where the
    refused search ended, else from a mode plain L-BFGS reaches from that end
    (:mod:`advi.refit`); where it is accepted the fit runs again from it. Where the
    Laplace start was accepted but the stopping rule ended the fit from it far from the
    optimum (the gradient check flagged most coordinates: q stuck, as on a
    stochastic volatility model whose search ended in a funnel's neck), the fit runs
    again from the initial q; so too where that fit raised :class:`ADVIError`, and then
    the fit from the initial q is returned (or raises). Of two fits the one with the
    larger ELBO (on common draws) is returned with its own warnings, its ``wall_s`` and
    ``compile_s`` counting both fits; the checkpoint hook sees both fits, and its last
    call is the returned q.

    The first fit of a process turns on JAX's persistent compilation cache unless the user
    configured it or set ``ADVI_COMPILATION_CACHE=0`` (:mod:`advi.cache`).
    """
    o = resolve(preset, options, streamed=streaming.is_streamed(model_args, model_kwargs))
    rng_key = raw_key(rng_key)
    name = preset if isinstance(preset, str) else None
    with precision.scope(o.dtype):
        begun = begin(model, model_args, model_kwargs, o, rng_key, clock)
    info = begun.start_info
    shortfall = precision.float32_shortfall(o.dtype, info.resolution, bool(info.laplace),
                                            info.log_p_spacing, info.failing, begun.compiled.target)
    again = functools.partial(in_float64, model, model_args, model_kwargs, o, rng_key, clock)
    if shortfall is not None:
        begun = again(begun, shortfall)
    doubtful = functools.partial(precision.float32_doubt, o.dtype, begun.promoted,
                                 info.nonfinite)
    # the warnings are kept unless the fit is redone
    try:
        result, caught = recorded(_finish_in_scope, begun, o, checkpoint, clock, progress_bar,
                                   name)
    except ADVIError as err:
        failed = precision.float32_failure(o.dtype, begun.promoted, err)
        if failed is None or not precision.carries_float64(
                begun.compiled.target, float64_probes(begun, err.result)):
            raise
        return _finish_in_scope(again(begun, failed, spent=err.result), o, checkpoint, clock,
                                progress_bar, name)
    notes = tuple(n for n in result.warnings if not n.startswith((FELL_BACK_NOTE, SPREAD_NOTE)))
    doubt = doubtful(notes, result.redraws, bool(result.restarts), bool(info.laplace) and all(
        n.startswith(MAX_ITER_PREFIX) for n in notes))
    if doubt is None or not precision.carries_float64(
            begun.compiled.target, result.approximation.sample_zeta(begun.keys[2], 2)):
        return emitted(caught, result)
    begun = again(begun, doubt, spent=result)
    return _finish_in_scope(begun, o, checkpoint, clock, progress_bar, name)


def _finish_in_scope(begun: Begun, o: Options, checkpoint: Callable | None, clock: Clock,
                     progress_bar: bool | None, preset: str | None) -> ADVIResult:
    """:func:`_finish` in the precision of the begun fit's parameters, each run with its bar;
    where the Laplace start was refused and the fit warned, the fit from a second start
    (:mod:`advi.refit`) if its ELBO is larger; a streamed fit's reader is closed at the end
    (:mod:`advi.streaming`)."""
    finish = functools.partial(_finish_with_bar, o=o, checkpoint=checkpoint, clock=clock,
                               progress_bar=progress_bar, preset=preset)
    try:
        with precision.scope_of(begun.state0.params):
            if not _laplace_on_all_data(begun, o):
                return finish(begun)
            try:
                first, caught = recorded(finish, begun)
            except ADVIError as err:  # from the Laplace start: once more from the initial q
                if not bool(begun.start_info.laplace):
                    raise
                logger.info("the fit from the Laplace start failed (%s); it runs again from "
                            "the initial q", err)
                return finish(_from_initial_q(begun, err.result))
            again, first = _second_begun(begun, first, clock)
            if again is None:
                return emitted(caught, first)
            try:
                second, caught_again = recorded(finish, again)
            except ADVIError as err:  # the first fit stands, with its own warnings
                logger.info("the fit from the second start failed: %s", err)
                return emitted(caught, first)
            return _larger_elbo(begun, (first, caught), (second, caught_again), checkpoint)
    finally:
        if isinstance(begun.compiled, streaming.StreamedADVI):
            begun.compiled.close()


def _laplace_on_all_data(begun: Begun, o: Options) -> bool:
    """Whether the fit has the Laplace start and all the data (not minibatched or streamed):
    where a second start may follow (:func:`_second_begun`)."""
    return (o.start == "laplace" and begun.compiled.target.num_data is None
            and not isinstance(begun.compiled, streaming.StreamedADVI))


def _second_begun(begun: Begun, result: ADVIResult, clock: Clock
                  ) -> tuple[Begun | None, ADVIResult]:
    """The second start after the fit ``result`` (each with ``result`` as it then stands), or
    None: where the Laplace start was refused and the fit warned, from the mode found from
    the fit's mean (:func:`_started_again`); where it was accepted and its stopping rule
    ended the fit far from the optimum in most coordinates (:data:`advi.checks.STUCK_NOTE`:
    stuck, not cut short by ``max_iter`` or the checkpoint hook), from the initial q."""
    if not bool(begun.start_info.laplace):
        return _started_again(begun, result, clock) if result.warnings else (None, result)
    if not (result.converged and any(n.startswith(STUCK_NOTE) for n in result.warnings)):
        return None, result
    logger.info("the fit from the Laplace start stopped before the optimum; it runs again "
                "from the initial q")
    return _from_initial_q(begun, result), result


def _from_initial_q(begun: Begun, spent: ADVIResult | None) -> Begun:
    """``begun`` again from the initial q (the random start) after the fit ``spent`` from
    the Laplace start did not reach the optimum, its times continuing ``spent``'s (where
    given: an :class:`ADVIError`'s ``result`` may be None)."""
    info = begun.start_info._replace(laplace=False, again=True, scaled=False)
    again = begun._replace(state0=begun.compiled.initial_state(), start_info=info)
    return again if spent is None else again._replace(compile_s=spent.compile_s,
                                                      start_s=spent.wall_s)


def _finish_with_bar(begun: Begun, *, o: Options, checkpoint: Callable | None, clock: Clock,
                     progress_bar: bool | None, preset: str | None) -> ADVIResult:
    with Progress(progress_bar, o.max_iter) as bar:
        return _finish(begun, o, checkpoint, clock, bar, preset=preset)


def _started_again(begun: Begun, result: ADVIResult, clock: Clock
                   ) -> tuple[Begun | None, ADVIResult]:
    """The fit begun again from :meth:`advi.compiled.CompiledADVI.second_start` at
    ``result``'s q, its times continuing ``result``'s, or None; and ``result`` with the
    search's seconds added (its wall time and compilation)."""
    compiled = begun.compiled
    compiled.use_clock(clock)
    start, lazy = clock(), compiled.lazy_compile_s
    found = compiled.second_start(result.params, begun.start_info.log_p)
    lazy = compiled.lazy_compile_s - lazy
    result = dataclasses.replace(result, wall_s=result.wall_s + clock() - start - lazy,
                                 compile_s=result.compile_s + lazy)
    if found is None:
        logger.info("a second start from the fit's mean found no usable mode")
        return None, result
    state0, laplace = found
    info = begun.start_info._replace(laplace=True, again=True,
                                     steps=begun.start_info.steps + laplace.steps,
                                     grad_norm=laplace.grad_norm, scaled=True)
    logger.info("the fit starts again from the mode %d L-BFGS steps from its mean",
                laplace.steps)
    return begun._replace(state0=state0, start_info=info, compile_s=result.compile_s,
                          start_s=result.wall_s), result


def _larger_elbo(begun: Begun, first: tuple[ADVIResult, list], second: tuple[ADVIResult, list],
                 checkpoint: Callable | None) -> ADVIResult:
    """Of the fits from the first start and from the second (each with the warnings it
    issued), the one whose ELBO on common draws (:data:`advi.refit.ELBO_SALT`) is larger,
    with the second's (the later) times; its warnings issued. Where that is the first, the
    checkpoint hook is called once more with it, so that its last call is the returned q."""
    elbo = [begun.compiled.elbo(fit[0].params, begun.keys[2], ELBO_SALT)[0]
            for fit in (first, second)]
    logger.info("ELBO from the first start %.6g, from the second %.6g", *elbo)
    kept_first = elbo[1] < elbo[0]
    result, caught = first if kept_first else second
    result = dataclasses.replace(result, wall_s=second[0].wall_s,
                                 compile_s=second[0].compile_s)
    if kept_first and checkpoint is not None:
        checkpoint(CheckpointInfo(result.num_iterations, result.wall_s, elbo[0],
                                  result.approximation))
    return emitted(caught, result)


def _finish(begun: Begun, o: Options, checkpoint: Callable | None, clock: Clock,
            progress: Progress, *, preset: str | None) -> ADVIResult:
    """:func:`_finish_once`, and where the gradient check finds its stop short of the
    optimum, its continuation at a smaller eta (:mod:`advi.anneal`)."""
    first, caught = recorded(_finish_once, begun, o, checkpoint, clock, progress, preset)
    if not anneal.wanted(first, o):
        return emitted(caught, first)
    again, smaller = anneal.continued(begun, first, o)
    return anneal.joined(first, _finish_once(again, smaller, checkpoint, clock, progress,
                                             preset))


def _finish_once(begun: Begun, o: Options, checkpoint: Callable | None, clock: Clock,
                 progress: Progress, preset: str | None) -> ADVIResult:
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
                      start=start_name(o, start_info, begun.promoted), preset=preset))
    result = dataclasses.replace(
        result, compile_s=result.compile_s + compiled.lazy_compile_s - compiled_s)
    if o.family == "fullrank":
        result = checked_fullrank(result, state0.params if start_info.laplace else None)
    fell_back = (result.start if o.start == "laplace" and not bool(start_info.laplace)
                 else None)
    start_mu = None if bool(start_info.laplace) else (
        state0.params.mu if begun.origin is None else begun.origin)
    spread = fitted_inflation(start_info.inflation, lambda: compiled.curvature(
        np.asarray(result.approximation.params.mu)))
    return _checked(result, compiled, start_mu, fell_back, elbo_key,
                    spread_note(spread, getattr(compiled.target.numpyro, "unravel", None)))


def _checked(result: ADVIResult, compiled: CompiledADVI, start_mu: Array | None,
             fell_back: str | None, elbo_key: Array, spread: str | None) -> ADVIResult:
    """``result`` with the end-of-fit checks' warnings (:mod:`advi.checks`) and the
    ``spread`` note (:mod:`advi.spread`) issued and appended to ``warnings``."""
    notes = end_of_fit_warnings(result, compiled, start_mu, fell_back, elbo_key)
    notes += [spread] if spread else []
    if not notes:
        return result
    for note in notes:
        warn(note, SpreadWarning if note == spread else RuntimeWarning)
    return dataclasses.replace(result, warnings=(*result.warnings, *notes))


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
        rule = robust.StationarityRule(chunk_len, burn_in, o.max_iter, o.tol_rel_obj,
                                       elbo_test=compiled.target.num_data is None)
        policy = robust.POLICY
    else:
        rule, policy = RelativeELBORule(compiled, elbo_key, state0, tol_rel_obj=o.tol_rel_obj,
                                        eval_elbo=o.eval_elbo, max_iter=o.max_iter), STAN_POLICY

    def make_result(out: Outcome, final: bool) -> ADVIResult:
        khat = khat_weights(compiled, out.params, elbo_key, o.khat_samples) if final else None
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

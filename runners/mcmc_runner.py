"""NUTS and static HMC under the timing protocol, run in jitted chunks.

NumPyro's functional API (``initialize_model`` and ``numpyro.infer.hmc.hmc``) gives the
kernel; a loop of up to ``checkpoint_every`` transitions is compiled once, ahead of time
(its compile seconds are reported apart), and run with the clock on. Between chunks the clock
stops, the chunk's draws are scored on the held-out data and a trace row is written.

Budget: a run stops once its clock reaches ``budget_s``. The first transition runs alone and
gives the seconds per transition and per leapfrog step; after it, a chunk that would run past
the budget is cut to the transitions the remaining seconds afford at that rate
(:func:`affordable`), and the compiled loop also stops once its leapfrog steps reach what
the remaining seconds afford at the measured seconds per step. The run is scored and ends
there, so it overshoots its budget by about one transition, not one chunk (two minutes for
NUTS on the factorisations at paper scale; on the smoke ones, whose early warmup
transitions grow from a few leapfrog steps to 2^depth - 1, 20-30 s on a 3-s budget when the
rate of the first transitions was trusted). NUTS stops after the transition that reaches
the step limit (its next transition's steps are unknown, at most 2^depth - 1). Static HMC
needs more care: a transition takes int(trajectory_length / step_size) leapfrog steps,
unbounded when warmup shrinks the step size (as on the factorisation and mixture models,
where one transition can take hours), so its loop stops *before* any transition whose
leapfrog steps, known from the state before it runs, would take the run past its budget; the
run then ends there (``stop_reason`` in ``info.json``). HMC's seconds per step are first
timed on the model's gradient (:func:`seconds_per_gradient`), as its first transition may
already be too long.

Starting point (``method.init``): Stan's U(-2, 2) in zeta-space, or the mean of a quick
mean-field ADVI fit (Stan's defaults), whose optimisation seconds start the chain's clock and
whose compilation counts with the chain's (``init_s`` and ``compile_s`` in ``info.json``).

Held-out score at a checkpoint (*choice*, documented in the report):
- sampling phase: all post-warmup draws so far, a running log-mean-exp per held-out point
  (the paper's "posterior samples plugged into the likelihood");
- warmup phase: the draws of that warmup chunk alone, i.e. where the adapting chain is now,
  so the figure shows warmup's progress too. ``phase`` in the trace tells them apart.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import hmc
from numpyro.infer.initialization import init_to_uniform, init_to_value
from numpyro.infer.util import initialize_model

import advi
from advi_repro.planning.methods import McmcConfig, NutsConfig
from advi_repro.runners import stan_hmc
from advi_repro.runners.checkpoint import record_checkpoint
from advi_repro.runners.mcmc_chunks import (
    affordable,
    chunk_plan,
    make_chunk,
    next_num_steps,
    seconds_per_gradient,
)
from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.scoring import LogLikelihood, RunningLogMeanExp
from advi_repro.runners.stopwatch import Stopwatch
from advi_repro.runners.trace import TraceWriter

logger = logging.getLogger(__name__)


def starting_point(model: Callable[..., None], train: dict[str, Any], init: str,
                   rng_key: jax.Array, *, clock: Callable[[], float] = time.perf_counter
                   ) -> tuple[Callable[..., Any], float, float]:
    """NumPyro init strategy for ``init`` (``uniform`` or ``advi``), with the seconds spent
    finding the point on ``clock`` (``() -> seconds``, as ``advi.fit``'s): (strategy,
    optimisation seconds, compile seconds); zeros for ``uniform``, NumPyro's
    ``init_to_uniform`` (radius 2, Stan's)."""
    if init == "uniform":
        return init_to_uniform(radius=2.0), 0.0, 0.0
    if init != "advi":
        raise ValueError(f"init = {init!r}: must be 'uniform' or 'advi'")
    with jax.enable_x64(False):  # ADVI in its own float32, whatever the chain's precision
        fit = advi.fit(model, rng_key=rng_key, khat_samples=0, model_kwargs=train,
                       clock=clock, progress_bar=False)
    logger.info("init: ADVI's mean after %d iterations (%.2f s, %s)",
                fit.num_iterations, fit.wall_s, fit.convergence_reason)
    values = {name: jnp.asarray(value, jnp.result_type(float))
              for name, value in fit.approximation.mean().items()}
    return init_to_value(values=values), float(fit.wall_s), float(fit.compile_s)


@dataclass
class _Chain:
    """A chain being run: its state, its compiled chunk, its clock (``init_s`` of it spent
    finding the starting point), whether it is static HMC, its seconds per leapfrog step
    (None until known) and total steps so far, why it stopped early (None: it did not)
    and, where HMC stopped before a transition it could not afford, that transition's
    forecast seconds."""

    state: Any
    chunk: Callable[..., Any]
    clock: Stopwatch
    init_s: float
    is_hmc: bool
    step_s: float | None
    first_i: int
    steps: float = 0.0
    stop_reason: str | None = None
    next_transition_s: float | None = None


def _start_chain(model: Callable[..., None], train: dict[str, Any], method: McmcConfig,
                 rng_key: jax.Array, clock: Callable[[], float]
                 ) -> tuple[_Chain, Callable[[Any], Any], dict[str, float]]:
    """The chain at its starting point with its chunk compiled and its stopwatch on
    ``clock``; the function from its draws (S, unconstrained) to constrained draws; and
    ``compile_s, init_s, init_compile_s`` (seconds on ``clock``)."""
    setup_start = clock()
    init_key, chain_key = jax.random.split(rng_key)
    stopwatch = Stopwatch(clock)
    init_strategy, init_s, init_compile_s = starting_point(model, train, method.init, init_key,
                                                           clock=clock)
    stopwatch.add(init_s)
    is_nuts = isinstance(method, NutsConfig)
    compile_start = clock()
    logger.info("compiling the %s kernel and a chunk of up to %d transitions ...",
                "NUTS" if is_nuts else "HMC", method.checkpoint_every)
    # a batch of one key: NumPyro then searches the initial point in one compiled loop
    # instead of running the model op by op (each op a separate compilation, ~7 s per run)
    model_info = initialize_model(init_key[None], model, model_kwargs=train,
                                  dynamic_args=False, init_strategy=init_strategy)
    param_info = jax.tree.map(lambda x: x[0], model_info.param_info)
    if is_nuts:
        init_kernel, sample_kernel = hmc(potential_fn=model_info.potential_fn, algo="NUTS")
        algo_kwargs = {"max_tree_depth": method.max_tree_depth}
    else:  # NumPyro's kernel with Stan's start of warmup (runners/stan_hmc.py)
        init_kernel, sample_kernel = stan_hmc.static_hmc(model_info.potential_fn,
                                                         method.trajectory_length)
        algo_kwargs = {}
    state = jax.jit(functools.partial(
        init_kernel,
        num_warmup=method.num_warmup,
        target_accept_prob=method.target_accept_prob,
        dense_mass=method.dense_mass,
        adapt_mass_matrix=method.adapt_mass_matrix,
        **algo_kwargs,
    ))(param_info, rng_key=chain_key)
    run_chunk = jax.jit(
        make_chunk(sample_kernel, capacity=method.checkpoint_every, forecast=not is_nuts))
    step_s = None if is_nuts else seconds_per_gradient(model_info.potential_fn, state.z,
                                                       clock=clock)
    chunk = run_chunk.lower(state, np.int32(0), np.float32(0)).compile()
    jax.block_until_ready(state)
    logger.info("compiled in %.1f s", clock() - compile_start)
    setup = {"compile_s": clock() - setup_start - init_s, "init_s": init_s,
             "init_compile_s": init_compile_s}
    chain = _Chain(state=state, chunk=chunk, clock=stopwatch, init_s=init_s,
                   is_hmc=not is_nuts, step_s=step_s, first_i=int(state.i))
    return chain, jax.jit(jax.vmap(model_info.postprocess_fn)), setup


def _run_piece(chain: _Chain, wanted: int, budget_s: float) -> tuple[Any, int]:
    """One compiled call of up to ``wanted`` transitions, clock on, cut to what the budget
    affords (:func:`affordable`, and the leapfrog steps at the seconds per step so far;
    HMC's stop before a transition it cannot afford is recorded in ``chain.stop_reason``).
    Returns the records of the transitions made and their count."""
    clock = chain.clock
    remaining_s = max(budget_s - clock.elapsed_s, 0.0)
    step_limit = np.inf if chain.step_s is None else remaining_s / chain.step_s
    todo = affordable(wanted, remaining_s, clock.elapsed_s - chain.init_s,
                       int(chain.state.i) - chain.first_i)
    with clock.running():
        chain.state, count, records = chain.chunk(chain.state, np.int32(todo),
                                                  np.float32(step_limit))
        jax.block_until_ready(chain.state)
    count = int(count)
    records = jax.tree.map(lambda r: np.asarray(r)[:count], records)
    chain.steps += float(np.sum(records[3]))
    if chain.steps:
        chain.step_s = (clock.elapsed_s - chain.init_s) / chain.steps
    if chain.is_hmc and count < wanted and clock.elapsed_s < budget_s:
        needed = float(next_num_steps(chain.state))
        remaining_s = max(budget_s - clock.elapsed_s, 0.0)
        if count == 0 or needed * chain.step_s > remaining_s:
            chain.next_transition_s = needed * chain.step_s
            chain.stop_reason = (
                f"the next HMC transition needed {needed:.3g} leapfrog steps (step size "
                f"{float(chain.state.adapt_state.step_size):.3g}), about "
                f"{needed * chain.step_s:.3g} s, past the budget of {budget_s:g} s")
    return records, count


def _chunks(chain: _Chain, method: McmcConfig, budget_s: float
            ) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Runs the chain chunk by chunk (:func:`chunk_plan`), yielding ``(phase, (zs,
    diverging, accept_prob, num_steps))`` per checkpoint: the chunk's transitions, or the
    initial point as one draw (accept_prob 0) when the first chunk made none. Ends after
    the chunk that set ``chain.stop_reason`` (budget, HMC's step limit)."""
    total = method.num_warmup + method.num_samples
    yielded = False
    for phase, length in chunk_plan(method.num_warmup, method.num_samples,
                                    method.checkpoint_every):
        pieces, done = [], 0
        while (done < length and chain.stop_reason is None
               and not (done and chain.clock.elapsed_s >= budget_s)):
            records, count = _run_piece(chain, length - done, budget_s)
            pieces.append(records)
            done += count
        zs, diverging, accept_prob, num_steps = jax.tree.map(
            lambda *parts: np.concatenate(parts), *pieces)
        if done == 0:
            if yielded:
                return
            zs = jax.tree.map(lambda x: np.asarray(x)[None], chain.state.z)
            accept_prob = np.zeros(1)
        if (chain.stop_reason is None and chain.clock.elapsed_s >= budget_s
                and int(chain.state.i) < total):
            chain.stop_reason = f"the budget of {budget_s:g} s was reached"
        yield phase, (zs, diverging, accept_prob, num_steps)
        yielded = True
        if chain.stop_reason is not None:
            return


def _in_sampler_precision(run: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``run(model, train, method, **kwargs)`` in float64 for static HMC (as Stan's double:
    from a far start, E1's 2 pi trajectories reach log alpha ~ -100 to -700, where float32's
    exp underflows and the energy is NaN; float64 keeps them finite and accepted), in the
    default precision for NUTS."""

    @functools.wraps(run)
    def wrapped(model: Callable[..., None], train: dict[str, Any], method: McmcConfig,
                **kwargs: Any) -> dict[str, Any]:
        if isinstance(method, NutsConfig):
            return run(model, train, method, **kwargs)
        with jax.enable_x64(True):
            return run(model, train, method, **kwargs)

    return wrapped


@_in_sampler_precision
def run_mcmc(
    model: Callable[..., None],
    train: dict[str, Any],
    method: McmcConfig,
    *,
    rng_key: jax.Array,
    budget_s: float,
    log_likelihood: LogLikelihood,
    trace: TraceWriter,
    posterior_mean: PosteriorMean | None = None,
    stop: Callable[[], str | None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Runs one chain of NUTS (``NutsConfig``) or static HMC (``HmcConfig``) in chunks.

    Args:
        model: the NumPyro model; ``train`` its keyword data.
        method: the sampler's settings.
        rng_key: split into the initialisation key and the chain's key.
        budget_s: stop at the first checkpoint at or past this many sampling seconds (HMC:
            also before a transition that would run past it, see the module's docstring).
        log_likelihood: draws -> held-out log-likelihoods (S, N).
        trace: where checkpoint rows go (``phase, accept_prob, divergences, step_size``).
            If HMC cannot make a single transition within the budget, the only row is
            iteration 0, the initial point scored as one draw.
        posterior_mean: if given, rewritten at every checkpoint with the mean of the draws
            that the checkpoint scored (all post-warmup draws so far, or the warmup chunk's).
        stop: asked after every checkpoint; a reason (not None) stops the chain there
            (:class:`advi_repro.runners.interrupt.StopRequest`).
        clock: ``() -> seconds`` behind the budget, the seconds per leapfrog step and every
            reported time (``wall_s``, ``compile_s``, ``init_s``, ``checkpoint_s``; an ADVI
            start is fitted on it too); ``time.perf_counter``, tests inject a fake one.

    Returns:
        The run's facts for ``info.json``: iterations, divergences and acceptance rate after
        warmup, final step size, compile seconds, seconds spent at checkpoints (scoring,
        writing: ``checkpoint_s``), why it stopped early (``stop_reason``) and, for HMC's
        stop before a transition it could not afford, that transition's forecast seconds
        (``next_transition_s``; None otherwise): the same chain under a budget smaller
        than ``wall_s + next_transition_s`` stops at the same point.
    """
    chain, constrain, setup = _start_chain(model, train, method, rng_key, clock)
    checkpoints = _Checkpoints(chain, method, constrain, log_likelihood=log_likelihood,
                               trace=trace, posterior_mean=posterior_mean)
    checkpoint_s = 0.0
    for phase, records in _chunks(chain, method, budget_s):
        start = clock()
        checkpoints.record(phase, records)
        checkpoint_s += clock() - start
        why = chain.stop_reason or (stop() if stop is not None else None)
        if why is not None:
            logger.info("%s: stopping after %d iterations (%s)", checkpoints.name,
                        int(chain.state.i), why)
            break
    return _facts(chain, method, checkpoints.tally, {**setup, "checkpoint_s": checkpoint_s})


class _Checkpoints:
    """A chain's checkpoints: each scores its draws, writes its files
    (:func:`record_checkpoint`, given ``log_likelihood, trace, posterior_mean`` as
    ``outputs``) and logs a line. Sampling's draws join ``posterior`` (every post-warmup
    draw so far) and ``tally``; a warmup chunk's are scored alone."""

    def __init__(self, chain: _Chain, method: McmcConfig, constrain: Callable[[Any], Any],
                 **outputs: Any) -> None:
        self.chain, self.method, self.constrain, self.outputs = chain, method, constrain, outputs
        self.name = "nuts" if isinstance(method, NutsConfig) else "hmc"
        self.posterior, self.tally = RunningLogMeanExp(), _Tally()

    def record(self, phase: str, records: tuple[Any, ...]) -> None:
        """Records the checkpoint after a chunk of ``phase`` (:func:`_chunks`' records)."""
        zs, diverging, accept_prob, num_steps = records
        chain, tally, sampling = self.chain, self.tally, phase == "sampling"
        fresh = not sampling or tally.num_post == 0
        if sampling:
            tally.add(diverging, accept_prob, num_steps)
        step_size = float(chain.state.adapt_state.step_size)
        lpd = record_checkpoint(
            self.constrain(zs), iteration=int(chain.state.i), wall_s=chain.clock.elapsed_s,
            phase=phase, scores=self.posterior if sampling else RunningLogMeanExp(),
            fresh=fresh, **self.outputs,
            columns={"phase": phase, "accept_prob": float(np.mean(accept_prob)),
                     "divergences": tally.divergences, "step_size": step_size})
        logger.info("%s iteration %d/%d (%s): accept %.3f, step size %.3g, divergences %d, "
                    "heldout_lpd %.4f, %.2f s", self.name, int(chain.state.i),
                    self.method.num_warmup + self.method.num_samples, phase,
                    float(np.mean(accept_prob)), step_size, tally.divergences, lpd,
                    chain.clock.elapsed_s)


def _facts(chain: _Chain, method: McmcConfig, tally: _Tally, seconds: dict[str, float]
           ) -> dict[str, Any]:
    """What ``info.json`` records of a finished chain (``seconds``: ``compile_s, init_s,
    init_compile_s, checkpoint_s``)."""
    return {
        "iterations": int(chain.state.i),
        "num_warmup_done": min(int(chain.state.i), method.num_warmup),
        "num_samples_done": tally.num_post,
        "wall_s": chain.clock.elapsed_s,
        **seconds,
        "init": method.init,
        "stopped_by_budget": chain.stop_reason is not None,
        "stop_reason": chain.stop_reason,
        "next_transition_s": chain.next_transition_s,
        **tally.facts(),
        "step_size": float(chain.state.adapt_state.step_size),
    }


class _Tally:
    """Post-warmup transitions so far: count, divergences, acceptance and leapfrog steps."""

    def __init__(self) -> None:
        self.num_post = self.divergences = 0
        self.accept_sum = self.steps_sum = 0.0

    def add(self, diverging: np.ndarray, accept_prob: np.ndarray, num_steps: np.ndarray
            ) -> None:
        """Adds a chunk's transitions (one entry each)."""
        self.num_post += len(diverging)
        self.divergences += int(np.sum(diverging))
        self.accept_sum += float(np.sum(accept_prob))
        self.steps_sum += float(np.sum(num_steps))

    def facts(self) -> dict[str, Any]:
        """``divergences``, ``accept_rate`` and ``mean_num_steps`` for ``info.json``."""
        n = self.num_post
        return {"divergences": self.divergences,
                "accept_rate": self.accept_sum / n if n else None,
                "mean_num_steps": self.steps_sum / n if n else None}

"""ADVI under the timing protocol: ``advi.fit`` with a checkpoint hook that scores q.

At every checkpoint (``checkpoint_every`` iterations, log-spaced ones before the first of
those, and at the end) the hook draws S
= ``eval_draws`` samples from the current q, scores them on the held-out data, writes a trace
row (and, if asked, the mean of those draws, :mod:`advi_repro.runners.posterior`) and asks
``advi.fit``
to stop once the clock has passed the budget. ``advi.fit`` stops its own clock while the
hook runs, so ``wall_s`` counts optimisation only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

import advi
from advi_repro.planning.methods import AdviConfig
from advi_repro.runners.checkpoint import record_checkpoint
from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.scoring import LogLikelihood, RunningLogMeanExp
from advi_repro.runners.trace import TraceWriter

logger = logging.getLogger(__name__)


def run_advi(
    model: Callable[..., None],
    train: dict[str, Any],
    method: AdviConfig,
    *,
    rng_key: jax.Array,
    budget_s: float,
    log_likelihood: LogLikelihood,
    trace: TraceWriter,
    posterior_mean: PosteriorMean | None = None,
    stop: Callable[[], str | None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Fits q by ADVI, writing one trace row per checkpoint.

    Args:
        model: the NumPyro model; ``train`` its keyword data (an ``np.memmap`` among them
            is streamed from the host, ``advi.stream``: data larger than memory).
        method: ADVI's settings.
        rng_key: split into the fit's key and the key of the held-out draws.
        budget_s: stop at the first checkpoint at or past this many optimisation seconds.
        log_likelihood: draws -> held-out log-likelihoods (S, N).
        trace: where checkpoint rows go (columns ``elbo`` besides the common ones).
        posterior_mean: if given, rewritten at every checkpoint with the mean of that
            checkpoint's S draws (E_q[theta], Monte Carlo).
        stop: asked after every checkpoint; a reason (not None) stops the fit there
            (:class:`advi_repro.runners.interrupt.StopRequest`).
        clock: ``() -> seconds`` behind ``wall_s``, ``compile_s`` and ``checkpoint_s``
            (``time.perf_counter``; tests inject a fake one).

    Returns:
        The run's facts for ``info.json``: iterations, convergence, eta, compile seconds,
        seconds spent at checkpoints (drawing, scoring, writing: ``checkpoint_s``).
    """
    fit_key, eval_key = jax.random.split(rng_key)
    # a memory map (a model's load with stream=True) is read a pool of rows at a time
    train = {name: advi.stream(value) if isinstance(value, np.memmap) else value
             for name, value in train.items()}
    checkpoint = _Checkpoint(method, eval_key, budget_s, log_likelihood, trace,
                             posterior_mean, stop, clock)
    result = advi.fit(
        model,
        rng_key=fit_key,
        preset=method.preset,
        model_kwargs=train,
        checkpoint=checkpoint,
        clock=clock,
        progress_bar=False,  # the job logs its checkpoints instead
        **method.options(),  # checkpoint_every among them
    )
    return run_facts(result, checkpoint_s=checkpoint.seconds,
                     stopped_by_budget=checkpoint.over_budget and not result.converged)


class _Checkpoint:
    """``advi.fit``'s checkpoint callback for :func:`run_advi`: draws S = ``eval_draws``
    from q, scores and records them, and says whether to stop (the budget reached or a stop
    requested). ``seconds``: the time spent here, by ``clock``."""

    def __init__(self, method: AdviConfig, eval_key: jax.Array, budget_s: float,
                 log_likelihood: LogLikelihood, trace: TraceWriter,
                 posterior_mean: PosteriorMean | None,
                 stop: Callable[[], str | None] | None, clock: Callable[[], float]) -> None:
        self.method, self.eval_key, self.budget_s = method, eval_key, budget_s
        self.log_likelihood, self.trace, self.posterior_mean = log_likelihood, trace, posterior_mean
        self.stop, self.clock = stop, clock
        self.over_budget = False
        self.seconds = 0.0

    def __call__(self, info: Any) -> bool:
        self.over_budget = info.wall_s >= self.budget_s
        start = self.clock()
        draws = info.sample(jax.random.fold_in(self.eval_key, info.iteration),
                            self.method.eval_draws)
        lpd = record_checkpoint(
            draws, iteration=info.iteration, wall_s=info.wall_s, phase="advi",
            scores=RunningLogMeanExp(), fresh=True, log_likelihood=self.log_likelihood,
            trace=self.trace, posterior_mean=self.posterior_mean, columns={"elbo": info.elbo})
        self.seconds += self.clock() - start
        logger.info("checkpoint at iteration %d: heldout_lpd %.4f (S = %d draws from q), "
                    "%.2f s", info.iteration, lpd, self.method.eval_draws, info.wall_s)
        return self.over_budget or (self.stop is not None and self.stop() is not None)


def run_facts(result: advi.ADVIResult, *, checkpoint_s: float, stopped_by_budget: bool
              ) -> dict[str, Any]:
    """What ``info.json`` records of an ADVI fit: iterations, seconds (clock, compiling,
    checkpoints), how it stopped, eta, Pareto k-hat, warnings, its start and redraws."""
    return {
        "iterations": int(result.num_iterations),
        "wall_s": float(result.wall_s),
        "compile_s": float(result.compile_s),
        "checkpoint_s": checkpoint_s,
        "converged": bool(result.converged),
        "convergence_reason": str(result.convergence_reason),
        "stopped_by_budget": stopped_by_budget,
        "eta": float(result.eta),
        "pareto_khat": None if result.pareto_khat is None else float(result.pareto_khat),
        "warnings": list(result.warnings),
        "start": result.start,
        "redraws": result.redraws,
    }

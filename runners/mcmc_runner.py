"""NUTS and static HMC under the timing protocol, run in jitted chunks.

NumPyro's functional API (``initialize_model`` and ``numpyro.infer.hmc.hmc``) gives the
kernel; a ``lax.scan`` over ``checkpoint_every`` transitions is compiled ahead of time (its
compile seconds are reported apart) and run with the clock on. Between chunks the clock
stops, the chunk's draws are scored on the held-out data and a trace row is written.

Held-out score at a checkpoint (*choice*, documented in the report):
- sampling phase: all post-warmup draws so far, a running log-mean-exp per held-out point
  (the paper's "posterior samples plugged into the likelihood");
- warmup phase: the draws of that warmup chunk alone, i.e. where the adapting chain is now,
  so the figure shows warmup's progress too. ``phase`` in the trace tells them apart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
from numpyro.infer.hmc import hmc
from numpyro.infer.util import initialize_model

from .config import McmcConfig, NutsConfig
from .scoring import LogLikelihood, RunningLogMeanExp, score_draws
from .stopwatch import Stopwatch
from .trace import TraceWriter

logger = logging.getLogger(__name__)


def chunk_plan(num_warmup: int, num_samples: int, every: int) -> Iterator[tuple[str, int]]:
    """(phase, length) of the chunks: ``every`` transitions each, none straddling warmup's end.

    Example: ``chunk_plan(120, 100, 50)`` gives warmup 50, 50, 20, then sampling 50, 50.
    """
    for phase, total in (("warmup", num_warmup), ("sampling", num_samples)):
        for start in range(0, total, every):
            yield phase, min(every, total - start)


def run_mcmc(
    model: Callable[..., None],
    train: dict[str, Any],
    method: McmcConfig,
    *,
    rng_key: jax.Array,
    budget_s: float,
    log_likelihood: LogLikelihood,
    trace: TraceWriter,
) -> dict[str, Any]:
    """Runs one chain of NUTS (``NutsConfig``) or static HMC (``HmcConfig``) in chunks.

    Args:
        model: the NumPyro model; ``train`` its keyword data.
        method: the sampler's settings.
        rng_key: split into the initialisation key and the chain's key.
        budget_s: stop at the first checkpoint at or past this many sampling seconds.
        log_likelihood: draws -> held-out log-likelihoods (S, N).
        trace: where checkpoint rows go (``phase, accept_prob, divergences, step_size``).

    Returns:
        The run's facts for ``info.json``: iterations, divergences and acceptance rate after
        warmup, final step size, compile seconds.
    """
    setup_start = time.perf_counter()
    init_key, chain_key = jax.random.split(rng_key)
    model_info = initialize_model(init_key, model, model_kwargs=train, dynamic_args=False)
    is_nuts = isinstance(method, NutsConfig)
    init_kernel, sample_kernel = hmc(potential_fn=model_info.potential_fn,
                                     algo="NUTS" if is_nuts else "HMC")
    algo_kwargs = (
        {"max_tree_depth": method.max_tree_depth}
        if is_nuts
        else {"trajectory_length": method.trajectory_length}
    )
    state = init_kernel(
        model_info.param_info,
        num_warmup=method.num_warmup,
        target_accept_prob=method.target_accept_prob,
        dense_mass=method.dense_mass,
        adapt_mass_matrix=method.adapt_mass_matrix,
        rng_key=chain_key,
        **algo_kwargs,
    )

    def run_chunk(state: Any, length: int) -> tuple[Any, tuple[Any, ...]]:
        def transition(state: Any, _: None) -> tuple[Any, tuple[Any, ...]]:
            state = sample_kernel(state)
            return state, (state.z, state.diverging, state.accept_prob, state.num_steps)

        return jax.lax.scan(transition, state, None, length=length)

    jax.block_until_ready(state)
    compile_s = time.perf_counter() - setup_start
    compiled: dict[int, Any] = {}
    constrain = jax.jit(jax.vmap(model_info.postprocess_fn))
    clock = Stopwatch()
    posterior = RunningLogMeanExp()
    num_post = divergences = 0
    accept_sum = steps_sum = 0.0
    stopped_by_budget = False
    total = method.num_warmup + method.num_samples
    for phase, length in chunk_plan(method.num_warmup, method.num_samples,
                                    method.checkpoint_every):
        if length not in compiled:
            start = time.perf_counter()
            compiled[length] = jax.jit(run_chunk, static_argnums=1).lower(state, length).compile()
            compile_s += time.perf_counter() - start
        with clock.running():
            state, (zs, diverging, accept_prob, num_steps) = compiled[length](state)
            jax.block_until_ready(state)
        scores = posterior if phase == "sampling" else RunningLogMeanExp()
        score_draws(log_likelihood, constrain(zs), scores)
        if phase == "sampling":
            num_post += length
            divergences += int(np.sum(diverging))
            accept_sum += float(np.sum(accept_prob))
            steps_sum += float(np.sum(num_steps))
        step_size = float(state.adapt_state.step_size)
        trace.append(
            iteration=int(state.i),
            wall_s=clock.elapsed_s,
            heldout_lpd=scores.lpd(),
            num_draws=scores.num_draws,
            phase=phase,
            accept_prob=float(np.mean(accept_prob)),
            divergences=divergences,
            step_size=step_size,
        )
        logger.info(
            "%s iteration %d/%d (%s): accept %.3f, step size %.3g, divergences %d, "
            "heldout_lpd %.4f, %.2f s",
            "nuts" if is_nuts else "hmc", int(state.i), total, phase, float(np.mean(accept_prob)),
            step_size, divergences, scores.lpd(), clock.elapsed_s,
        )
        if clock.elapsed_s >= budget_s and int(state.i) < total:
            stopped_by_budget = True
            logger.info("budget of %.1f s reached; stopping", budget_s)
            break
    return {
        "iterations": int(state.i),
        "num_warmup_done": min(int(state.i), method.num_warmup),
        "num_samples_done": num_post,
        "wall_s": clock.elapsed_s,
        "compile_s": compile_s,
        "stopped_by_budget": stopped_by_budget,
        "divergences": divergences,
        "accept_rate": accept_sum / num_post if num_post else None,
        "mean_num_steps": steps_sum / num_post if num_post else None,
        "step_size": float(state.adapt_state.step_size),
    }

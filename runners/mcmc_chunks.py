"""MCMC in chunks under a budget: how long each chunk is, what one transition is
forecast to cost, and the compiled chunk that runs transitions until its length or its
leapfrog-step limit (used by :mod:`advi_repro.runners.mcmc_runner`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from advi_repro.runners import stan_hmc


def chunk_plan(num_warmup: int, num_samples: int, every: int) -> Iterator[tuple[str, int]]:
    """(phase, length) of the chunks: ``every`` transitions each, none straddling warmup's end.

    Example: ``chunk_plan(120, 100, 50)`` gives warmup 50, 50, 20, then sampling 50, 50.
    """
    for phase, total in (("warmup", num_warmup), ("sampling", num_samples)):
        for start in range(0, total, every):
            yield phase, min(every, total - start)


def seconds_per_gradient(potential_fn: Callable[[Any], Any], z: Any, *, steps: int = 20,
                         clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per gradient of ``potential_fn`` near ``z``, timed on ``clock`` (``() ->
    seconds``, ``time.perf_counter`` unless a test injects a fake one) over ``steps``
    gradients chained in one compiled loop (as leapfrog steps are, without per-call
    overhead): the first estimate of a leapfrog step's cost, refined by the chunks' own
    timings."""

    def descend(z: Any) -> Any:
        def body(_: Any, z: Any) -> Any:
            grad = jax.grad(potential_fn)(z)
            return jax.tree.map(lambda x, g: x - 1e-12 * g, z, grad)

        return jax.lax.fori_loop(0, steps, body, z)

    compiled = jax.jit(descend).lower(z).compile()
    jax.block_until_ready(compiled(z))
    start = clock()
    jax.block_until_ready(compiled(z))
    return (clock() - start) / steps


def affordable(wanted: int, remaining_s: float, spent_s: float, done: int) -> int:
    """Transitions of the next chunk: ``wanted``, or fewer when, at the seconds per
    transition so far (``spent_s / done``), the budget's ``remaining_s`` will not take
    them all; then ceil(remaining / per transition) >= 1, so a run overshoots its budget by
    about one transition rather than one chunk. Before the first transition the rate is
    unknown: one transition, whose seconds give it (a first chunk of 50 early-warmup NUTS
    transitions at full tree depth took 30 s on a 3-s budget)."""
    if done <= 0 or spent_s <= 0:
        return 1
    return int(max(1, min(wanted, math.ceil(remaining_s * done / spent_s))))


def next_num_steps(state: Any) -> Any:
    """Leapfrog steps of static HMC's next transition, Stan's L (:func:`stan_hmc.num_steps`),
    as a float (NumPyro's own count is int32, which overflows for collapsed step sizes)."""
    return stan_hmc.num_steps(state.adapt_state.step_size, state.i, state.trajectory_length)


def make_chunk(sample_kernel: Callable[[Any], Any], *, capacity: int, forecast: bool
                ) -> Callable[..., Any]:
    """``run_chunk(state, length, step_limit) -> (state, count, records)``.

    Runs up to ``length`` <= ``capacity`` transitions (``length`` is a run-time argument,
    so one compilation serves every chunk), and no more leapfrog steps than ``step_limit``
    (float; ``inf``: no limit): with ``forecast`` (static HMC) it stops before a transition
    whose leapfrog steps (:func:`next_num_steps`) would take the chunk's total past the
    limit; without (NUTS) after the first transition that reaches it (at least one runs).
    ``records`` are ``(z, diverging, accept_prob, num_steps)`` with leading axis
    ``capacity``, the first ``count`` filled.
    """

    def run_chunk(state: Any, length: Any, step_limit: Any) -> tuple[Any, Any, Any]:
        def record(state: Any) -> tuple[Any, ...]:
            return (state.z, state.diverging, state.accept_prob,
                    state.num_steps.astype(jnp.float32))

        records = jax.tree.map(
            lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.result_type(x)), record(state))

        def more(carry: tuple[Any, ...]) -> Any:
            count, steps, state, _ = carry
            if not forecast:
                return (count < length) & ((count == 0) | (steps < step_limit))
            return (count < length) & (steps + next_num_steps(state) <= step_limit)

        def transition(carry: tuple[Any, ...]) -> tuple[Any, ...]:
            count, steps, state, records = carry
            state = sample_kernel(state)
            records = jax.tree.map(lambda r, v: r.at[count].set(v), records, record(state))
            return count + 1, steps + state.num_steps.astype(jnp.float32), state, records

        start = (jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32), state, records)
        count, _, state, records = jax.lax.while_loop(more, transition, start)
        return state, count, records

    return run_chunk

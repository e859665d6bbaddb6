"""How many of the ELBO's draws run at a time (:func:`advi.elbo.elbo_estimate`'s
``batch_size``): all at once (``vmap``), or in batches (``jax.lax.map``) where all at once
would hold too much, and the ELBO functions :mod:`advi.compiled` compiles that way."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import jax
from jax import Array

from .aot import aot
from .elbo import ELBOEstimate, elbo_estimate
from .families import Family
from .target import Target

logger = logging.getLogger("advi")

MINIBATCH_ELBO_BATCH = 5
"""Draws evaluated at a time by the ELBO of a minibatched target (:func:`elbo_estimate`'s
``batch_size``; full-data targets evaluate all S draws at once, except as
:data:`ELBO_VMAP_BYTES` says)."""

ELBO_VMAP_BYTES = 8 * 2**20
"""On a CPU, the ELBO (Stan's loop's, and the draws of Pareto k-hat at the end of every
fit) evaluates its S draws of a full-data target all at once (``vmap``) while XLA's memory
analysis of that program puts its temporary buffers within this many bytes (about a core's
share of the cache), and otherwise in batches of as many draws as fit, at least one
(:func:`elbo_batch`). All at once, draws share one pass over the data (E1's regression: 2.6
times faster than one by one); with large per-draw buffers they go to memory instead (E3's
100 rate matrices of 1,965 x 560: 3.3 times slower than one by one, which made the Stan
preset's iteration there 1.6 times longer and the robust fit's k-hat draws 2 times;
benchmarks/README.md, "Measurements behind the library's defaults"). Other backends keep
all at once."""


def dividing_batch(samples: int, most: int) -> int:
    """The largest batch of at most ``most`` (>= 1) draws that divides ``samples``: every
    batch of ``jax.lax.map`` is then full, and the model is compiled once (a last,
    smaller batch would be compiled again)."""
    most = max(1, min(most, samples))
    return next(size for size in range(most, 0, -1) if samples % size == 0)


def elbo_batch(temp_bytes: int, samples: int, budget: int = ELBO_VMAP_BYTES) -> int | None:
    """Draws per batch of an ELBO whose all-at-once program needs ``temp_bytes`` of
    temporary buffers for ``samples`` draws: None (all at once) within ``budget``, else as
    many draws as fit in it, at least 1, and a divisor of ``samples``
    (:func:`dividing_batch`)."""
    if temp_bytes <= budget:
        return None
    return dividing_batch(samples, budget * samples // temp_bytes)


def full_data_batch(compiled: Any, samples: int) -> int | None:
    """The batch for a full-data target's ELBO of ``samples`` draws, from ``compiled``, its
    all-at-once program (a ``jax.stages.Compiled``): :func:`elbo_batch` of the temporary
    bytes XLA's ``memory_analysis()`` reports, on a CPU; None (all at once) on other
    backends or where no analysis is reported. Logs a batched choice."""
    stats = compiled.memory_analysis()
    if stats is None or jax.default_backend() != "cpu":
        return None
    batch = elbo_batch(stats.temp_size_in_bytes, samples)
    if batch is not None:
        logger.info("the ELBO's %d draws run %d at a time (all at once needs %.0f MiB of "
                    "buffers)", samples, batch, stats.temp_size_in_bytes / 2**20)
    return batch


def make_elbo(target: Target, family: Family, samples: int, batch: int | None = None
              ) -> Callable[..., ELBOEstimate]:
    """``elbo(params, key, salt, data) -> ELBOEstimate``: :func:`advi.elbo.elbo_estimate`
    of ``target``'s log density on ``data`` from ``samples`` draws keyed by
    ``fold_in(key, salt)``, ``batch`` draws at a time for a full-data target (None: all at
    once), :data:`MINIBATCH_ELBO_BATCH` or the largest divisor of ``samples`` below it for a
    minibatched one."""
    size = batch if target.num_data is None else dividing_batch(samples, MINIBATCH_ELBO_BATCH)

    def elbo(params: Any, key: Array, salt: Array, data: Any) -> ELBOEstimate:
        def log_density(zeta: Array, batch_key: Array) -> Array:
            return target.log_density_fn(zeta, batch_key, data)

        return elbo_estimate(log_density, family, params, jax.random.fold_in(key, salt),
                             samples, size)

    return elbo


def elbo_compiler(target: Target, family: Family, samples: int) -> Callable[..., Callable]:
    """``compile(jitted, *args) -> compiled``: compiles the ELBO of :func:`make_elbo`
    (Stan's loop's, and the draws of Pareto k-hat) for arguments like ``args``, all draws
    at once, or, for a full-data target where :func:`full_data_batch` says so (a CPU,
    buffers above :data:`ELBO_VMAP_BYTES`), again in batches."""

    def compile_elbo(jitted: Any, *args: Any) -> Callable:
        compiled = aot(jitted, *args)
        if target.num_data is not None:
            return compiled
        batch = full_data_batch(compiled, samples)
        if batch is None:
            return compiled
        return aot(jax.jit(make_elbo(target, family, samples, batch)), *args)

    return compile_elbo

"""The chunk of ADVI iterations that :mod:`advi.compiled` compiles once per configuration:
any number of steps at any eta, and, for the robust stop (:mod:`advi.robust`), the moments
of its iterates and the draws of q at their average whose log density the host evaluates
(:meth:`advi.compiled.CompiledADVI.run`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .algorithm import Algorithm
from .families import Family, host_standard_normal
from .loops import loop_data
from .step import ADVIState

TRACE_SALT = 0xFFFFFFFF
"""Folded into the run's key for the draws of a chunk's end check without moments (the
steps' salts are small); with moments, seeds their eps on the host with that key."""


HOST_STEP_DRAWS = 2**16
"""Most standard normals a chunk's steps may take from the host (L x M x K). Above it (the
paper's E3 and E4, K = 25,250 and more) the steps draw them in the program: there NumPy's
draws would slow every iteration, and the generator's compilation is a small part of the
chunk's (benchmarks/README.md)."""


def host_chunk_len(chunk_len: int, grad_samples: int, dim: int) -> int:
    """``chunk_len`` where a chunk of that many steps takes its draws from the host
    (:data:`HOST_STEP_DRAWS`), else 0 (the steps draw them in the program)."""
    return chunk_len if chunk_len * grad_samples * dim <= HOST_STEP_DRAWS else 0


STEP_SALT = 0xFFFFFFFE
"""The first salt word of the steps' draws (:func:`step_eps`), apart from the end draws'
:data:`TRACE_SALT` and the gradient check's."""


def step_eps(key: Array, salt: int, iteration: int, shape: tuple[int, int, int], dtype: Any
             ) -> np.ndarray:
    """The draws of a moments chunk's steps from ``iteration`` on: ``shape`` (L, M, K)
    standard normals, row k for iteration ``iteration + k``, drawn on the host
    (:func:`advi.families.host_standard_normal`). Iteration i's row is row ``i % L`` of
    block ``i // L``, seeded by the run's ``key``, its ``salt`` and the block's index: the
    same draws for an iteration however the run is cut into chunks."""
    size = shape[0]
    first, offset = divmod(iteration, size)

    def block(index: int) -> np.ndarray:
        return host_standard_normal(key, shape, dtype, (STEP_SALT, salt, index))

    if not offset:
        return block(first)
    return np.concatenate([block(first)[offset:], block(first + 1)[:offset]])


class ChunkMoments(NamedTuple):
    """Moments of the iterates over one chunk (sums over its iterations).

    Attributes:
        params: pytree like the parameters, the sum of the iterates.
        stat: (2K,) sum of the monitored quantities (mu, log of q's standard deviations).
        stat_sq: (2K,) sum of their squares.
        elbo: () the ELBO at the average of the chunk's iterates (nats), from draws of q
            there that are the same for every chunk (``draws``): the mean log p of those
            where it is finite (as redrawing the others would estimate) plus q's entropy;
            -inf where it is finite at none. The chunk returns the entropy alone;
            :meth:`advi.compiled.CompiledADVI.run` adds the mean log p.
        draws: (S, K) those draws (zeta) as the chunk returns them, None after the run.
    """

    params: Any
    stat: Array | np.ndarray
    stat_sq: Array | np.ndarray
    elbo: Array | np.ndarray
    draws: Array | None = None


def _monitored(family: Family, params: Any) -> Array:
    """(mu, log of q's sds), (2K,): a mean-field q's omega as it is, with no exp and log
    pair in the loop (each transcendental function is a polynomial that XLA's CPU compiler
    optimises anew: benchmarks/README.md)."""
    log_sd = params.omega if family.name == "meanfield" else jnp.log(family.std(params))
    return jnp.concatenate([params.mu, log_sd])


def make_chunk(alg: Algorithm, family: Family, probe: Callable | None, moments: bool,
               hold: bool) -> Callable:
    """The chunk of ``num_steps`` iterations, ``(state, eta, key, salt, num_steps, data[,
    trace_eps, steps_eps]) -> out``; iteration k's minibatches and redraws come from
    ``fold_in(fold_in(key, salt), k)``, and so do its draws without ``moments``.

    Without ``moments``, ``out`` is ``(state, values_finite)``: the log density was finite
    at every one of ``probe``'s draws from the final q (``probe`` is ``elbo(params, key,
    salt, data)`` of :func:`advi.elbo_batches.make_elbo`, at the draws of
    :data:`TRACE_SALT`). With ``moments`` (``probe`` None), ``out`` is ``(state,
    ChunkMoments)`` whose ``draws`` are ``T(average, trace_eps)``, ``trace_eps`` (S, K)
    standard normals: the host evaluates their log density by the compiled value and
    gradient, so the chunk holds no second copy of the model (a third of its compilation
    on the suite's small models: benchmarks/README.md). Its steps' draws are ``steps_eps``
    where given, (L, M, K), L >= ``num_steps``, the k-th step's row k, drawn on the host
    (:meth:`advi.compiled.CompiledADVI.run`): a generator in the loop was a third of the
    chunk's compilation (benchmarks/README.md).

    The loop ends at a refused step (``failed``); a ``jax.lax.cond`` per step was slower.
    The steps read the data by :func:`advi.loops.loop_data` (``hold``: False for steps
    with a redraw loop)."""
    def chunk(state: ADVIState, eta: Array, key: Array, salt: Array, num_steps: Array,
              data: Any, trace_eps: Array | None = None, steps_eps: Array | None = None
              ) -> Any:
        run_key, (held, read) = jax.random.fold_in(key, salt), loop_data(data, hold)

        def going(carry: tuple) -> Array:
            return (carry[0] < num_steps) & ~carry[1].failed

        def body(carry: tuple[Array, ADVIState, list, ChunkMoments | None]) -> Any:
            k, s, h, m = carry
            d, h = read(h)
            eps = None if steps_eps is None else steps_eps[k]
            new = alg.step(s, jax.random.fold_in(run_key, s.iteration), eta, d, eps)[0]
            if m is None:
                return k + 1, new, h, m
            stat = _monitored(family, new.params)
            return k + 1, new, h, m._replace(params=jax.tree.map(jnp.add, m.params, new.params),
                                             stat=m.stat + stat, stat_sq=m.stat_sq + stat**2)

        k = jnp.zeros((), jnp.int32)
        if not moments:
            assert probe is not None
            state = jax.lax.while_loop(going, body, (k, state, held, None))[1]
            return state, probe(state.params, key, np.uint32(TRACE_SALT), data).redraws == 0
        mu = state.params.mu
        zeros = jnp.zeros(2 * mu.shape[-1], mu.dtype)
        start = ChunkMoments(jax.tree.map(jnp.zeros_like, state.params), zeros, zeros,
                             jnp.zeros((), zeros.dtype))
        k, state, _, m = jax.lax.while_loop(going, body, (k, state, held, start))
        average = jax.tree.map(lambda x: x / jnp.maximum(k, 1).astype(x.dtype), m.params)
        return state, m._replace(elbo=family.entropy(average),
                                 draws=family.transform(average, trace_eps))

    return chunk


def with_elbo(log_p: Callable[[np.ndarray], Any], m: ChunkMoments
              ) -> tuple[ChunkMoments, bool]:
    """``m`` (as a moments chunk returns it) with its ELBO (:class:`ChunkMoments`), and
    whether log p was finite at every draw. ``log_p(zeta (K,)) -> ()`` runs on the host, one
    draw at a time (a compiled function: the fit's value and gradient)."""
    draws, entropy = jax.device_get((m.draws, m.elbo))
    values = np.asarray(jax.device_get([log_p(zeta) for zeta in draws]), np.float64)
    finite = np.isfinite(values)
    elbo = float(np.mean(values[finite])) + float(entropy) if finite.any() else -math.inf
    return m._replace(elbo=np.asarray(elbo), draws=None), bool(finite.all())

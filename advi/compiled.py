"""The compiled functions of one :func:`advi.fit` configuration, and their reuse.

Three functions are compiled per model, data shapes and options, in parallel threads (XLA
compiles each on one core):

- ``setup(rng_key, data) -> (keys, state, start_info)``: the key split by purpose and the
  initial state (with the Laplace start of :mod:`advi.laplace` when asked);
- ``chunk(state, eta, key, salt, num_steps, data)``: any number of iterations at any eta
  (both run-time arguments), so the eta search, the main loop and restarts share one
  compilation; iteration k draws from ``fold_in(fold_in(key, salt), k)``, so results do not
  depend on how the run is cut into chunks. With ``moments=True`` it also returns the
  per-chunk moments of the iterates that :mod:`advi.stationarity` needs;
- ``elbo(params, key, salt, data)``: Stan's ``elbo_samples``-draw ELBO and log weights.

The model's arrays travel as an argument (``Target.data``), never as constants. Compiled
functions are kept in a small in-process cache under the target's ``cache_key`` and the
options, so a second fit of the same model on data of the same shapes compiles nothing;
across processes JAX's persistent compilation cache (:func:`advi.enable_compilation_cache`)
serves the same purpose.
"""

from __future__ import annotations

import collections
import concurrent.futures
import math
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from .elbo import elbo_estimate
from .families import Family
from .laplace import laplace_start
from .step import ADVIState, fresh_state, step
from .target import Target

MINIBATCH_ELBO_BATCH = 5
"""Draws evaluated at a time by the ELBO of a minibatched target (:func:`elbo_estimate`'s
``batch_size``; full-data targets evaluate all S draws at once)."""

CACHE_SIZE = 16
"""Configurations whose compiled functions are kept per process."""

_CACHE: collections.OrderedDict[Hashable, tuple] = collections.OrderedDict()


class StartInfo(NamedTuple):
    """How the initial state was chosen: ``laplace`` () bool (the Laplace start was used),
    ``steps`` () int32 (L-BFGS iterations, 0 without), ``grad_norm`` () float."""

    laplace: Array
    steps: Array
    grad_norm: Array


class ChunkMoments(NamedTuple):
    """Moments of the iterates over one chunk (sums over its iterations).

    Attributes:
        params: pytree like the parameters, the sum of the iterates.
        stat: (2K,) sum of the monitored quantities (mu, log of q's standard deviations).
        stat_sq: (2K,) sum of their squares.
        elbo: () sum of the M-draw ELBO estimates of the steps (nats).
    """

    params: Any
    stat: Array
    stat_sq: Array
    elbo: Array


def _monitored(family: Family, params: Any) -> Array:
    return jnp.concatenate([params.mu, jnp.log(family.std(params))])


def _make_chunk(target: Target, family: Family, optimizer: Any, M: int, precondition: bool,
                moments: bool) -> Callable:
    def chunk(state: ADVIState, eta: Array, key: Array, salt: Array, num_steps: Array,
              data: Any) -> Any:
        key = jax.random.fold_in(key, salt)
        on_data = target._replace(data=data)

        def one(s: ADVIState) -> tuple[ADVIState, Any]:
            step_key = jax.random.fold_in(key, s.iteration)
            return step(on_data, s, step_key, eta, family=family, optimizer=optimizer,
                        grad_samples=M, precondition=precondition)

        if not moments:
            def body(_: Array, s: ADVIState) -> ADVIState:
                return jax.lax.cond(s.failed, lambda s: s, lambda s: one(s)[0], s)

            return jax.lax.fori_loop(0, num_steps, body, state)

        def body_m(_: Array, carry: tuple[ADVIState, ChunkMoments]) -> Any:
            s, m = carry
            new, info = one(s)
            stat = _monitored(family, new.params)
            return new, ChunkMoments(
                jax.tree.map(jnp.add, m.params, new.params), m.stat + stat,
                m.stat_sq + stat**2, m.elbo + info.elbo,
            )

        zeros = jnp.zeros(2 * target.dim, state.params.mu.dtype)
        start = ChunkMoments(jax.tree.map(jnp.zeros_like, state.params), zeros, zeros,
                             jnp.zeros((), zeros.dtype))
        return jax.lax.fori_loop(0, num_steps, body_m, (state, start))

    return chunk


def _make_elbo(target: Target, family: Family, S: int) -> Callable:
    batch = None if target.num_data is None else MINIBATCH_ELBO_BATCH

    def elbo(params: Any, key: Array, salt: Array, data: Any) -> tuple[Array, Array, Array]:
        def log_density(zeta: Array, batch_key: Array) -> Array:
            return target.log_density_fn(zeta, batch_key, data)

        return elbo_estimate(log_density, family, params, jax.random.fold_in(key, salt), S,
                             batch)

    return elbo


def _make_setup(target: Target, family: Family, optimizer: Any, init: str, laplace: bool
                ) -> Callable:
    def setup(rng_key: Array, data: Any) -> tuple[Array, ADVIState, StartInfo]:
        keys = jax.random.split(rng_key, 4)
        params = family.init(keys[0], target.dim, init)
        info = StartInfo(jnp.zeros((), bool), jnp.zeros((), jnp.int32),
                         jnp.full((), jnp.nan, params.mu.dtype))
        if laplace:
            batch_key = jax.random.fold_in(keys[0], 1)
            start = laplace_start(lambda z: target.log_density_fn(z, batch_key, data),
                                  family, params.mu)
            params = jax.tree.map(lambda a, b: jnp.where(start.ok, a, b), start.params, params)
            info = StartInfo(start.ok, start.steps, start.grad_norm)
        return keys[1:], fresh_state(params, optimizer, jnp.zeros((), jnp.int32)), info

    return setup


class Options(NamedTuple):
    """What the compiled functions depend on besides the target."""

    family: Family
    optimizer: Any
    grad_samples: int
    elbo_samples: int
    init: str
    laplace: bool
    precondition: bool
    moments: bool


class CompiledADVI:
    """The compiled setup, chunk and ELBO functions of one target and :class:`Options`."""

    def __init__(self, target: Target, options: Options, optimizer: optax.GradientTransformation
                 ) -> None:
        self.target, self.options, self.optimizer = target, options, optimizer
        self.family = options.family
        self.elbo_samples = options.elbo_samples
        self.dtype = jnp.result_type(float)
        key = None if target.cache_key is None else (target.cache_key, options, self.dtype)
        cached = _CACHE.get(key) if key is not None else None
        self.cache_hit = cached is not None
        if cached is None:
            cached = self._compile(target, options, optimizer)
            if key is not None:
                _CACHE[key] = cached
                while len(_CACHE) > CACHE_SIZE:
                    _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        self.setup_fn, self.chunk_fn, self.elbo_fn = cached

    def _compile(self, target: Target, o: Options, optimizer: Any) -> tuple:
        setup = jax.jit(_make_setup(target, o.family, optimizer, o.init, o.laplace))
        chunk = jax.jit(_make_chunk(target, o.family, optimizer, o.grad_samples,
                                    o.precondition, o.moments))
        elbo = jax.jit(_make_elbo(target, o.family, o.elbo_samples))
        key = jax.random.PRNGKey(0)
        _, state, _ = jax.eval_shape(setup, key, target.data)
        one = np.ones((), np.int32)
        lowered = (
            setup.lower(key, target.data),
            chunk.lower(state, np.ones((), self.dtype), key, one, one, target.data),
            elbo.lower(state.params, key, one, target.data),
        )
        with concurrent.futures.ThreadPoolExecutor(len(lowered)) as pool:
            return tuple(pool.map(lambda low: low.compile(), lowered))

    def setup(self, rng_key: Array) -> tuple[Array, ADVIState, StartInfo]:
        """Keys (adapt, run, elbo), the initial state and how it was chosen."""
        return self.setup_fn(rng_key, self.target.data)

    def run(self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int) -> Any:
        """``num_steps`` iterations at step-size scale ``eta`` (blocks until done); returns
        the state, or ``(state, ChunkMoments)`` when compiled with moments."""
        out = self.chunk_fn(state, np.asarray(eta, self.dtype), key,
                            np.asarray(salt, np.int32), np.asarray(num_steps, np.int32),
                            self.target.data)
        return jax.block_until_ready(out)

    def elbo(self, params: Any, key: Array, salt: int) -> tuple[float, np.ndarray]:
        """The ELBO (``-inf`` where non-finite draws exhausted the budget) and log weights."""
        value, ok, log_weights = self.elbo_fn(params, key, np.asarray(salt, np.int32),
                                              self.target.data)
        value = float(value)
        if not (bool(ok) and math.isfinite(value)):
            value = -math.inf
        return value, np.asarray(log_weights)

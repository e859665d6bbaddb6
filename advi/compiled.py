"""The compiled functions of one :func:`advi.fit` configuration, and their reuse.

These functions are compiled per model, data shapes and options, each in a thread of its own
as soon as it is lowered (the chunk, the longest, first), so that the lowering of the next
(Python) overlaps the XLA compilation of those before; with the compile options of
:mod:`advi.xla_options`:

- ``init(rng_key) -> (keys, params, batch_key)``: the key split by purpose and the initial
  parameters; ``begin(params) -> state``: a fresh state there;
- with the Laplace start, the log density's value and gradient and its Hessian
  (:func:`advi.laplace.log_density_functions`), which the host-side L-BFGS calls;
- ``chunk(state, eta, key, salt, num_steps, data)``: any number of iterations at any eta
  (both run-time arguments), so the eta search, the main loop and restarts share one
  compilation; iteration k draws from ``fold_in(fold_in(key, salt), k)``, so results do not
  depend on how the run is cut into chunks. With ``moments=True`` it also returns the
  per-chunk moments of the iterates that :mod:`advi.stationarity` needs;
- ``elbo(params, key, salt, data)``: Stan's ``elbo_samples``-draw ELBO and log weights;
  with the stationarity stop (the robust preset), whose loop needs no ELBO, it is compiled
  on first use only (Pareto k-hat's log weights, when asked for), not with the others.

The target's log density is wrapped in ``jax.jit`` first, so the model is traced once and
that trace serves the chunk, the Laplace start's gradient and its Hessian. The model's
arrays travel as an argument (``Target.data``), never as constants. Compiled
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

from .algorithm import Algorithm, algorithm
from .elbo import elbo_estimate
from .families import Family
from .laplace import LogDensityFunctions, log_density_functions
from .multistart import EXTRA_STARTS, multistart_laplace
from .step import ADVIState, fresh_state
from .target import Target
from .xla_options import compile_options

MINIBATCH_ELBO_BATCH = 5
"""Draws evaluated at a time by the ELBO of a minibatched target (:func:`elbo_estimate`'s
``batch_size``; full-data targets evaluate all S draws at once)."""

CACHE_SIZE = 16
"""Configurations whose compiled functions are kept per process."""

_CACHE: collections.OrderedDict[Hashable, tuple] = collections.OrderedDict()


class StartInfo(NamedTuple):
    """How the initial state was chosen: ``laplace`` (the Laplace start was used),
    ``steps`` (L-BFGS iterations of every start, 0 without), ``grad_norm`` (||grad log p||
    there), what the extra starts found (:class:`advi.multistart.MultiStart`'s ``note`` and
    ``warn``), and ``scaled``: the Laplace start also set q's scales from the Hessian (False
    above :data:`advi.laplace.HESSIAN_MAX_DIM`, where only the means move to the mode)."""

    laplace: bool
    steps: int
    grad_norm: float
    note: str | None = None
    warn: bool = False
    scaled: bool = False


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


def _make_chunk(alg: Algorithm, family: Family, moments: bool) -> Callable:
    def chunk(state: ADVIState, eta: Array, key: Array, salt: Array, num_steps: Array,
              data: Any) -> Any:
        key = jax.random.fold_in(key, salt)

        def one(s: ADVIState) -> tuple[ADVIState, Any]:
            return alg.step(s, jax.random.fold_in(key, s.iteration), eta, data)

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

        zeros = jnp.zeros(2 * state.params.mu.shape[-1], state.params.mu.dtype)
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


class _LazyELBO:
    """The compiled ELBO function, compiled on first call unless given ``compiled``."""

    def __init__(self, target: Target, family: Family, S: int) -> None:
        self.jitted = jax.jit(_make_elbo(target, family, S))
        self.compiled: Callable | None = None

    def __call__(self, params: Any, key: Array, salt: Array, data: Any) -> Any:
        if self.compiled is None:
            lowered = self.jitted.lower(params, key, salt, data)
            self.compiled = lowered.compile(compile_options(lowered))
        return self.compiled(params, key, salt, data)


def _make_init(target: Target, family: Family, init: str) -> Callable:
    def initialise(rng_key: Array) -> tuple[tuple[Array, ...], Any, Array]:
        keys = jax.random.split(rng_key, 4)
        params = family.init(keys[0], target.dim, init)
        return tuple(keys[1:]), params, jax.random.fold_in(keys[0], 1)

    return initialise


def _make_begin(optimizer: Any) -> Callable:
    def begin(params: Any) -> ADVIState:
        return fresh_state(params, optimizer, jnp.zeros((), jnp.int32))

    return begin


def _laplace_functions(target: Target) -> LogDensityFunctions:
    """The Laplace start's log density functions; their data argument is (batch_key, data):
    a minibatched target's mode is that of one fixed minibatch."""

    def log_density(zeta: Array, keyed_data: tuple[Array, Any]) -> Array:
        batch_key, data = keyed_data
        return target.log_density_fn(zeta, batch_key, data)

    return log_density_functions(log_density, target.dim)


class CompileSpec(NamedTuple):
    """What the compiled functions depend on besides the target (part of the cache key)."""

    family: Family
    optimizer: Any
    grad_samples: int
    elbo_samples: int
    init: str
    laplace: bool
    precondition: bool
    moments: bool


class CompiledADVI:
    """The compiled setup, chunk and ELBO functions of one target and :class:`CompileSpec`."""

    def __init__(self, target: Target, options: CompileSpec, optimizer: optax.GradientTransformation
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
        self.init_fn, self.begin_fn, self.laplace_fns, self.chunk_fn, self._elbo_fn = cached

    def _compile(self, target: Target, o: CompileSpec, optimizer: Any) -> tuple:
        data, target = target.data, target._replace(data=None)  # the cache keeps no data
        # one trace of the model serves every function below (jax.jit caches it)
        target = target._replace(log_density_fn=jax.jit(target.log_density_fn))
        initialise = jax.jit(_make_init(target, o.family, o.init))
        begin = jax.jit(_make_begin(optimizer))
        alg = algorithm(target, family=o.family, optimizer=optimizer,
                        grad_samples=o.grad_samples, precondition=o.precondition, init=o.init)
        chunk = jax.jit(_make_chunk(alg, o.family, o.moments))
        key = jax.random.PRNGKey(0)
        _, params, batch_key = jax.eval_shape(initialise, key)
        state = jax.eval_shape(begin, params)
        one = np.ones((), np.int32)
        elbo = _LazyELBO(target, o.family, o.elbo_samples)
        fns = _laplace_functions(target) if o.laplace else None
        with concurrent.futures.ThreadPoolExecutor(6) as pool:

            def submit(lowered: Any, calls: str = "many") -> concurrent.futures.Future:
                return pool.submit(lowered.compile,
                                   compile_options(lowered, calls=calls, alongside=True))

            # the chunk, the longest to compile, first: each later lowering (Python, one at
            # a time) overlaps the compilation of those before it
            futures = {"chunk": submit(chunk.lower(state, np.ones((), self.dtype), key, one,
                                                   one, data)),
                       "init": submit(initialise.lower(key), calls="once"),
                       "begin": submit(begin.lower(params), calls="once")}
            if not o.moments:  # Stan's loop estimates the ELBO from its first chunk on
                futures["elbo"] = submit(elbo.jitted.lower(state.params, key, one, data))
            if fns is not None:
                keyed = (batch_key, data)
                futures["value_and_grad"] = submit(fns.value_and_grad.lower(params.mu, keyed),
                                                   calls="bounded")
                if fns.precision is not None:
                    futures["precision"] = submit(fns.precision.lower(params.mu, keyed),
                                                  calls="bounded")
            done = {name: future.result() for name, future in futures.items()}
        elbo.compiled = done.get("elbo")
        if fns is not None:
            fns = LogDensityFunctions(done["value_and_grad"], done.get("precision"))
        return done["init"], done["begin"], fns, done["chunk"], elbo

    def setup(self, rng_key: Array, extra_starts: int = EXTRA_STARTS
              ) -> tuple[tuple[Array, ...], ADVIState, StartInfo]:
        """Keys (adapt, run, elbo), the initial state and how it was chosen (with the
        Laplace start, L-BFGS runs here, on the host, from the initial mean and from
        ``extra_starts`` more inits: :func:`advi.multistart.multistart_laplace`)."""
        keys, params, batch_key = self.init_fn(rng_key)
        info = StartInfo(False, 0, math.nan)
        if self.laplace_fns is not None:
            seed = int(np.asarray(jax.random.key_data(batch_key)).ravel()[-1])
            start, note, warn = multistart_laplace(self.laplace_fns, self.family, params.mu,
                                                   (batch_key, self.target.data), seed,
                                                   extra_starts)
            info = StartInfo(start.ok, start.steps, start.grad_norm, note, warn,
                             scaled=start.ok and self.laplace_fns.precision is not None)
            if start.ok:
                params = start.params
        return keys, self.begin_fn(params), info

    def run(self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int) -> Any:
        """``num_steps`` iterations at step-size scale ``eta`` (blocks until done); returns
        the state, or ``(state, ChunkMoments)`` when compiled with moments."""
        out = self.chunk_fn(state, np.asarray(eta, self.dtype), key,
                            np.asarray(salt, np.int32), np.asarray(num_steps, np.int32),
                            self.target.data)
        return jax.block_until_ready(out)

    def elbo(self, params: Any, key: Array, salt: int) -> tuple[float, np.ndarray]:
        """The ELBO (``-inf`` where non-finite draws exhausted the budget) and log weights."""
        value, ok, log_weights = self._elbo_fn(params, key, np.asarray(salt, np.int32),
                                               self.target.data)
        value = float(value)
        if not (bool(ok) and math.isfinite(value)):
            value = -math.inf
        return value, np.asarray(log_weights)

"""The compiled functions of one :func:`advi.fit` configuration, and their reuse.

These functions are compiled per model, data shapes and options, each in a thread of its own
as soon as it is lowered, so that the lowering of the next (Python) overlaps the XLA
compilation of those before; with the compile options of :mod:`advi.xla_options`. The
start's functions are lowered first: :meth:`CompiledADVI.setup` (the Laplace start) needs
only those, and :func:`advi.fit` runs it in another thread while its own thread lowers and
compiles the iteration chunk (:meth:`CompiledADVI.finish`):

- ``init(rng_key) -> (keys, params, batch_key, seed)``: the key split by purpose, the
  initial parameters and the extra Laplace starts' seed; ``begin(params) -> state``: a
  fresh state there;
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
import threading
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


class StartCancelled(Exception):
    """Raised in the start's thread when its fit was interrupted (:meth:`CompiledADVI.setup`
    with a ``cancel`` event that was set): the start stops at its next call of a compiled
    function instead of running its L-BFGS searches to the end."""


def _cancellable(fns: LogDensityFunctions, cancel: threading.Event) -> LogDensityFunctions:
    """``fns`` whose every call first raises :class:`StartCancelled` once ``cancel`` is set."""

    def checked(fn: Callable | None) -> Callable | None:
        if fn is None:
            return None

        def call(*args: Any) -> Any:
            if cancel.is_set():
                raise StartCancelled("the fit was interrupted during its start")
            return fn(*args)

        return call

    return LogDensityFunctions(checked(fns.value_and_grad), checked(fns.precision))


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
    def initialise(rng_key: Array) -> tuple[tuple[Array, ...], Any, Array, Array]:
        keys = jax.random.split(rng_key, 4)
        params = family.init(keys[0], target.dim, init)
        batch_key = jax.random.fold_in(keys[0], 1)
        # seeds the extra Laplace starts' inits on the host
        seed = jax.random.key_data(batch_key).ravel()[-1]
        return tuple(keys[1:]), params, batch_key, seed

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


class _Compiled(NamedTuple):
    """The compiled functions of one configuration (what the in-process cache keeps)."""

    init: Callable
    begin: Callable
    laplace: LogDensityFunctions | None
    chunk: Callable
    elbo: _LazyELBO


class _Compilation:
    """The compilations of one configuration in flight, each in a thread of its own (the
    longest first among those lowered together, so that each later lowering, Python on the
    caller's thread, overlaps the XLA compilation of those before it). Constructing one
    lowers the start's functions (the initial q; with the Laplace start, the log density's
    value and gradient and its Hessian); :meth:`loop` lowers the chunk (and Stan's ELBO) and
    waits for everything. The model is traced once for all of them (its log density is
    wrapped in ``jax.jit``), and none of them keeps the data."""

    def __init__(self, target: Target, o: CompileSpec, optimizer: Any, dtype: Any) -> None:
        self.data, self.o, self.dtype = target.data, o, dtype
        target = target._replace(data=None, log_density_fn=jax.jit(target.log_density_fn))
        self.target, self.optimizer = target, optimizer
        self.pool = concurrent.futures.ThreadPoolExecutor(6, thread_name_prefix="advi-compile")
        initialise = jax.jit(_make_init(target, o.family, o.init))
        begin = jax.jit(_make_begin(optimizer))
        self.key = jax.random.PRNGKey(0)
        _, self.params, batch_key, _ = jax.eval_shape(initialise, self.key)
        self.laplace = _laplace_functions(target) if o.laplace else None
        self.futures: dict[str, concurrent.futures.Future] = {}
        try:
            if self.laplace is not None:  # the longest first
                keyed = (batch_key, self.data)
                if self.laplace.precision is not None:
                    self._submit("precision",
                                 self.laplace.precision.lower(self.params.mu, keyed), "bounded")
                self._submit("value_and_grad",
                             self.laplace.value_and_grad.lower(self.params.mu, keyed),
                             "bounded")
            self._submit("init", initialise.lower(self.key), "once")
            self._submit("begin", begin.lower(self.params), "once")
        except BaseException:  # e.g. the model fails to trace: nothing is left compiling
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise

    def _submit(self, name: str, lowered: Any, calls: str = "many") -> None:
        self.futures[name] = self.pool.submit(
            lowered.compile, compile_options(lowered, calls=calls, alongside=True))

    def start(self) -> tuple[Callable, Callable, LogDensityFunctions | None]:
        """The start's compiled functions (init, begin, Laplace), once compiled."""
        done = {name: self.futures[name].result()
                for name in ("init", "begin", "value_and_grad", "precision")
                if name in self.futures}
        laplace = None if self.laplace is None else LogDensityFunctions(
            done["value_and_grad"], done.get("precision"))
        return done["init"], done["begin"], laplace

    def loop(self) -> _Compiled:
        """Lowers the chunk (and, for Stan's loop, the ELBO) on the calling thread, waits for
        every compilation and returns them all. Interrupted (e.g. by Ctrl-C), it returns at
        once: compilations not yet begun are cancelled, those running end in the
        background."""
        try:
            o, one = self.o, np.ones((), np.int32)
            alg = algorithm(self.target, family=o.family, optimizer=self.optimizer,
                            grad_samples=o.grad_samples, precondition=o.precondition,
                            init=o.init)
            state = jax.eval_shape(_make_begin(self.optimizer), self.params)
            chunk = jax.jit(_make_chunk(alg, o.family, o.moments))
            self._submit("chunk", chunk.lower(state, np.ones((), self.dtype), self.key, one, one,
                                              self.data))
            elbo = _LazyELBO(self.target, o.family, o.elbo_samples)
            if not o.moments:  # Stan's loop estimates the ELBO from its first chunk on
                self._submit("elbo", elbo.jitted.lower(state.params, self.key, one, self.data))
            init, begin, laplace = self.start()
            elbo.compiled = self.futures["elbo"].result() if "elbo" in self.futures else None
            done = _Compiled(init, begin, laplace, self.futures["chunk"].result(), elbo)
        except BaseException:
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.pool.shutdown(wait=True)
        return done


class CompiledADVI:
    """The compiled setup, chunk and ELBO functions of one target and :class:`CompileSpec`.

    Constructing one lowers the start's functions and starts compiling them; :meth:`setup`
    needs only those, so it can run in another thread while :meth:`finish` lowers (on the
    caller's thread, in the caller's JAX context) and compiles the iteration chunk. The
    start runs on the host with compiled functions and NumPy arrays only: it traces and
    dispatches nothing, so it reads no thread-local JAX setting."""

    def __init__(self, target: Target, options: CompileSpec, optimizer: optax.GradientTransformation
                 ) -> None:
        self.target, self.options, self.optimizer = target, options, optimizer
        self.family = options.family
        self.elbo_samples = options.elbo_samples
        self.dtype = jnp.result_type(float)
        self._key = None if target.cache_key is None else (target.cache_key, options, self.dtype)
        self._done: _Compiled | None = _CACHE.get(self._key) if self._key is not None else None
        self.cache_hit = self._done is not None
        if self._done is not None:
            _CACHE.move_to_end(self._key)
        self._compilation = (None if self.cache_hit
                             else _Compilation(target, options, optimizer, self.dtype))

    def start_functions(self) -> tuple[Callable, Callable, LogDensityFunctions | None]:
        """The start's compiled functions (initial q, begin, Laplace), waiting for their
        compilation only."""
        if self._done is not None:
            return self._done.init, self._done.begin, self._done.laplace
        return self._compilation.start()

    def finish(self) -> None:
        """Lower and compile the iteration chunk (and Stan's ELBO) and wait for every
        compilation; keeps the functions in the in-process cache. Does nothing the second
        time, or after a cache hit."""
        if self._done is not None:
            return
        self._done = self._compilation.loop()
        self._compilation = None
        if self._key is not None:
            _CACHE[self._key] = self._done
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)

    def setup(self, rng_key: Array, extra_starts: int = EXTRA_STARTS,
              cancel: threading.Event | None = None
              ) -> tuple[tuple[Array, ...], ADVIState, StartInfo]:
        """Keys (adapt, run, elbo), the initial state and how it was chosen (with the
        Laplace start, L-BFGS runs here, on the host, from the initial mean and from
        ``extra_starts`` more inits: :func:`advi.multistart.multistart_laplace`). Waits
        for the start's functions only: safe to call from another thread while
        :meth:`finish` runs.

        Raises:
            StartCancelled: ``cancel`` was set (by the thread that runs the fit, when it
                was interrupted) before the start ended.
        """
        init_fn, begin_fn, laplace_fns = self.start_functions()
        if laplace_fns is not None and cancel is not None:
            laplace_fns = _cancellable(laplace_fns, cancel)
        keys, params, batch_key, seed = init_fn(rng_key)
        info = StartInfo(False, 0, math.nan)
        if laplace_fns is not None:
            start, note, warn = multistart_laplace(laplace_fns, self.family, params.mu,
                                                   (batch_key, self.target.data), int(seed),
                                                   extra_starts)
            info = StartInfo(start.ok, start.steps, start.grad_norm, note, warn,
                             scaled=start.ok and laplace_fns.precision is not None)
            if start.ok:
                params = start.params
        return keys, begin_fn(params), info

    def run(self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int) -> Any:
        """``num_steps`` iterations at step-size scale ``eta`` (blocks until done); returns
        the state, or ``(state, ChunkMoments)`` when compiled with moments."""
        self.finish()
        out = self._done.chunk(state, np.asarray(eta, self.dtype), key,
                               np.asarray(salt, np.int32), np.asarray(num_steps, np.int32),
                               self.target.data)
        return jax.block_until_ready(out)

    def elbo(self, params: Any, key: Array, salt: int) -> tuple[float, np.ndarray]:
        """The ELBO (``-inf`` where non-finite draws exhausted the budget) and log weights."""
        self.finish()
        value, ok, log_weights = self._done.elbo(params, key, np.asarray(salt, np.int32),
                                                 self.target.data)
        value = float(value)
        if not (bool(ok) and math.isfinite(value)):
            value = -math.inf
        return value, np.asarray(log_weights)

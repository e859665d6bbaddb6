"""The compiled functions of one :func:`advi.fit` configuration, and their reuse.

Every function but ``init`` is a plain ``jax.jit`` function, compiled ahead of time through
JAX's public AOT API (``jax.jit(f).lower(*args).compile()``, XLA's default options) on the
caller's thread, so that :func:`advi.fit` can time the compilation (``compile_s``) apart from the
fit. :meth:`CompiledADVI.setup` (the initial q and the Laplace start) then runs on the host:

- ``init(rng_key) -> (keys, params, batch_key, seed)``, on the host with NumPy (no program):
  keys by purpose, initial parameters, the extra starts' seed; ``begin(params) -> state``;
- with the Laplace start, the log density's value and gradient, and -H by differences of it
  or by the exact Hessian compiled on first call (:func:`advi.curvature.cheaper_precision`);
- ``chunk(state, eta, key, salt, num_steps, data[, trace_eps, steps_eps])``
  (:func:`advi.chunk.make_chunk`): any number of iterations at any eta, so the eta search,
  the main loop and restarts share one compilation; iteration k draws from
  ``fold_in(fold_in(key, salt), k)``, whatever the chunks. Its steps compute the gradient
  only and redraw nothing until a draw's gradient is not finite (:meth:`CompiledADVI.run`).
  With ``moments=True`` it also returns the chunk's moments of the iterates
  (:mod:`advi.stationarity`) and :data:`TRACE_ELBO_SAMPLES` draws of q at their average,
  the same eps for every chunk, whose log p the host evaluates by the compiled value and
  gradient (the ELBO there); up to ``chunk_len`` steps' eps are drawn on the host too where
  they are few (:func:`advi.chunk.host_chunk_len`, :func:`advi.chunk.step_eps`: the same for
  an iteration however the run is cut), so that its program holds no random generator;
- ``elbo(params, key, salt, data)``: Stan's ``elbo_samples``-draw ELBO and log weights;
  with the stationarity stop (the robust preset), whose loop needs no ELBO, it is compiled
  on first use only (Pareto k-hat's log weights, when asked for), not with the others.

The log density is wrapped in ``jax.jit`` first (the model is traced once for all of
them); the model's arrays travel as an argument (``Target.data``), never as constants.
Compiled functions are kept in a small in-process cache under the target's ``cache_key``,
the options and the default float type (a second fit of the same model on data of the same
shapes compiles nothing); across processes, JAX's persistent compilation cache
(:func:`advi.enable_compilation_cache`).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from .algorithm import algorithm
from .aot import Lazy, aot
from .check_draws import CHECK_SALT, scaled_gradients
from .chunk import TRACE_SALT, make_chunk, step_eps, with_elbo
from .curvature import cheaper_precision
from .elbo_batches import elbo_compiler, make_elbo
from .families import Family, host_standard_normal
from .importance import by_calls
from .initial import failing_draws, finite_params
from .laplace import LaplaceStart, LogDensityFunctions, log_density_functions
from .multistart import EXTRA_STARTS, StartInfo, multistart_laplace, start_info
from .refit import second_start
from .step import ADVIState, fresh_state
from .target import Target

logger = logging.getLogger("advi")

TRACE_ELBO_SAMPLES = 5
"""Draws of the log density checked at the end of every chunk (:meth:`CompiledADVI.run`),
also those of the robust loop's ELBO (:class:`advi.chunk.ChunkMoments`): the same draws for
every chunk (common random numbers), so two chunks' estimates differ by the change of q, not
the draws' noise (:func:`advi.stationarity.elbo_gain`). At 5 per chunk of 50 iterations, a
tenth of a log density per iteration (benchmarks/README.md, "Measurements behind the
library's defaults")."""

NO_REDRAWS, REDRAWS, VALUES_CHECKED = 0, 1, 2
"""The steps a fit's chunks run (:meth:`CompiledADVI.run`), in the order a fit moves through
them: no redraws (no loop inside a step); redraws of draws with a non-finite gradient; with
a non-finite value or gradient."""

CACHE_SIZE = 16
"""Configurations whose compiled functions are kept per process."""

_CACHE: collections.OrderedDict[Hashable, _Compiled] = collections.OrderedDict()


def _host_init(family: Family, dim: int, init: str, dtype: Any) -> Callable:
    """``initialise(rng_key) -> (keys, params, batch_key, seed)`` on the host: NumPy's
    generator seeded by the key's bits draws the purposes' raw keys (adapt, run, elbo),
    the initial parameters (``family.init`` with that generator, cast to ``dtype``), the
    minibatch key and the extra Laplace starts' seed; no program to compile (a compiled
    split and draw took 0.16-0.27 s of a cold fit: benchmarks/README.md)."""
    def initialise(rng_key: Array | np.ndarray) -> tuple[tuple[np.ndarray, ...], Any,
                                                         np.ndarray, int]:
        rng = np.random.default_rng(np.asarray(jax.device_get(rng_key)).ravel().tolist())
        keys = rng.integers(0, 2**32, size=(4, 2), dtype=np.uint32)
        params = jax.tree.map(lambda x: np.asarray(x, dtype), family.init(rng, dim, init))
        return (keys[0], keys[1], keys[2]), params, keys[3], int(keys[3, -1])

    return initialise


def _make_begin(optimizer: Any) -> Callable:
    def begin(params: Any) -> ADVIState:
        return fresh_state(params, optimizer, jnp.zeros((), jnp.int32))

    return begin


def _laplace_functions(target: Target) -> LogDensityFunctions:
    """The Laplace start's log density functions (also the end-of-fit check's value and
    gradient); their data argument is (batch_key, data): a minibatched target's mode is
    that of one fixed minibatch."""

    def log_density(zeta: Array, keyed_data: tuple[Array, Any]) -> Array:
        return target.log_density_fn(zeta, *keyed_data)

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
    chunk_len: int = 0  # steps whose draws come from the host (advi.chunk.host_chunk_len)


class _Compiled(NamedTuple):
    """The compiled functions of one configuration (what the in-process cache keeps)."""

    init: Callable
    begin: Callable
    laplace: LogDensityFunctions | None
    chunk: Callable  # steps that redraw nothing
    redraw_chunk: Lazy  # steps that redraw draws with a non-finite gradient
    checked_chunk: Lazy  # steps that also check the log density's values
    elbo: Lazy
    value_and_grad: Callable  # (zeta, (key, data)): the Laplace start's, or compiled on need


def _compile_all(target: Target, o: CompileSpec, optimizer: Any, dtype: Any) -> _Compiled:
    """Trace, lower and compile the functions of one configuration, one after the other on
    the calling thread (in its JAX context): the start's (the initial q; with the Laplace
    start, the log density's value and gradient, and -H), the iteration chunk and,
    for Stan's loop, the ELBO. The model is traced once for all of them (its log density is
    wrapped in ``jax.jit``), and none of them keeps the data.

    Raises:
        whatever tracing the model raises (e.g. a shape error in the model).
    """
    data = target.data
    target = target._replace(data=None, log_density_fn=jax.jit(target.log_density_fn))
    initialise = _host_init(o.family, target.dim, o.init, dtype)
    key = jax.ShapeDtypeStruct((2,), np.uint32)  # a raw key (advi.keys)
    _, params, batch_key, _ = initialise(np.zeros(2, np.uint32))  # their shapes
    laplace, fns, keyed = None, _laplace_functions(target), (batch_key, data)
    if o.laplace:
        scalar = jax.ShapeDtypeStruct((), params.mu.dtype)
        value_and_grad = aot(fns.value_and_grad, params.mu, keyed)
        laplace = LogDensityFunctions(
            value_and_grad, cheaper_precision(value_and_grad, fns.precision, target.dim),
            None if fns.search is None else aot(fns.search, params.mu, scalar, np.int32(1),
                                                 scalar, keyed))
    start = (initialise, aot(jax.jit(_make_begin(optimizer)), params), laplace)
    state, one = jax.eval_shape(_make_begin(optimizer), params), np.ones((), np.int32)
    fast, redrawing, checked = (
        jax.jit(_chunk_fn(target, o, optimizer, with_elbo, redraw))
        for with_elbo, redraw in ((False, False), (False, True), (True, True)))
    host_eps = ((jax.ShapeDtypeStruct((TRACE_ELBO_SAMPLES, target.dim), dtype),) +
                (jax.ShapeDtypeStruct((o.chunk_len, o.grad_samples, target.dim), dtype),)
                * bool(o.chunk_len)) * o.moments
    chunk = aot(fast, state, np.ones((), dtype), key, one, one, data, *host_eps)
    elbo = Lazy(jax.jit(make_elbo(target, o.family, o.elbo_samples)),
                elbo_compiler(target, o.family, o.elbo_samples))
    if not o.moments:  # Stan's loop estimates the ELBO from its first chunk on
        elbo.compiled = elbo.compiler(elbo.jitted, state.params, key, one, data)
    return _Compiled(*start, chunk, Lazy(redrawing), Lazy(checked), elbo,
                     Lazy(fns.value_and_grad) if laplace is None else laplace.value_and_grad)


def _chunk_fn(target: Target, o: CompileSpec, optimizer: Any, with_elbo: bool,
              redraw: bool) -> Callable:
    """The chunk function of :func:`_make_chunk` whose steps compute the log density's
    value too (``with_elbo``) or its gradient only (:mod:`advi.elbo`), and redraw
    non-finite draws (``redraw``) or not."""
    alg = algorithm(target, family=o.family, optimizer=optimizer, grad_samples=o.grad_samples,
                    precondition=o.precondition, init=o.init, with_elbo=with_elbo,
                    redraw=redraw)
    probe = None if o.moments else make_elbo(target, o.family, TRACE_ELBO_SAMPLES)
    return make_chunk(alg, o.family, probe, o.moments, hold=not redraw)


def _ran(chunk: Callable, args: tuple) -> tuple[ADVIState, int | None, Any]:
    """``chunk(*args)``: its state (on the device), the iteration of its failed step (None:
    none), its end (the finite flag, or ChunkMoments) on the host; one wait."""
    state, end = chunk(*args)
    failed, iteration, end = jax.device_get((state.failed, state.iteration, end))
    return state, int(iteration) if failed else None, end


class CompiledADVI:
    """The compiled setup, chunk and ELBO functions of one target and :class:`CompileSpec`,
    compiled on construction (:func:`_compile_all`, in the caller's JAX context) or taken
    from the in-process cache (``cache_hit``). The start (:meth:`setup`) runs on the host
    with compiled functions and NumPy arrays only: it traces and dispatches nothing.
    Construction raises whatever tracing the model raises."""

    def __init__(self, target: Target, options: CompileSpec, optimizer: optax.GradientTransformation
                 ) -> None:
        self.target, self.options, self.optimizer = target, options, optimizer
        self.family = options.family
        self.elbo_samples = options.elbo_samples
        self.level = NO_REDRAWS
        self._eps: tuple[bytes, np.ndarray] | None = None  # (key bits, trace eps)
        self._drawn: Any = None  # setup's initial params and the Laplace start's data
        self._refused_end: np.ndarray | None = None  # where a refused start's search ended
        self.dtype = jnp.result_type(float)
        key = None if target.cache_key is None else (target.cache_key, options, self.dtype)
        done = None if key is None else _CACHE.get(key)
        self.cache_hit = done is not None
        if done is not None:
            _CACHE.move_to_end(key)
        else:
            done = _compile_all(target, options, optimizer, self.dtype)
            if key is not None:
                _CACHE[key] = done
                while len(_CACHE) > CACHE_SIZE:
                    _CACHE.popitem(last=False)
        self._done: _Compiled = done
        self._lazies = [lazy for lazy in (done.redraw_chunk, done.checked_chunk, done.elbo,
                        getattr(done.laplace, "precision", None), done.value_and_grad)
                        if isinstance(lazy, Lazy)]

    def setup(self, rng_key: Array, extra_starts: int = EXTRA_STARTS
              ) -> tuple[tuple[Array, Array, Array], ADVIState, StartInfo]:
        """Keys (adapt, run, elbo), the initial state and how it was chosen: the initial
        mean drawn again where log p is not finite, flat coordinates refused (both
        :func:`advi.initial.finite_params`; not minibatched, or with the Laplace start), and
        with the Laplace start, L-BFGS on the host from it and ``extra_starts`` (>= 0) more
        inits (:func:`advi.multistart.multistart_laplace`). ``rng_key``: the fit's key."""
        done, unravel = self._done, getattr(self.target.numpyro, "unravel", None)
        keys, params, batch_key, seed = done.init(rng_key)
        info = StartInfo(False, 0, math.nan)
        if done.laplace is not None or self.target.num_data is None:  # (compiled for checks)
            params = finite_params(done.value_and_grad, self.family, params, (
                batch_key, self.target.data), self.options.init, int(seed), unravel)
        self._drawn = (params, (batch_key, self.target.data))
        if done.laplace is not None:
            start, note, warn = multistart_laplace(done.laplace, self.family, params.mu,
                                                   (batch_key, self.target.data), int(seed),
                                                   extra_starts)
            failing = None if start.ok or not start.nonfinite else failing_draws(
                done.value_and_grad, start.params.mu, params, (batch_key, self.target.data),
                int(seed))
            info = start_info(start, note, warn, done.laplace.precision is not None, failing)
            params = start.params if start.ok else params
            self._refused_end = None if start.ok else np.asarray(start.params.mu)
        return keys, done.begin(params), info

    def second_start(self, params: Any, refused_log_p: float
                     ) -> tuple[ADVIState, LaplaceStart] | None:
        """The state and start of :func:`advi.refit.second_start` from the fitted ``params``
        (after :meth:`setup`; ``refused_log_p``: ``StartInfo.log_p``), or None (not tried,
        refused, or no host search: no Laplace start, or K above ``hessian_max_dim``)."""
        fns = self._done.laplace
        if fns is None or fns.precision is None:
            return None
        start = second_start(fns, self.family, params, self._drawn[1], refused_log_p,
                             self._refused_end)
        return None if start is None else (self._done.begin(start.params), start)

    def curvature(self, zeta: np.ndarray) -> np.ndarray | None:
        """-H at ``zeta`` (K,), (K, K) float64, by the Laplace start's ``precision`` (after
        :meth:`setup`; None without: no Laplace start, or K above ``hessian_max_dim``)."""
        fns = self._done.laplace
        return None if fns is None or fns.precision is None else np.asarray(
            fns.precision(np.asarray(zeta), self._drawn[1]), np.float64)

    def initial_state(self, params: Any = None) -> ADVIState:
        """A fresh state at ``params``, by default the initial q :meth:`setup` drew."""
        return self._done.begin(self._drawn[0] if params is None else params)

    def run(self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int,
            trial: bool = False, narrowable: bool = False) -> Any:
        """``num_steps`` iterations at step-size scale ``eta`` (blocks until done); returns
        the state, or ``(state, advi.chunk.ChunkMoments)`` when compiled with moments.

        The steps compute the gradient only and redraw nothing (no loop inside a step,
        which a GPU runs about twice as fast). A chunk with a non-finite draw's gradient
        runs again from ``state`` with steps that redraw such draws (up to ``10 * M``, as
        Stan), as do later chunks. A chunk at whose end log p is not finite at one of
        :data:`TRACE_ELBO_SAMPLES` draws from q (final, or at the chunk's average) runs
        again with steps that also redraw non-finite values (``VALUES_CHECKED``), as do
        later chunks; these compile on first need (:attr:`lazy_compile_s`). Where the first
        step fails and the caller narrows q (``narrowable``,
        :class:`advi.driver.RestartPolicy`), the failed state returns at once. A ``trial``
        (Stan's eta search) switches nothing: its ELBO rejects an eta that overflows."""
        if self.options.moments and trial:  # the eta search: the state, chunk by chunk
            rows = self.options.chunk_len or num_steps
            for begun in range(0, num_steps, rows):
                steps = min(rows, num_steps - begun)
                state = self._run(state, eta, key, salt, steps, trial, False)[0]
            return state
        return self._run(state, eta, key, salt, num_steps, trial, narrowable)

    def _run(self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int,
             trial: bool, narrowable: bool) -> Any:
        args = (state, np.asarray(eta, self.dtype), key, np.asarray(salt, np.int32),
                np.asarray(num_steps, np.int32), self.target.data,
                *self._host_eps(key, salt, state, num_steps))
        done, level = self._done, self.level
        chunks = (done.chunk, done.redraw_chunk, done.checked_chunk)
        new, failed_at, end = _ran(chunks[level], args)
        if level == NO_REDRAWS and failed_at is not None:
            if failed_at == 0 and narrowable:  # q's own first draws: the caller narrows q
                return self._finished(new, end, key)[0]
            level = REDRAWS
            if not trial:
                self.level = level
                logger.info("non-finite gradient by iteration %d; from now on non-finite "
                            "draws are redrawn", int(state.iteration) + int(num_steps))
            new, _, end = _ran(chunks[level], args)
        out, finite = self._finished(new, end, key)
        if level == VALUES_CHECKED or trial or finite:
            return out
        self.level = VALUES_CHECKED
        logger.info("non-finite log density at iteration %d's draws; from now on every "
                    "draw's value is checked", int(state.iteration) + int(num_steps))
        new, _, end = _ran(chunks[VALUES_CHECKED], args)
        return self._finished(new, end, key)[0]

    def _host_eps(self, key: Array, salt: int, state: ADVIState, num_steps: int
                  ) -> tuple[np.ndarray, ...]:
        """With moments, the chunk's host draws: its end draws' eps (TRACE_ELBO_SAMPLES, K)
        from ``key`` (:func:`advi.families.host_standard_normal`, kept while the key is
        the same) and, with ``chunk_len``, its steps' (:func:`advi.chunk.step_eps`); else ()."""
        o = self.options
        if not o.moments:
            return ()
        bits = np.asarray(jax.device_get(key)).tobytes()
        if self._eps is None or self._eps[0] != bits:
            self._eps = (bits, host_standard_normal(key, (TRACE_ELBO_SAMPLES, self.target.dim),
                                                    self.dtype, TRACE_SALT))
        if not o.chunk_len:
            return (self._eps[1],)
        if num_steps > o.chunk_len:
            raise ValueError(f"num_steps={num_steps}: this chunk has draws for at most "
                             f"chunk_len={o.chunk_len} steps")
        shape = (o.chunk_len, o.grad_samples, self.target.dim)
        iteration = int(jax.device_get(state.iteration))
        return self._eps[1], step_eps(key, salt, iteration, shape, self.dtype)

    def _finished(self, state: ADVIState, end: Any, key: Array) -> tuple[Any, bool]:
        """From a chunk's state and its end (on the host: the finite flag, or ChunkMoments):
        (the state, or (state, ChunkMoments) with the ELBO by :func:`advi.chunk.with_elbo`:
        log p by the compiled value and gradient keyed by ``key``, a minibatch the same for
        every chunk), and whether log p was finite at the chunk's end draws."""
        if not self.options.moments:
            return state, bool(end)
        keyed = (key, self.target.data)
        moments, finite = with_elbo(lambda z: self._done.value_and_grad(z, keyed)[0], end)
        return (state, moments), finite

    def use_clock(self, clock: Callable[[], float]) -> None:
        """Time the functions compiled on first need (redrawing chunks, the ELBO, -H) on
        ``clock``, the fit's."""
        for lazy in self._lazies:
            lazy.clock = clock

    @property
    def lazy_compile_s(self) -> float:
        """Seconds those compilations took on that clock (0 for those not compiled)."""
        return sum(lazy.seconds for lazy in self._lazies)

    def gradient_check(self, params: Any, rng_key: Array, salt: int = CHECK_SALT) -> Any:
        """:func:`advi.checks.scaled_gradients` at ``params`` by the fit's value and gradient."""
        return scaled_gradients(self._done.value_and_grad, params, rng_key, (
            rng_key, self.target.data), salt, minibatched=self.target.num_data is not None)

    def log_weights_by_calls(self, params: Any, key: Array, n: int) -> np.ndarray | None:
        """:func:`advi.importance.by_calls` by the fit's value and gradient and ELBO."""
        done = self._done
        return by_calls(done.value_and_grad, done.elbo, params, key, n, (key, self.target.data))

    def elbo(self, params: Any, key: Array, salt: int, trial: bool = False
             ) -> tuple[float, np.ndarray]:
        """The ELBO (``-inf`` where non-finite draws exhausted the budget) and log weights;
        a non-finite log density makes later chunks check every draw (not after a trial)."""
        est = self._done.elbo(params, key, np.asarray(salt, np.int32), self.target.data)
        if int(est.redraws) and not (self.level == VALUES_CHECKED or trial):
            self.level = VALUES_CHECKED
            logger.info("non-finite log density at the ELBO's draws; from now on every "
                        "draw's value is checked")
        value = float(est.elbo) if bool(est.ok) else -math.inf
        return value if math.isfinite(value) else -math.inf, np.asarray(est.log_weights)

"""The ADVI loop: eta search, stochastic gradient ascent in jitted chunks, convergence test.

Algorithm 1 of the paper with Stan's refinements (``stan/variational/advi.hpp``): the eta
search of :func:`_adapt_eta`, the step-size sequence of :mod:`advi.step_size`, the
relative-ELBO test of :mod:`advi.convergence`. One compiled chunk function runs any number
of iterations for any eta (both are run-time arguments), so the eta search, the main loop
and restarts all reuse one compilation; iteration k draws its randomness from
``fold_in(key, k)``, so results do not depend on how the run is cut into chunks.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from .convergence import ConvergenceMonitor
from .elbo import elbo_estimate, elbo_grad
from .families import INIT_SCHEMES, Family, get_family
from .result import (
    ADVIError,
    ADVIResult,
    Approximation,
    CheckpointInfo,
    ELBOHistory,
)
from .step_size import get_optimizer
from .target import Target, from_numpyro

logger = logging.getLogger("advi")

ETA_GRID = (100.0, 10.0, 1.0, 0.1, 0.01)
"""Stan's eta search sequence (``advi::adapt_eta``)."""


class ADVIState(NamedTuple):
    """The state carried between iterations.

    Attributes:
        params: the family's parameters (pytree of float arrays, K-sized leaves).
        opt_state: the optimiser's state.
        iteration: () int32, iterations done.
        failed: () bool, True once a step met non-finite draws beyond the redraw budget or
            produced non-finite parameters; the state is then frozen at the last finite one.
    """

    params: Any
    opt_state: Any
    iteration: Array
    failed: Array


def _make_chunk(
    log_density_fn: Callable, family: Family, optimizer: optax.GradientTransformation, M: int
) -> Callable:
    """``chunk(state, eta, key, salt, num_steps, data) -> state``: num_steps ADVI
    iterations; iteration k uses ``fold_in(fold_in(key, salt), k)``."""

    def step(state: ADVIState, eta: Array, key: Array, data: Any) -> ADVIState:
        def log_density(zeta: Array, batch_key: Array) -> Array:
            return log_density_fn(zeta, batch_key, data)

        step_key = jax.random.fold_in(key, state.iteration)
        est = elbo_grad(log_density, family, state.params, step_key, M)
        updates, opt_state = optimizer.update(est.grad, state.opt_state, state.params)
        params = jax.tree.map(lambda p, u: p + eta * u, state.params, updates)
        finite = est.ok & jnp.all(
            jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)])
        )
        moved = ADVIState(params, opt_state, state.iteration + 1, jnp.zeros((), bool))
        frozen = state._replace(failed=jnp.ones((), bool))
        return jax.tree.map(lambda a, b: jnp.where(finite, a, b), moved, frozen)

    def chunk(
        state: ADVIState, eta: Array, key: Array, salt: Array, num_steps: Array, data: Any
    ) -> ADVIState:
        key = jax.random.fold_in(key, salt)

        def body(_: Array, s: ADVIState) -> ADVIState:
            return jax.lax.cond(s.failed, lambda s: s, lambda s: step(s, eta, key, data), s)

        return jax.lax.fori_loop(0, num_steps, body, state)

    return chunk


MINIBATCH_ELBO_BATCH = 5
"""Draws evaluated at a time by the ELBO of a minibatched target (:func:`elbo_estimate`'s
``batch_size``; full-data targets evaluate all S draws at once)."""


def _make_elbo(log_density_fn: Callable, family: Family, S: int, batch_size: int | None
               ) -> Callable:
    """``elbo(params, key, salt, data) -> (elbo, ok, log_weights (S,))`` with draws from
    ``fold_in(key, salt)``, ``batch_size`` at a time (:func:`advi.elbo.elbo_estimate`)."""

    def elbo(params: Any, key: Array, salt: Array, data: Any) -> tuple[Array, Array, Array]:
        def log_density(zeta: Array, batch_key: Array) -> Array:
            return log_density_fn(zeta, batch_key, data)

        return elbo_estimate(log_density, family, params, jax.random.fold_in(key, salt), S,
                             batch_size)

    return elbo


def _check_positive_int(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} must be an integer >= {minimum}")


def _validate(
    *,
    family: str,
    grad_samples: int,
    elbo_samples: int,
    eta: float | None,
    adapt_iter: int,
    tol_rel_obj: float,
    eval_elbo: int,
    max_iter: int,
    checkpoint_every: int | None,
    init: str,
    khat_samples: int,
) -> None:
    get_family(family)
    _check_positive_int("grad_samples", grad_samples)
    _check_positive_int("elbo_samples", elbo_samples)
    _check_positive_int("adapt_iter", adapt_iter)
    _check_positive_int("eval_elbo", eval_elbo)
    _check_positive_int("max_iter", max_iter)
    _check_positive_int("khat_samples", khat_samples, minimum=0)
    if checkpoint_every is not None:
        _check_positive_int("checkpoint_every", checkpoint_every)
    if eta is not None and not (isinstance(eta, (int, float)) and math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta={eta!r} must be a positive finite number, or None to adapt it")
    if not (isinstance(tol_rel_obj, (int, float)) and tol_rel_obj > 0):
        raise ValueError(f"tol_rel_obj={tol_rel_obj!r} must be a positive number")
    if init not in INIT_SCHEMES:
        raise ValueError(f"init={init!r} is not a valid initialisation; use one of {INIT_SCHEMES}")


class _Runner:
    """Holds the compiled functions and the clock of one :func:`fit` call."""

    def __init__(self, target: Target, family: Family, optimizer: Any, M: int, S: int) -> None:
        self.target, self.family, self.optimizer = target, family, optimizer
        self.chunk_fn = jax.jit(_make_chunk(target.log_density_fn, family, optimizer, M))
        batch = None if target.num_data is None else MINIBATCH_ELBO_BATCH
        self.elbo_fn = jax.jit(_make_elbo(target.log_density_fn, family, S, batch))
        self.dtype = jnp.result_type(float)
        self.elbo_samples = S

    def compile(self, state: ADVIState, key: Array) -> None:
        """Compile the chunk and ELBO functions ahead of time for these shapes, in two
        threads (XLA compiles each on one core)."""
        one = np.ones((), np.int32)
        lowered = (
            self.chunk_fn.lower(state, np.ones((), self.dtype), key, one, one, self.target.data),
            self.elbo_fn.lower(state.params, key, one, self.target.data),
        )
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            self.chunk_fn, self.elbo_fn = pool.map(lambda low: low.compile(), lowered)

    def run(
        self, state: ADVIState, eta: float, key: Array, salt: int, num_steps: int
    ) -> ADVIState:
        """``num_steps`` iterations at step-size scale ``eta`` (blocks until done)."""
        out = self.chunk_fn(
            state,
            np.asarray(eta, self.dtype),
            key,
            np.asarray(salt, np.int32),
            np.asarray(num_steps, np.int32),
            self.target.data,
        )
        return jax.block_until_ready(out)

    def elbo(self, params: Any, key: Array, salt: int) -> tuple[float, np.ndarray]:
        """The ELBO (``-inf`` where non-finite draws exhausted the budget) and log weights."""
        value, ok, log_weights = self.elbo_fn(
            params, key, np.asarray(salt, np.int32), self.target.data
        )
        value = float(value)
        if not (bool(ok) and math.isfinite(value)):
            value = -math.inf
        return value, np.asarray(log_weights)


def _fresh_state(params: Any, optimizer: optax.GradientTransformation, it: Array) -> ADVIState:
    return ADVIState(params, optimizer.init(params), it, jnp.zeros((), bool))


def _setup(
    rng_key: Array, family: Family, optimizer: optax.GradientTransformation, dim: int, init: str
) -> tuple[Array, ADVIState]:
    """Split the key by purpose and build the initial state, in one compiled call."""

    def setup(key: Array) -> tuple[Array, ADVIState]:
        keys = jax.random.split(key, 4)
        params = family.init(keys[0], dim, init)
        return keys[1:], _fresh_state(params, optimizer, jnp.zeros((), jnp.int32))

    return jax.jit(setup)(rng_key)


def _adapt_eta(runner: _Runner, state0: ADVIState, key: Array, adapt_iter: int) -> float:
    """Stan's eta search (``advi::adapt_eta``).

    Each eta of :data:`ETA_GRID` runs ``adapt_iter`` iterations from the initial q; the
    search stops at the first eta whose ELBO is worse than the best so far once that best
    has improved on the initial ELBO, and keeps the best eta.

    Raises:
        ADVIError: when the initial ELBO is not finite or no eta improves on it.
    """
    elbo_init, _ = runner.elbo(state0.params, key, 0)
    if not math.isfinite(elbo_init):
        raise ADVIError(
            "the ELBO at the initial approximation is not finite (every draw gave a "
            "non-finite log density); check the model, or use init='zero'"
        )
    elbo_best, eta_best = -math.inf, None
    for index, eta in enumerate(ETA_GRID):
        state = runner.run(state0, eta, key, index, adapt_iter)
        elbo = -math.inf
        if not bool(state.failed):
            elbo, _ = runner.elbo(state.params, key, index + 1)
        logger.info("eta search: eta=%g elbo=%.6g (initial %.6g)", eta, elbo, elbo_init)
        if elbo < elbo_best and elbo_best > elbo_init:
            break
        if index < len(ETA_GRID) - 1:
            elbo_best, eta_best = elbo, eta
        elif elbo > elbo_init:
            eta_best = eta
        else:
            raise ADVIError(
                f"every eta in {ETA_GRID} failed to improve the initial ELBO {elbo_init:.6g} "
                f"within adapt_iter={adapt_iter} iterations; the model may be severely "
                "ill-conditioned or misspecified (or pass eta=... explicitly)"
            )
    logger.info("eta search: chose eta=%g", eta_best)
    return float(eta_best)


def _smaller_eta(eta: float) -> float | None:
    smaller = [e for e in ETA_GRID if e < eta * (1 - 1e-9)]
    return max(smaller) if smaller else None


def fit(
    model: Callable | Target,
    *model_args: Any,
    rng_key: Array,
    family: str = "meanfield",
    grad_samples: int = 1,
    elbo_samples: int = 100,
    eta: float | None = None,
    adapt_iter: int = 50,
    tol_rel_obj: float = 0.01,
    eval_elbo: int = 100,
    max_iter: int = 10000,
    minibatch_size: int | None = None,
    minibatch_plate: str | None = None,
    checkpoint_every: int | None = None,
    checkpoint: Callable[[CheckpointInfo], bool | None] | None = None,
    init: str = "random",
    optimizer: str | optax.GradientTransformation = "stan",
    khat_samples: int = 1000,
    **model_kwargs: Any,
) -> ADVIResult:
    """Fit a Gaussian approximation in the unconstrained space by ADVI (paper Algorithm 1).

    Args:
        model: a NumPyro model (called as ``model(*model_args, **model_kwargs)``) or a
            :class:`advi.Target` (e.g. from :func:`advi.from_log_density`).
        rng_key: a JAX PRNG key; the same key gives the same result on the same machine.
        family: "meanfield" (paper) or "fullrank".
        grad_samples: M, draws per gradient (paper: M = 1 suffices).
        elbo_samples: draws per ELBO estimate for the convergence test (Stan: 100).
        eta: step-size scale; None runs Stan's eta search over (100, 10, 1, 0.1, 0.01).
        adapt_iter: iterations per eta in the search (Stan: 50).
        tol_rel_obj: relative-ELBO tolerance (Stan: 0.01).
        eval_elbo: iterations between ELBO estimates (Stan: 100).
        max_iter: iteration limit (Stan: 10000).
        minibatch_size: B for stochastic ADVI (paper Section 2.6), or None for full data.
        minibatch_plate: the data plate to subsample (None: the only plate, or "data").
        checkpoint_every: iterations between checkpoint calls (default: ``eval_elbo``).
        checkpoint: ``hook(info: CheckpointInfo) -> bool | None`` called every
            ``checkpoint_every`` iterations and once at the end; its time is excluded from
            the reported seconds; returning True stops the fit ("stopped by checkpoint").
        init: "random" (mu ~ N(0, I), PAPER.md's choice), "zero" (Algorithm 1) or "stan"
            (mu ~ U(-2, 2)); omega = 0 (L = I) in every case.
        optimizer: "stan" (Appendix E's sequence) or an optax name / transform with unit
            learning rate, scaled by eta (:func:`advi.step_size.get_optimizer`).
        khat_samples: draws for the Pareto k-hat diagnostic (0 skips it).
        **model_kwargs: keyword arguments of the model.

    Returns:
        :class:`ADVIResult`.

    Raises:
        ValueError: for invalid arguments (naming the value), before any compilation.
        ADVIError: when the eta search fails, or when non-finite draws persist at the
            smallest eta; ``err.result`` keeps the last finite state and its history.

    Non-finite draws are redrawn (at most 10 M per gradient); when that budget runs out the
    run restarts with the next smaller eta of the grid (and a fresh step-size history) from
    the last state whose ELBO estimate was finite (the initial q before the first estimate),
    with a warning, instead of stopping as Stan does.
    """
    _validate(
        family=family,
        grad_samples=grad_samples,
        elbo_samples=elbo_samples,
        eta=eta,
        adapt_iter=adapt_iter,
        tol_rel_obj=tol_rel_obj,
        eval_elbo=eval_elbo,
        max_iter=max_iter,
        checkpoint_every=checkpoint_every,
        init=init,
        khat_samples=khat_samples,
    )
    if isinstance(model, Target):
        if minibatch_size is not None:
            raise ValueError(
                "minibatch_size applies to NumPyro models only; a Target's log density "
                "does its own subsampling"
            )
        target = model
    else:
        target = from_numpyro(
            model,
            model_args,
            model_kwargs,
            minibatch_size=minibatch_size,
            minibatch_plate=minibatch_plate,
        )
    fam = get_family(family)
    opt = get_optimizer(optimizer)
    checkpoint_every = checkpoint_every or eval_elbo
    chunk_len = math.gcd(eval_elbo, checkpoint_every)
    start = time.perf_counter()
    (adapt_key, run_key, elbo_key), state0 = _setup(rng_key, fam, opt, target.dim, init)
    runner = _Runner(target, fam, opt, grad_samples, elbo_samples)
    runner.compile(state0, run_key)
    compile_s = time.perf_counter() - start

    start = time.perf_counter()
    eta_adapted = eta is None
    if eta_adapted:
        eta = _adapt_eta(runner, state0, adapt_key, adapt_iter)
    adapt_s = time.perf_counter() - start
    return _optimise(
        runner,
        state0,
        float(eta),
        eta_adapted=eta_adapted,
        run_key=run_key,
        elbo_key=elbo_key,
        compile_s=compile_s,
        adapt_s=adapt_s,
        tol_rel_obj=tol_rel_obj,
        eval_elbo=eval_elbo,
        max_iter=max_iter,
        chunk_len=chunk_len,
        checkpoint_every=checkpoint_every,
        checkpoint=checkpoint,
        khat_samples=khat_samples,
    )


def _optimise(
    runner: _Runner,
    state: ADVIState,
    eta: float,
    *,
    eta_adapted: bool,
    run_key: Array,
    elbo_key: Array,
    compile_s: float,
    adapt_s: float,
    tol_rel_obj: float,
    eval_elbo: int,
    max_iter: int,
    chunk_len: int,
    checkpoint_every: int,
    checkpoint: Callable | None,
    khat_samples: int,
) -> ADVIResult:
    """The main loop of :func:`fit` after the eta search."""
    monitor = ConvergenceMonitor(tol_rel_obj=tol_rel_obj, max_iter=max_iter, eval_elbo=eval_elbo)
    rows: list[tuple] = []
    restarts: list[tuple[int, float, float]] = []
    notes: list[str] = []
    wall_s, elbo, reason = adapt_s, None, "max_iter"
    last_good = state
    last_hook = -1

    def make_result(final: ADVIState, converged: bool, log_weights: Any) -> ADVIResult:
        columns = zip(*rows, strict=True) if rows else ([] for _ in ELBOHistory._fields)
        history = ELBOHistory(*(np.asarray(c) for c in columns))
        return ADVIResult(
            approximation=approximation(final),
            eta=eta,
            eta_adapted=eta_adapted,
            converged=converged,
            convergence_reason=reason,
            num_iterations=int(final.iteration),
            elbo_history=history,
            wall_s=wall_s,
            adapt_s=adapt_s,
            compile_s=compile_s,
            khat_log_weights=log_weights,
            restarts=tuple(restarts),
            warnings=tuple(notes),
        )

    def approximation(at: ADVIState) -> Approximation:
        return Approximation(runner.family, at.params, runner.target)

    def warn(message: str) -> None:
        notes.append(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)

    def restart(from_state: ADVIState, cause: str) -> tuple[ADVIState, float]:
        new_eta = _smaller_eta(eta)
        it = int(from_state.iteration)
        if new_eta is None:
            raise ADVIError(
                f"{cause} at iteration {it} with eta={eta:g}, the smallest eta of {ETA_GRID}; "
                "stopping. err.result holds the last finite state and its ELBO history.",
                make_result(from_state, False, None),
            )
        restarts.append((it, eta, new_eta))
        warn(f"{cause} at iteration {it} with eta={eta:g}; restarting from the last finite "
             f"state with eta={new_eta:g}")
        return _fresh_state(from_state.params, runner.optimizer, from_state.iteration), new_eta

    converged = False
    while int(state.iteration) < max_iter:
        it = int(state.iteration)
        num_steps = min(chunk_len - it % chunk_len, max_iter - it)
        tick = time.perf_counter()
        new_state = runner.run(state, eta, run_key, len(restarts), num_steps)
        if bool(new_state.failed):
            wall_s += time.perf_counter() - tick
            state, eta = restart(last_good, "non-finite gradients beyond 10*grad_samples redraws")
            continue
        state = new_state
        it = int(state.iteration)
        if it % eval_elbo == 0 or it == max_iter:
            elbo_value, _ = runner.elbo(state.params, elbo_key, it)
            if not math.isfinite(elbo_value):
                wall_s += time.perf_counter() - tick
                state, eta = restart(last_good, "non-finite ELBO beyond elbo_samples redraws")
                continue
            elbo, last_good = elbo_value, state
            status = monitor.update(it, elbo)
            wall_s += time.perf_counter() - tick
            rows.append(
                (it, elbo, status.rel_change, status.rel_mean, status.rel_median, eta, wall_s)
            )
            logger.info(
                "iter %6d  elbo %12.6g  rel mean %.4f median %.4f  eta %g  %.2f s",
                it, elbo, status.rel_mean, status.rel_median, eta, wall_s,
            )
            if status.may_diverge and not any("diverging" in n for n in notes):
                warn(f"iteration {it}: relative ELBO change mean {status.rel_mean:.3g}, "
                     f"median {status.rel_median:.3g} > 0.5; the fit may be diverging")
            if status.converged_by:
                converged, reason = True, status.converged_by
        else:
            wall_s += time.perf_counter() - tick
        if checkpoint is not None and (it % checkpoint_every == 0 or converged):
            last_hook = it
            if checkpoint(CheckpointInfo(it, wall_s, elbo, approximation(state))):
                reason = "stopped by checkpoint"
                break
        if converged:
            break
    if reason == "max_iter":
        warn(f"max_iter={max_iter} reached before the relative ELBO change fell below "
             f"tol_rel_obj={tol_rel_obj}; the approximation may not have converged")
    if checkpoint is not None and last_hook != int(state.iteration):
        checkpoint(CheckpointInfo(int(state.iteration), wall_s, elbo, approximation(state)))
    log_weights = None
    if khat_samples > 0 and runner.target.num_data is None:
        calls = -(-khat_samples // runner.elbo_samples)
        log_weights = np.concatenate(
            [runner.elbo(state.params, elbo_key, -1 - i)[1] for i in range(calls)]
        )[:khat_samples]
    return make_result(state, converged, log_weights)

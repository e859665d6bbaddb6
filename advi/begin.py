"""A fit up to its main loop (:func:`advi.fit`): the target, its compiled functions, the
start (:meth:`advi.compiled.CompiledADVI.setup`) and its report, and the same begun again in
float64 (``dtype="auto"``, :mod:`advi.precision`)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import jax.numpy as jnp
import numpy as np
from jax import Array

from . import precision, streaming
from .cache import enable_default_cache
from .chunk import host_chunk_len
from .compiled import CompiledADVI, CompileSpec
from .driver import Clock
from .families import get_family
from .options import Options
from .result import ADVIResult, Approximation
from .step import ADVIState
from .step_size import get_optimizer
from .target import Target, from_numpyro

logger = logging.getLogger("advi")


class Begun(NamedTuple):
    """A fit up to its main loop: the compiled functions, keys (adapt, run, elbo), the
    initial state, how it was chosen, and seconds of compilation and of the start; where
    ``dtype="auto"`` refitted in float64, why (:func:`advi.precision.float32_shortfall`;
    else None); where the fit continues another (:mod:`advi.anneal`), the mean that one
    started from (else None)."""

    compiled: CompiledADVI
    keys: tuple[Array, Array, Array]
    state0: ADVIState
    start_info: Any
    compile_s: float
    start_s: float
    promoted: str | None = None
    origin: Any = None  # where a continued fit (advi.anneal) first started: its mean (K,)


def begin(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
           o: Options, rng_key: Array, clock: Clock) -> Begun:
    """The target, its compiled functions and the start, in JAX's current default float."""
    stream = None
    if streaming.is_streamed(model_args, model_kwargs):
        target, stream = streaming.streamed_target(model, model_args, model_kwargs, o, rng_key)
    else:
        target = _target(model, model_args, model_kwargs, o)
    _check_size(target, o)
    opt = get_optimizer(o.optimizer)
    enable_default_cache()
    begun = clock()
    compiled = _compile(target, o, opt, stream)
    start = clock()
    logger.info("compiled in %.1f s", start - begun)
    compiled.use_clock(clock)  # the start's Hessian compiles on first need: compile_s
    before = compiled.lazy_compile_s
    keys, state0, start_info = compiled.setup(rng_key, extra_starts=o.laplace_starts - 1)
    lazy = compiled.lazy_compile_s - before
    start_s = clock() - start - lazy
    _report_start(o, start_info, start_s)
    return Begun(compiled, keys, state0, start_info, start - begun + lazy, start_s)


def _compile(target: Target, o: Options, opt: Any, stream: streaming.Stream | None = None
             ) -> CompiledADVI:
    """The fit's compiled functions (start, iterations, ELBO) for options ``o``, compiled
    now (``jax.jit(...).lower(...).compile()``) unless the in-process cache has them; with
    a ``stream``, reading a new pool of rows for each call (:mod:`advi.streaming`)."""
    logger.info("compiling the start, iteration and ELBO functions ...")
    spec = CompileSpec(
        family=get_family(o.family), optimizer=o.optimizer,
        grad_samples=cast(int, o.grad_samples),  # resolve() turns None into the family's M
        elbo_samples=o.elbo_samples, init=o.init, laplace=o.start == "laplace",
        precondition=o.precondition, moments=o.stop == "rhat",
        chunk_len=host_chunk_len(o.eval_elbo, cast(int, o.grad_samples), target.dim)
        if o.stop == "rhat" else 0,
    )
    if stream is None:
        return CompiledADVI(target, spec, opt)
    return streaming.StreamedADVI(target, spec, opt, stream)


def _report_start(o: Options, start_info: Any, seconds: float) -> None:
    """Logs how the fit started and warns with what the extra Laplace starts found when
    they found a rival mode (:mod:`advi.multistart`)."""
    if o.start == "laplace":
        logger.info("start: %s after %d L-BFGS steps (%.2f s)",
                    "Laplace" if bool(start_info.laplace) else "random (no usable mode)",
                    int(start_info.steps), seconds)
    if start_info.note is not None:
        logger.info("start: %s", start_info.note)
        if start_info.warn:
            warnings.warn(start_info.note, RuntimeWarning, stacklevel=3)


def in_float64(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
                o: Options, rng_key: Array, clock: Clock, begun: Begun, reason: str,
                spent: ADVIResult | None = None) -> Begun:
    """The fit begun again in float64 because ``reason`` (``dtype="auto"``); its seconds
    add those of ``begun`` and, where a float32 fit ``spent`` was run and discarded, its
    compilation and wall time (so that the new fit's times continue from it)."""
    logger.info("%s: the fit runs again in float64 (dtype='auto')", reason)
    with precision.scope("float64"):
        again = begin(model, model_args, model_kwargs, o, rng_key, clock)
    compile_s = begun.compile_s + again.compile_s
    start_s = begun.start_s + again.start_s
    if spent is not None:
        compile_s, start_s = compile_s + spent.compile_s - begun.compile_s, start_s + (
            spent.wall_s - begun.start_s)
    return again._replace(compile_s=compile_s, start_s=start_s, promoted=reason)


def float64_probes(begun: Begun, spent: ADVIResult | None) -> Array:
    """Two draws of zeta (2, K) at which to ask :func:`advi.precision.carries_float64`:
    from the fit ``spent`` (an :class:`ADVIError`'s ``result``), or the initial q."""
    params = begun.state0.params if spent is None else spent.approximation.params
    return Approximation(begun.compiled.family, params, begun.compiled.target).sample_zeta(
        begun.keys[2], 2)


def _target(model: Callable | Target, model_args: tuple, model_kwargs: dict | None,
            o: Options) -> Target:
    if isinstance(model, Target):
        if o.minibatch_size is not None:
            raise ValueError(
                "minibatch_size applies to NumPyro models only; a Target's log density "
                "does its own subsampling"
            )
        return model
    return from_numpyro(model, model_args, model_kwargs, minibatch_size=o.minibatch_size,
                        minibatch_plate=o.minibatch_plate)


def _check_size(target: Target, o: Options) -> None:
    """Refuse, before any allocation, a latent space of size 0 and a full-rank q too large."""
    dim = target.dim
    if dim == 0:
        raise ValueError("the model's latent sites have 0 unconstrained dimensions (every "
                         "latent site is empty): there is nothing to infer")
    if o.family == "fullrank" and dim > o.fullrank_max_dim:
        gib = dim * dim * np.dtype(jnp.result_type(float)).itemsize / 2**30
        raise ValueError(
            f"family='fullrank' with K={dim} latent dimensions needs a {dim}x{dim} Cholesky "
            f"factor: {gib:.2f} GiB for L alone, and as much again for its gradient and each "
            f"optimiser moment; above fullrank_max_dim={o.fullrank_max_dim} use "
            "family='meanfield' (or raise fullrank_max_dim)"
        )


def start_name(o: Options, info: Any, promoted: str | None = None) -> str:
    """``ADVIResult.start``: how q started (``info.steps``: the L-BFGS iterations of every
    start), and why the fit ran in float64 where it was promoted."""
    if o.start != "laplace":
        return f"init={o.init}"
    if bool(info.laplace) and info.again:
        name = f"laplace, again after a fit from init={o.init} ({int(info.steps)} L-BFGS steps)"
    elif bool(info.laplace):
        name = f"laplace ({int(info.steps)} L-BFGS steps)"
    elif info.again:
        name = (f"init={o.init}, again after the fit from the Laplace start "
                f"({int(info.steps)} L-BFGS steps) did not reach the optimum")
    else:
        name = f"init={o.init} (no usable mode after {int(info.steps)} L-BFGS steps)"
    if promoted is None:
        return name
    return f"{name}; float64 ({promoted})"

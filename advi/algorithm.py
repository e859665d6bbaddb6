"""ADVI as an algorithm object of pure functions, for users who write their own loop.

In the style of BlackJAX's ``meanfield_vi`` (``VIAlgorithm(init, step, sample)``):
:func:`algorithm` resolves the family and the optimiser once and returns three pure
functions; the data are an argument of ``step``, so a jitted step takes them as an input
instead of baking them in as constants, and the algorithm keeps no reference to them::

    alg = advi.algorithm(target, family="meanfield", optimizer="adam", grad_samples=4)
    state = alg.init(key)

    @jax.jit
    def run(state, data):
        def body(k, s):
            return alg.step(s, jax.random.fold_in(key, k), 0.05, data)[0]
        return jax.lax.fori_loop(0, 1000, body, state)

    state = run(state, target.data)
    zeta = alg.sample(state.params, key, 100)      # (100, K) draws from q

:func:`advi.fit` runs the same ``step`` inside its compiled chunks of iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import jax.numpy as jnp
import optax
from jax import Array

from .families import Family, get_family
from .options import Options
from .precision import matmul_scope
from .presets import resolve
from .result import Approximation
from .step import ADVIState, StepInfo, fresh_state, step
from .step_size import get_optimizer
from .target import Target


class Algorithm(NamedTuple):
    """ADVI's pure functions for one target, family and optimiser (:func:`algorithm`).

    Attributes:
        init: ``init(rng_key, params=None) -> ADVIState``; q with mean from the ``init``
            scheme and unit scales (omega = 0, L = I), or at ``params`` when given (then
            ``rng_key`` is unused); a fresh optimiser state, iteration 0.
        step: ``step(state, rng_key, eta, data) -> (ADVIState, StepInfo)``; one iteration
            of paper Algorithm 1 (the M-draw gradient of Eqs. 5-6, the optimiser's
            direction, a step of scale eta, a float or () array) on ``data``, the target's
            arrays (``target.data``; ``()`` for :func:`advi.from_log_density`). A refused
            step (``info.ok`` False) returns the old state with ``failed`` set. An
            optional fifth argument ``eps`` ((M, K) standard normals) gives the step's
            draws; without it they are drawn from ``rng_key``.
        sample: ``sample(params, rng_key, num_samples) -> (num_samples, K)`` draws from q
            in zeta-space (``state.params`` or ``result.params``).
    """

    init: Callable[..., ADVIState]
    step: Callable[..., tuple[ADVIState, StepInfo]]
    sample: Callable[..., Array]


def algorithm(
    target: Target,
    *,
    family: str | Family = "meanfield",
    optimizer: str | optax.GradientTransformation = "stan",
    grad_samples: int | None = 1,
    precondition: bool = False,
    init: str = "random",
    with_elbo: bool = True,
    redraw: bool = True,
) -> Algorithm:
    """ADVI for ``target`` as an :class:`Algorithm` of pure, jit-able functions.

    Args:
        target: what to fit (:func:`advi.from_numpyro`, :func:`advi.from_log_density`);
            only its functions and K are kept, never its data.
        family: "meanfield" or "fullrank" (or a :class:`advi.families.Family`).
        optimizer: as :func:`advi.get_optimizer` ("stan": the paper's step-size sequence).
        grad_samples: M >= 1 draws per gradient, or None: by family, as
            :func:`advi.presets.resolve` (1 mean-field, 32 full-rank).
        precondition: mean-field: scale the mean's steps by q's standard deviations;
            full-rank: steps in the coordinates whitened by q (the robust preset's steps).
        init: the initial mean: "random" (N(0, I)), "zero" (Algorithm 1), "stan" (U(-2, 2)).
        with_elbo: each step also estimates the ELBO from its draws (``StepInfo.elbo``);
            False computes only the log density's gradient, which is cheaper where the
            value needs work the gradient does not (:mod:`advi.elbo`), and ``elbo`` is None.
        redraw: redraw a step's non-finite draws, up to ``10 * M`` (Stan's rule); False:
            a step with a non-finite draw is refused (``info.ok`` False, ``failed`` set),
            and the step has no loop inside, which a GPU runs faster (it tests a loop's
            condition on the host).

    The functions trace matrix products at the dtype's full precision, as :func:`advi.fit`
    does (:func:`advi.precision.matmul_scope`; a precision the caller set when tracing them
    is kept).

    Raises:
        ValueError: naming an invalid family, optimizer, grad_samples or init and the valid
            values (checked as :class:`advi.Options` checks them).
    """
    fam = family if isinstance(family, Family) else get_family(family)
    opt = get_optimizer(optimizer)
    draws = cast(int, resolve(Options(  # resolve() turns None into the family's M
        family=fam.name, optimizer=opt, grad_samples=grad_samples, precondition=precondition,
        init=init), {}).grad_samples)
    bare = target._replace(data=None)

    # each function traces its matrix products at full precision unless the caller chose
    # one (matmul_scope), as advi.fit does: the setting is read when JAX traces them
    def init_fn(rng_key: Array | None, params: Any = None) -> ADVIState:
        with matmul_scope():
            if params is None:
                params = fam.init(rng_key, bare.dim, init)
            return fresh_state(params, opt, jnp.zeros((), jnp.int32))

    def step_fn(state: ADVIState, rng_key: Array, eta: float | Array, data: Any,
                eps: Array | None = None) -> tuple[ADVIState, StepInfo]:
        with matmul_scope():
            return step(bare._replace(data=data), state, rng_key, eta, family=fam,
                        optimizer=opt, grad_samples=draws, precondition=precondition,
                        with_elbo=with_elbo, redraw=redraw, eps=eps)

    def sample_fn(params: Any, rng_key: Array, num_samples: int) -> Array:
        with matmul_scope():
            return Approximation(fam, params, bare).sample_zeta(rng_key, num_samples)

    return Algorithm(init_fn, step_fn, sample_fn)

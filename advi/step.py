"""One ADVI iteration as pure functions over NamedTuples (the BlackJAX ``meanfield_vi`` style).

:func:`init` builds the state, :func:`step` takes one stochastic gradient step (paper
Algorithm 1, one pass of its loop). :func:`advi.fit` compiles chunks of these steps; a user
who wants their own loop (own schedule, own stopping rule, logging) calls them directly::

    state = advi.init(target, key, family="meanfield", optimizer="adam")
    step = jax.jit(functools.partial(advi.step, target, eta=0.1, optimizer="adam"))
    for k in range(1000):
        state, info = step(state, jax.random.fold_in(key, k))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array

from .elbo import elbo_grad, whitened_elbo_grad
from .families import Family, get_family
from .step_size import get_optimizer
from .target import Target
from .whitening import whitened_step


class ADVIState(NamedTuple):
    """The state carried between iterations.

    Attributes:
        params: the family's parameters (``MeanFieldParams`` or ``FullRankParams``).
        opt_state: the optimiser's state.
        iteration: () int32, iterations done.
        failed: () bool, True once a step met non-finite draws beyond the redraw budget or
            produced non-finite parameters; the state is then frozen at the last finite one.
        redraws: () int32, non-finite draws replaced so far (Stan replaces them silently;
            here they are counted and reported as ``ADVIResult.redraws``).
    """

    params: Any
    opt_state: Any
    iteration: Array
    failed: Array
    redraws: Array


class StepInfo(NamedTuple):
    """What one :func:`step` reports.

    Attributes:
        elbo: () float, the M-draw ELBO estimate at the parameters before the step (nats).
        redraws: () int32, non-finite draws replaced in this step.
        ok: () bool, False when the step was refused (non-finite draws beyond the budget,
            or non-finite parameters after the update); the state is then unchanged except
            for ``failed``.
    """

    elbo: Array
    redraws: Array
    ok: Array


def fresh_state(params: Any, optimizer: optax.GradientTransformation, iteration: Array,
                redraws: Array | int = 0) -> ADVIState:
    """An :class:`ADVIState` at ``params`` with a new optimiser history."""
    return ADVIState(params, optimizer.init(params), iteration, jnp.zeros((), bool),
                     jnp.asarray(redraws, jnp.int32))


def init(
    target: Target,
    rng_key: Array,
    *,
    family: str | Family = "meanfield",
    optimizer: str | optax.GradientTransformation = "stan",
    init: str = "random",
) -> ADVIState:
    """The initial state: q with mean from ``init`` and unit scales (omega = 0, L = I).

    Args:
        target: what to fit (:func:`advi.from_numpyro`, :func:`advi.from_log_density`).
        rng_key: PRNG key for the initial mean.
        family: "meanfield" or "fullrank" (or a :class:`advi.families.Family`).
        optimizer: as :func:`advi.get_optimizer`.
        init: "random" (mu ~ N(0, I)), "zero" (Algorithm 1) or "stan" (mu ~ U(-2, 2)).

    Raises:
        ValueError: for an unknown family, optimizer or init scheme.
    """
    fam = family if isinstance(family, Family) else get_family(family)
    params = fam.init(rng_key, target.dim, init)
    return fresh_state(params, get_optimizer(optimizer), jnp.zeros((), jnp.int32))


def precondition_by_scale(family: Family, params: Any, updates: Any) -> Any:
    """Multiply the update of the mean by q's marginal standard deviations, so that a unit
    step moves each coordinate by about one of its own posterior standard deviations
    whatever the scale of the model's parameters (a diagonal preconditioner; the fixed
    points are unchanged). The scales are not differentiated. Mean-field only: the
    full-rank family's steps are whitened by q instead (:mod:`advi.whitening`)."""
    std = jax.lax.stop_gradient(family.std(params))
    return updates._replace(mu=updates.mu * std)


def step(
    target: Target,
    state: ADVIState,
    rng_key: Array,
    eta: float | Array,
    *,
    family: str | Family = "meanfield",
    optimizer: str | optax.GradientTransformation = "stan",
    grad_samples: int = 1,
    precondition: bool = False,
) -> tuple[ADVIState, StepInfo]:
    """One ADVI iteration: the M-draw reparameterised gradient (paper Eqs. 5-6), the
    optimiser's direction, a step of scale ``eta``.

    Args:
        target: what to fit; its ``data`` are read here (jit-compile with the target
            closed over and its data passed as an argument to avoid baking them in).
        state: the current :class:`ADVIState`.
        rng_key: the key of this iteration (draws and minibatches).
        eta: step-size scale (float or () array).
        family, optimizer: as in :func:`init`; must match the state's.
        grad_samples: M >= 1 draws per gradient.
        precondition: mean-field: scale mean updates by q's standard deviations
            (:func:`precondition_by_scale`); full-rank: natural-gradient steps in the
            coordinates whitened by q (:mod:`advi.whitening`), which need no per-coordinate
            scaling, so the optimiser is not used (its state is carried unchanged).

    Returns:
        ``(new_state, info)``; a refused step (``info.ok`` False) returns the old state
        with ``failed`` set.
    """
    fam = family if isinstance(family, Family) else get_family(family)
    opt = get_optimizer(optimizer)

    def log_density(zeta: Array, batch_key: Array) -> Array:
        return target.log_density_fn(zeta, batch_key, target.data)

    if precondition and fam.name == "fullrank":  # natural-gradient steps, no optimiser
        est = whitened_elbo_grad(log_density, state.params, rng_key, grad_samples)
        params = whitened_step(state.params, est.grad, eta, grad_samples)
        opt_state = state.opt_state
    else:
        est = elbo_grad(log_density, fam, state.params, rng_key, grad_samples)
        updates, opt_state = opt.update(est.grad, state.opt_state, state.params)
        if precondition:
            updates = precondition_by_scale(fam, state.params, updates)
        params = jax.tree.map(lambda p, u: p + eta * u, state.params, updates)
    ok = est.ok & jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))
    moved = ADVIState(params, opt_state, state.iteration + 1, jnp.zeros((), bool),
                      state.redraws + est.redraws)
    frozen = state._replace(failed=jnp.ones((), bool))
    new = jax.tree.map(lambda a, b: jnp.where(ok, a, b), moved, frozen)
    return new, StepInfo(est.elbo, est.redraws, ok)

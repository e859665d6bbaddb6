"""One ADVI iteration as a pure function over NamedTuples (the BlackJAX ``meanfield_vi`` style).

:func:`step` takes one stochastic gradient step (paper Algorithm 1, one pass of its loop)
with a family and an optimiser already built. Users reach it through
:func:`advi.algorithm`, which builds those once and passes the data as an argument;
:func:`advi.fit` compiles chunks of the same steps.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array

from .elbo import elbo_grad, whitened_elbo_grad
from .families import Family
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
        elbo: () float, the M-draw ELBO estimate at the parameters before the step (nats),
            or None for a step taken with ``with_elbo=False``.
        redraws: () int32, non-finite draws replaced in this step.
        ok: () bool, False when the step was refused (non-finite draws beyond the budget,
            or non-finite parameters after the update); the state is then unchanged except
            for ``failed``.
    """

    elbo: Array | None
    redraws: Array
    ok: Array


def fresh_state(params: Any, optimizer: optax.GradientTransformation, iteration: Array,
                redraws: Array | int = 0) -> ADVIState:
    """An :class:`ADVIState` at ``params`` with a new optimiser history."""
    return ADVIState(params, optimizer.init(params), iteration, jnp.zeros((), bool),
                     jnp.asarray(redraws, jnp.int32))


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
    family: Family,
    optimizer: optax.GradientTransformation,
    grad_samples: int = 1,
    precondition: bool = False,
    with_elbo: bool = True,
    redraw: bool = True,
    eps: Array | None = None,
) -> tuple[ADVIState, StepInfo]:
    """One ADVI iteration: the M-draw reparameterised gradient (paper Eqs. 5-6), the
    optimiser's direction, a step of scale ``eta``.

    Args:
        target: what to fit; its ``data`` are read here (:func:`advi.algorithm` passes
            them as an argument of the jitted step, so they are never baked in).
        state: the current :class:`ADVIState`.
        rng_key: the key of this iteration (draws and minibatches).
        eta: step-size scale (float or () array).
        family: the variational family (:func:`advi.get_family`); must match the state's.
        optimizer: the optax transform (:func:`advi.get_optimizer`) whose state the
            state carries.
        grad_samples: M >= 1 draws per gradient.
        precondition: mean-field: scale mean updates by q's standard deviations
            (:func:`precondition_by_scale`); full-rank: natural-gradient steps in the
            coordinates whitened by q (:mod:`advi.whitening`), which need no per-coordinate
            scaling, so the optimiser is not used (its state is carried unchanged).
        with_elbo: also estimate the ELBO from the step's draws (``info.elbo``); False
            computes the log density's gradient only (:mod:`advi.elbo`).
        redraw: redraw non-finite draws (up to ``10 * M``); False: a step with a
            non-finite draw is refused, and the step has no loop inside
            (:func:`advi.elbo.elbo_grad`).
        eps: (M, K) standard normal draws for this step, or None: drawn from ``rng_key``
            (which keys the minibatches and any redraws either way).

    Returns:
        ``(new_state, info)``; a refused step (``info.ok`` False) returns the old state
        with ``failed`` set.
    """

    def log_density(zeta: Array, batch_key: Array) -> Array:
        return target.log_density_fn(zeta, batch_key, target.data)

    if precondition and family.name == "fullrank":  # natural-gradient steps, no optimiser
        est = whitened_elbo_grad(log_density, state.params, rng_key, grad_samples,
                                 with_elbo=with_elbo, redraw=redraw, eps=eps)
        params = whitened_step(state.params, est.grad, eta, grad_samples)
        opt_state = state.opt_state
    else:
        est = elbo_grad(log_density, family, state.params, rng_key, grad_samples,
                        with_elbo=with_elbo, redraw=redraw, eps=eps)
        updates, opt_state = optimizer.update(est.grad, state.opt_state, state.params)
        if precondition:
            updates = precondition_by_scale(family, state.params, updates)
        params = jax.tree.map(lambda p, u: p + eta * u, state.params, updates)
    ok = est.ok & jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))
    moved = ADVIState(params, opt_state, state.iteration + 1, jnp.zeros((), bool),
                      state.redraws + est.redraws)
    frozen = state._replace(failed=jnp.ones((), bool))
    new = jax.tree.map(lambda a, b: jnp.where(ok, a, b), moved, frozen)
    return new, StepInfo(est.elbo, est.redraws, ok)

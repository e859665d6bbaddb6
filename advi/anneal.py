"""A robust fit that its rule stopped short of its family's optimum continues at a smaller
step size.

At a constant step size the iterates of stochastic gradient ascent settle about a point
that is not the optimum where the objective is not quadratic, and their average carries
that bias, which shrinks with the step (Dieuleveut, Durmus & Bach 2020, Ann. Statist.
48(3)). The robust preset's stop by stationarity (:mod:`advi.stationarity`) fires there.
The end-of-fit gradient check (:mod:`advi.checks`) sees the bias: a few coordinates more
than :data:`advi.checks.GRAD_SHIFT` of q's sds from the optimum, far beyond their Monte
Carlo noise (a hierarchy's scale beside a thousand group effects). Where it does after a
stop by the rule (not ``max_iter``, not the checkpoint hook), the fit continues from its
iterate average at eta / :data:`ANNEAL_FACTOR`, with a new optimiser history and its
transient discarded, to its next stop within the same ``max_iter``; the result is the
continuation's, its history and counts joined to the first run's. Statistical tests decide
when to cut the step of stochastic gradient methods in the same way (Lang, Xiao & Zhang
2019, NeurIPS: SASA; Chee & Toulis 2018, AISTATS). Where q as a whole is far off
(:data:`advi.checks.STUCK_NOTE`) the fit runs again from its initial q instead
(:func:`advi.fit`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import jax.numpy as jnp
import numpy as np

from .begin import Begun
from .checks import GRADIENT_NOTE, STUCK_NOTE
from .options import Options
from .result import ADVIResult, ELBOHistory
from .stationarity import MIN_WINDOW_CHUNKS

logger = logging.getLogger("advi")

ANNEAL_FACTOR = 10.0
"""The continuation's eta is the first run's divided by this (the robust preset's restarts
divide it by as much); 1 or less: no continuation."""


def wanted(result: ADVIResult, o: Options) -> bool:
    """Whether ``result`` continues (module docstring; never where :data:`ANNEAL_FACTOR`
    is 1 or less): a stop by the stationarity rule (``o.stop == "rhat"``,
    ``result.converged``), a gradient warning on a few coordinates, and room in
    ``max_iter`` for a stationarity window (:data:`MIN_WINDOW_CHUNKS` chunks of
    ``eval_elbo``) and its burn-in."""
    flagged = [w for w in result.warnings if w.startswith(GRADIENT_NOTE)]
    room = o.max_iter - result.num_iterations >= 2 * MIN_WINDOW_CHUNKS * o.eval_elbo
    return (ANNEAL_FACTOR > 1 and o.stop == "rhat" and result.converged and room
            and bool(flagged) and not any(w.startswith(STUCK_NOTE) for w in flagged))


def continued(begun: Begun, result: ADVIResult, o: Options) -> tuple[Begun, Options]:
    """``begun`` from ``result``'s q (a new optimiser history; the iteration and redraw
    counts go on), its transient to be discarded (``scaled`` False), its times continuing
    ``result``'s; and ``o`` at the smaller eta."""
    state = begun.compiled.initial_state(result.params)._replace(
        iteration=jnp.asarray(result.num_iterations, jnp.int32),
        redraws=jnp.asarray(result.redraws, jnp.int32))
    eta = float(result.eta) / ANNEAL_FACTOR
    logger.info("the ELBO's gradient puts a few coordinates far from the optimum after %d "
                "iterations: the fit continues at eta %g", result.num_iterations, eta)
    origin = begun.origin if begun.origin is not None else begun.state0.params.mu
    again = begun._replace(state0=state, start_info=begun.start_info._replace(scaled=False),
                           compile_s=result.compile_s, start_s=result.wall_s, origin=origin)
    return again, o.replace(eta=eta)


def joined(first: ADVIResult, second: ADVIResult) -> ADVIResult:
    """The continuation ``second`` with ``first``'s history and restarts before its own,
    and ``first``'s adapt seconds."""
    columns: list[Any] = [None if a is None or b is None else np.concatenate([a, b])
                          for a, b in zip(first.elbo_history, second.elbo_history,
                                          strict=True)]
    history = ELBOHistory(*columns)
    return dataclasses.replace(second, elbo_history=history, adapt_s=first.adapt_s,
                               restarts=(*first.restarts, *second.restarts))


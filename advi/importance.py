"""Importance log weights of a fitted q for Pareto k-hat (``ADVIResult.pareto_khat``):
log p(zeta_s) - log q(zeta_s) at ``khat_samples`` draws zeta_s ~ q, drawn on first access.

Where the fit has the ELBO's program compiled (the Stan preset's loop compiles it), its
batches of ``elbo_samples`` draws give them. Elsewhere (the robust preset estimates its
ELBO on the host, :mod:`advi.chunk`) that program would be compiled for them alone, which
took about a second on a two-parameter model whose whole fit took less; there the draws
are evaluated one at a time by the compiled value and gradient the fit already has, where
``khat_samples`` such calls cost less than compiling a program by XLA's estimate
(:func:`advi.curvature.calls_suffice`, the rule the Laplace start's differences follow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import Array

from .aot import Lazy
from .check_draws import host_draws
from .curvature import calls_suffice
from .families import host_standard_normal

KHAT_SALT = 0x6B68
"""Seeds, with the fit's ELBO key, the draws of the host's log weights."""


def by_calls(value_and_grad: Callable, elbo: Lazy, params: Any, rng_key: Array, n: int,
             keyed: Any) -> np.ndarray | None:
    """log p - log q (n,) float64 at n draws of q (``params``, mean-field or full-rank) from
    ``rng_key`` and :data:`KHAT_SALT`, by ``value_and_grad(zeta (K,), keyed) -> (log p,
    grad)`` one draw at a time, every draw dispatched before the first wait (non-finite
    log p gives a non-finite weight); None where ``elbo`` (the ELBO's :class:`advi.aot.Lazy`
    program) is compiled already or n calls would cost more than compiling it."""
    if elbo.compiled is not None or not calls_suffice(value_and_grad, n):
        return None
    eps = host_standard_normal(rng_key, (n, params.mu.shape[-1]), params.mu.dtype, KHAT_SALT)
    zeta, _, log_q = host_draws(params, eps)
    values = jax.device_get([value_and_grad(row, keyed)[0] for row in zeta])
    with np.errstate(invalid="ignore"):
        return np.asarray(values, np.float64) - log_q


def khat_weights(compiled: Any, params: Any, elbo_key: Array, khat_samples: int
                 ) -> Callable[[], np.ndarray] | None:
    """A function drawing the log weights ((khat_samples,) float) of the module docstring
    from the fit's :class:`advi.compiled.CompiledADVI` at ``params``, or None (skipped:
    ``khat_samples`` 0, or minibatched, whose log p is a minibatch estimate)."""
    if khat_samples == 0 or compiled.target.num_data is not None:
        return None

    def log_weights() -> np.ndarray:
        weights = compiled.log_weights_by_calls(params, elbo_key, khat_samples)
        if weights is not None:
            return weights
        calls = -(-khat_samples // compiled.elbo_samples)
        return np.concatenate(
            [compiled.elbo(params, elbo_key, -1 - i)[1] for i in range(calls)]
        )[:khat_samples]

    return log_weights

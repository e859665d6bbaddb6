"""The paper's adaptive step-size sequence as an optax ``GradientTransformation``.

Appendix E of the paper, as Stan implements it (``stan/variational/advi.hpp``)::

    rho_k = eta * k^(-1/2 + eps) / (tau + sqrt(s_k)),
    s_1 = g_1^2,   s_k = alpha * g_k^2 + (1 - alpha) * s_{k-1},

with alpha = 0.1, tau = 1 and eps = 0 (Stan's choice, kept here as the default; the paper's
text allows a small eps > 0 for its convergence proof). ``eta`` is *not* part of the
transform: the transform returns ``rho_k / eta * g_k`` and the ADVI loop multiplies by
``eta``, a run-time argument, so one compiled loop serves the eta search and the main run.
Any optax transform with a unit learning rate can be swapped in the same way
(:func:`get_optimizer`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array


class StanStepSizeState(NamedTuple):
    """State of :func:`scale_by_stan_step_size`.

    Attributes:
        count: () int32, the number of updates done so far (k - 1 before the k-th update).
        s: pytree like the parameters, float, the weighted running mean of squared gradients.
    """

    count: Array  # type: ignore[assignment]  # optax's name for it (ScaleByAdamState)
    s: optax.Updates


def scale_by_stan_step_size(
    *, tau: float = 1.0, alpha: float = 0.1, eps: float = 0.0
) -> optax.GradientTransformation:
    """Scale gradients by Stan's ADVI step-size sequence, without the factor eta.

    Returns ``g_k * k^(-1/2 + eps) / (tau + sqrt(s_k))`` for the k-th update (k = 1, 2, ...),
    with s as in the module docstring (paper Appendix E; Stan's ``advi::stochastic_gradient_
    ascent``). Sign is preserved: feed it the gradient you want to follow.

    Args:
        tau: positive float, the offset that keeps the step bounded when s_k is small.
        alpha: weight in (0, 1] of the newest squared gradient.
        eps: exponent offset in [0, 1/2).

    Raises:
        ValueError: for tau <= 0, alpha outside (0, 1], or eps outside [0, 0.5).
    """
    if not tau > 0:
        raise ValueError(f"tau={tau} must be positive")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha={alpha} must lie in (0, 1]")
    if not 0 <= eps < 0.5:
        raise ValueError(f"eps={eps} must lie in [0, 0.5)")

    def init_fn(params: optax.Params) -> StanStepSizeState:
        return StanStepSizeState(
            count=jnp.zeros((), jnp.int32), s=jax.tree.map(jnp.zeros_like, params)
        )

    def update_fn(updates, state, params=None):
        del params
        first = state.count == 0
        s = jax.tree.map(
            lambda g, s: jnp.where(first, g**2, alpha * g**2 + (1.0 - alpha) * s),
            updates,
            state.s,
        )
        k = (state.count + 1).astype(jnp.result_type(float))
        decay = k ** (-0.5 + eps)
        scaled = jax.tree.map(lambda g, s_: decay * g / (tau + jnp.sqrt(s_)), updates, s)
        return scaled, StanStepSizeState(count=state.count + 1, s=s)

    return optax.GradientTransformation(init_fn, update_fn)


OPTIMIZERS = ("stan", "adam", "rmsprop", "adagrad", "sgd")

_SPEC = re.compile(r"^\s*(\w+)\s*(?:\((.*)\))?\s*$")


def get_optimizer(name: str | optax.GradientTransformation) -> optax.GradientTransformation:
    """An optimiser with unit learning rate, by name or as given.

    ``"stan"`` is :func:`scale_by_stan_step_size` (the paper's sequence); ``"adam"``,
    ``"rmsprop"``, ``"adagrad"`` are optax's ``scale_by_adam``, ``scale_by_rms``,
    ``scale_by_rss``; ``"sgd"`` is the identity. Each named one runs on the parameters
    raveled into one vector (``optax.flatten``): the same elementwise arithmetic, in one
    array operation where a per-leaf state took one per leaf (about a tenth of a small
    model's chunk to compile: benchmarks/README.md). A name may carry numeric keyword
    arguments of its factory, e.g. ``"adam(b2=0.99)"`` (a string, so that it can key the
    cache of compiled functions as a preset's value). The ADVI loop multiplies the result
    by eta.

    Raises:
        ValueError: for an unknown name, or arguments that are not ``key=number`` pairs
            the factory accepts.
    """
    if isinstance(name, optax.GradientTransformation):
        return name
    factories = {
        "stan": scale_by_stan_step_size,
        "adam": optax.scale_by_adam,
        "rmsprop": optax.scale_by_rms,
        "adagrad": optax.scale_by_rss,
        "sgd": optax.identity,
    }
    match = _SPEC.match(name) if isinstance(name, str) else None
    if match is None or match.group(1) not in factories:
        raise ValueError(f"optimizer={name!r} is unknown; use one of {OPTIMIZERS}, optionally "
                         "with numeric arguments as in 'adam(b2=0.99)', or an optax transform")
    kwargs = _spec_arguments(name, match.group(2))
    try:
        return optax.flatten(factories[match.group(1)](**kwargs))
    except TypeError as err:
        raise ValueError(f"optimizer={name!r}: {err}") from None


def _spec_arguments(name: str, text: str | None) -> dict[str, float]:
    """``"b1=0.9, b2=0.99"`` -> ``{"b1": 0.9, "b2": 0.99}``; ValueError naming ``name``."""
    kwargs: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        try:
            if not (sep and key.isidentifier()):
                raise ValueError
            kwargs[key] = float(value)
        except ValueError:
            raise ValueError(f"optimizer={name!r}: {item!r} is not a key=number argument"
                             ) from None
    return kwargs

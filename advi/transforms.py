"""The transform T of paper Section 2.2 for every NumPyro constraint.

T^-1 maps R^K onto a site's support. NumPyro's ``biject_to(support)`` is used for every
support except those where its bijection is badly behaved from a generic initial q:

- ``positive_ordered_vector``: NumPyro maps zeta to exp of an ordered vector,
  theta_k = exp(zeta_1 + sum_{1 < j <= k} exp(zeta_j)), which is doubly exponential: a draw of
  q with standard deviation ~1 overflows (measurements: benchmarks/README.md, "Measurements
  behind the library's defaults"). The library uses Stan's transform instead (Stan
  Reference Manual, "Positive ordered vector"): theta_k = sum_{j <= k} exp(zeta_j),
  :class:`CumulativeExp`.

:func:`unconstraining_transform` is the one place that chooses; :mod:`advi.target` builds
the log density and the constraining map from it, so a model never needs its own transform.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from numpyro.distributions import constraints
from numpyro.distributions.transforms import (
    IndependentTransform,
    ParameterFreeTransform,
    Transform,
    biject_to,
)


class CumulativeExp(ParameterFreeTransform):
    """Stan's positive-ordered transform: theta_k = sum_{j <= k} exp(zeta_j).

    Maps (..., K) reals onto 0 < theta_1 < ... < theta_K. log|det J| = sum_k zeta_k (the
    Jacobian is lower triangular with diagonal exp(zeta_k)). A transform without
    parameters, a JAX pytree with no leaves, as NumPyro's own ``ExpTransform``: NumPyro
    registers every ``Transform`` subclass as a pytree when it is defined, and before 0.22
    that needs the ``tree_flatten`` that ``ParameterFreeTransform`` gives.
    """

    domain = constraints.real_vector
    codomain = constraints.positive_ordered_vector

    def __call__(self, x: jax.Array) -> jax.Array:
        return jnp.cumsum(jnp.exp(x), axis=-1)

    def _inverse(self, y: jax.Array) -> jax.Array:
        return jnp.log(jnp.concatenate([y[..., :1], jnp.diff(y, axis=-1)], axis=-1))

    def log_abs_det_jacobian(
        self, x: jax.Array, y: jax.Array, intermediates: object = None
    ) -> jax.Array:
        return jnp.sum(x, axis=-1)


def unconstraining_transform(support: constraints.Constraint) -> Transform:
    """The bijection from R^K onto ``support`` that ADVI uses (T^-1 of paper Section 2.2).

    Args:
        support: a NumPyro constraint (a site's ``fn.support``).

    Returns:
        :class:`CumulativeExp` for ``positive_ordered_vector`` (and its subclasses, and
        ``independent`` wrappers of them, as ``ImproperUniform`` makes),
        ``numpyro.distributions.transforms.biject_to(support)`` otherwise.

    Raises:
        ValueError: for a discrete support (no bijection onto R^K exists), naming it.
        NotImplementedError: from ``biject_to`` for a support NumPyro has no bijection for.
    """
    if support.is_discrete:
        raise ValueError(f"support {support!r} is discrete: ADVI needs continuous latents")
    if isinstance(support, type(constraints.positive_ordered_vector)):
        return CumulativeExp()
    if isinstance(support, constraints.independent):
        base = unconstraining_transform(support.base_constraint)
        if isinstance(base, CumulativeExp):
            return IndependentTransform(base, support.reinterpreted_batch_ndims)
    return biject_to(support)

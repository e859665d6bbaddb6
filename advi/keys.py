"""The PRNG keys :func:`advi.fit` takes.

Its functions are compiled ahead of time for a raw threefry key (``jax.random.PRNGKey``,
uint32 of shape (2,)); a typed key (``jax.random.key``, JAX's recommended form) of the same
implementation holds the same two words (``jax.random.key_data``), so it fits exactly as
its raw key does.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import Array


def raw_key(rng_key: Any) -> Array:
    """``rng_key`` as the raw threefry key (uint32, shape (2,)) the compiled functions take:
    a typed key (``jax.random.key(seed)``) of JAX's default implementation is unwrapped
    (``jax.random.key_data``), a raw key (``jax.random.PRNGKey(seed)``) passes as it is.

    Raises:
        ValueError: naming the value, for anything else (an int seed, a batch of keys,
            another PRNG implementation).
    """
    if not (hasattr(rng_key, "dtype") and hasattr(rng_key, "shape")) or isinstance(
        rng_key, (int, np.integer)
    ):
        raise ValueError(
            f"rng_key={rng_key!r} is not a JAX PRNG key; pass jax.random.PRNGKey(seed) "
            "(or jax.random.key(seed))"
        )
    if jax.dtypes.issubdtype(rng_key.dtype, jax.dtypes.prng_key):
        impl = str(jax.random.key_impl(rng_key))
        if impl != "threefry2x32" or rng_key.shape != ():
            raise ValueError(
                f"rng_key is a key of shape {rng_key.shape} of the {impl!r} PRNG; pass one "
                "key of JAX's default 'threefry2x32' (jax.random.key(seed))")
        rng_key = jax.random.key_data(rng_key)
    if rng_key.shape != (2,) or rng_key.dtype != np.uint32:
        raise ValueError(
            f"rng_key has shape {rng_key.shape} and dtype {rng_key.dtype}; pass one raw key "
            "of shape (2,) and dtype uint32 (jax.random.PRNGKey(seed)) or a typed key "
            "(jax.random.key(seed))")
    return rng_key

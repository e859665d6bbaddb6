"""Minibatching (paper Section 2.6): the model declares its observation axis with
``numpyro.plate(name, N)`` and indexes its data with the plate's indices. The data plate is
the model's only plate, whatever its name; a model with several plates names it with
``minibatch_plate`` (by default the plate called "data"). With ``minibatch_size=B`` the
plate is handed B indices drawn uniformly *with replacement* (O(B) work per draw, unbiased
for the full-data likelihood; NumPyro's own without-replacement subsample costs O(N) per
draw), and NumPyro scales the plate's log likelihood by N/B.

:func:`data_plate` picks the plate, :func:`seeder` seeds the model with that plate
subsampled (:class:`subsample_plate`), and :func:`check_minibatch_size` refuses a bad B
before any tracing; :func:`advi.target.from_numpyro` calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import Array
from numpyro.handlers import seed
from numpyro.primitives import Messenger


class subsample_plate(Messenger):
    """Hand the plate called ``name`` B indices drawn with replacement from range(N)."""

    def __init__(self, fn: Callable, name: str, size: int, rng_key: Array | None) -> None:
        self.name, self.size, self.rng_key = name, size, rng_key
        super().__init__(fn)

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] != "plate" or msg["name"] != self.name:
            return
        num_data = int(msg["args"][0])
        key = self.rng_key if self.rng_key is not None else jax.random.PRNGKey(0)
        msg["args"] = (num_data, self.size)
        msg["value"] = jax.random.randint(key, (self.size,), 0, num_data)


def data_plate(plates: dict[str, int], minibatch_plate: str | None, size: int) -> str:
    """The plate to subsample: the named one, else the only one, else the one called "data".

    Raises:
        ValueError: naming the plates found when none fits, and naming B and N when B > N.
    """
    if minibatch_plate is None:
        found = list(plates) if len(plates) == 1 else [p for p in plates if p == "data"]
        if not found:
            raise ValueError(
                f"minibatch_size={size} needs the model's data plate, but the model has "
                f"{len(plates)} plates {sorted(plates)}; pass minibatch_plate=<one of them>"
            )
        minibatch_plate = found[0]
    elif minibatch_plate not in plates:
        raise ValueError(
            f"minibatch_size={size} was given but the model has no plate named "
            f"{minibatch_plate!r} (its plates: {sorted(plates)}); declare the observation "
            f"axis with numpyro.plate({minibatch_plate!r}, N) or name one of its plates"
        )
    num_data = plates[minibatch_plate]
    if size > num_data:
        raise ValueError(
            f"minibatch_size={size} is larger than the number of data points N={num_data} "
            f"in plate {minibatch_plate!r}; use 1 <= minibatch_size <= {num_data}"
        )
    return minibatch_plate


def check_minibatch_size(minibatch_size: Any) -> None:
    """Refuse a ``minibatch_size`` that is neither None nor an integer >= 1.

    Raises:
        ValueError: naming the value and what is valid.
    """
    if minibatch_size is None:
        return
    if isinstance(minibatch_size, bool) or not isinstance(minibatch_size, (int, np.integer)):
        raise ValueError(f"minibatch_size={minibatch_size!r} must be an integer >= 1 or None")
    if minibatch_size < 1:
        raise ValueError(f"minibatch_size={minibatch_size} must be >= 1 (or None for all data)")


def seeder(model: Callable, plate: str | None, minibatch_size: int | None
            ) -> Callable[[Array | None], Callable]:
    """``seeded(rng_key)``: the model seeded with ``rng_key`` (None: key 0), its data plate
    ``plate`` (if any) subsampled to ``minibatch_size`` indices drawn with that key."""
    def seeded(rng_key: Array | None) -> Callable:
        key = jax.random.PRNGKey(0) if rng_key is None else rng_key
        if plate is None or minibatch_size is None:
            return seed(model, key)
        return seed(subsample_plate(model, plate, minibatch_size, rng_key), key)

    return seeded
